package strategy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The n-th condition of a type the request sends without an
// observedGeneration takes the n-th stored one's; conditions with one, or
// of a type the stored status lacks, keep theirs.
func TestPodConditionsKeepTheirObservedGeneration(t *testing.T) {
	old := &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, ObservedGeneration: 3},
		{Type: corev1.PodScheduled, ObservedGeneration: 1},
		{Type: corev1.PodReady, ObservedGeneration: 4},
	}}}
	obj := &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady},
		{Type: corev1.PodReady, ObservedGeneration: 7},
		{Type: corev1.PodReady},
		{Type: corev1.ContainersReady},
	}}}
	KeepOnStatusUpdate(obj, old)
	var gens []int64
	for _, c := range obj.Status.Conditions {
		gens = append(gens, c.ObservedGeneration)
	}
	assert.Equal(t, []int64{3, 7, 0, 0}, gens)
}

// A v1beta1 CertificateSigningRequest keeps its spec as a v1 one does;
// objects of other kinds are left alone.
func TestKeepOnUpdate(t *testing.T) {
	old := &certificatesv1beta1.CertificateSigningRequest{Spec: certificatesv1beta1.CertificateSigningRequestSpec{Username: "alice"}}
	obj := &certificatesv1beta1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"x": "y"}},
		Spec: certificatesv1beta1.CertificateSigningRequestSpec{Username: "mallory"}}
	KeepOnUpdate(obj, old)
	assert.Equal(t, "alice", obj.Spec.Username)
	assert.Equal(t, "y", obj.Labels["x"])

	cm := &corev1.ConfigMap{Data: map[string]string{"a": "1"}}
	KeepOnUpdate(cm, &corev1.ConfigMap{})
	KeepOnStatusUpdate(cm, &corev1.ConfigMap{})
	assert.Equal(t, map[string]string{"a": "1"}, cm.Data)
}

// An APIService's status strategy (kube-aggregator's) keeps the stored
// labels, annotations, finalizers and ownerReferences.
func TestStatusMetaOfAnAPIService(t *testing.T) {
	keep := StatusMeta(schema.GroupKind{Group: "apiregistration.k8s.io", Kind: "APIService"})
	if !assert.NotNil(t, keep) {
		return
	}
	old := &metav1.ObjectMeta{Labels: map[string]string{"a": "b"}, Finalizers: []string{"f"}}
	obj := &metav1.ObjectMeta{Labels: map[string]string{"a": "c"}, Annotations: map[string]string{"x": "y"}}
	keep(obj, old)
	assert.Equal(t, map[string]string{"a": "b"}, obj.Labels)
	assert.Nil(t, obj.Annotations)
	assert.Equal(t, []string{"f"}, obj.Finalizers)
}

// A CertificateSigningRequest's status write keeps the stored Approved and
// Denied conditions, instance by instance, where the request has as many
// of the type (csrStatusStrategy's preserveConditionInstances); where it
// has more or fewer, it keeps the request's (kube-apiserver's validation
// then refuses it). Other conditions are the request's. v1beta1 alike.
func TestCSRStatusKeepsApprovalConditions(t *testing.T) {
	approved := certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Admin"}
	old := &certificatesv1.CertificateSigningRequest{Status: certificatesv1.CertificateSigningRequestStatus{
		Conditions: []certificatesv1.CertificateSigningRequestCondition{approved}}}
	obj := &certificatesv1.CertificateSigningRequest{Status: certificatesv1.CertificateSigningRequestStatus{
		Certificate: []byte("cert"),
		Conditions: []certificatesv1.CertificateSigningRequestCondition{
			{Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue},
			{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionFalse, Reason: "Changed"},
		}}}
	KeepOnStatusUpdate(obj, old)
	assert.Equal(t, []certificatesv1.CertificateSigningRequestCondition{
		{Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue}, approved}, obj.Status.Conditions)
	assert.Equal(t, []byte("cert"), obj.Status.Certificate)

	added := &certificatesv1.CertificateSigningRequest{Status: certificatesv1.CertificateSigningRequestStatus{
		Conditions: []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue}}}}
	KeepOnStatusUpdate(added, &certificatesv1.CertificateSigningRequest{})
	assert.Equal(t, certificatesv1.CertificateDenied, added.Status.Conditions[0].Type, "more than stored: the request's")

	oldBeta := &certificatesv1beta1.CertificateSigningRequest{Status: certificatesv1beta1.CertificateSigningRequestStatus{
		Conditions: []certificatesv1beta1.CertificateSigningRequestCondition{{Type: certificatesv1beta1.CertificateDenied, Reason: "No"}}}}
	objBeta := &certificatesv1beta1.CertificateSigningRequest{Status: certificatesv1beta1.CertificateSigningRequestStatus{
		Conditions: []certificatesv1beta1.CertificateSigningRequestCondition{{Type: certificatesv1beta1.CertificateDenied, Reason: "Yes"}}}}
	KeepOnStatusUpdate(objBeta, oldBeta)
	assert.Equal(t, "No", objBeta.Status.Conditions[0].Reason)
}

// A write to a CertificateSigningRequest's approval keeps the stored
// status but the conditions, which are the request's.
func TestKeepOnApproval(t *testing.T) {
	old := &certificatesv1.CertificateSigningRequest{Status: certificatesv1.CertificateSigningRequestStatus{Certificate: []byte("cert")}}
	denied := []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue}}
	obj := &certificatesv1.CertificateSigningRequest{Status: certificatesv1.CertificateSigningRequestStatus{Conditions: denied}}
	KeepOnApproval(obj, old)
	assert.Equal(t, certificatesv1.CertificateSigningRequestStatus{Certificate: []byte("cert"), Conditions: denied}, obj.Status)
}

func TestGenerateNameBase(t *testing.T) {
	long := strings.Repeat("a", 70)
	assert.Equal(t, long[:58], GenerateNameBase(long))
	assert.Equal(t, "web-", GenerateNameBase("web-"))
	assert.Equal(t, long[:58], GenerateNameBase(long[:58]))
}
