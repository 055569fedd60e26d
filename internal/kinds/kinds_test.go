package kinds

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		got      func() (string, string, error)
		gvk, gvr string
	}{
		{wrap(Of[*corev1.Pod]), "/v1, Kind=Pod", "/v1, Resource=pods"},
		{wrap(Of[*corev1.Endpoints]), "/v1, Kind=Endpoints", "/v1, Resource=endpoints"},
		{wrap(Of[*appsv1.Deployment]), "apps/v1, Kind=Deployment", "apps/v1, Resource=deployments"},
		{wrap(Of[*networkingv1.Ingress]), "networking.k8s.io/v1, Kind=Ingress", "networking.k8s.io/v1, Resource=ingresses"},
		{wrap(Of[*networkingv1.NetworkPolicy]), "networking.k8s.io/v1, Kind=NetworkPolicy", "networking.k8s.io/v1, Resource=networkpolicies"},
		{wrap(Of[*rbacv1.ClusterRole]), "rbac.authorization.k8s.io/v1, Kind=ClusterRole", "rbac.authorization.k8s.io/v1, Resource=clusterroles"},
	} {
		gvk, gvr, err := tc.got()
		require.NoError(t, err)
		assert.Equal(t, tc.gvk, gvk)
		assert.Equal(t, tc.gvr, gvr)
	}
	_, _, err := Of[*unstructured.Unstructured]()
	assert.ErrorContains(t, err, "not a k8s.io/api type")
}

func wrap[A, B interface{ String() string }](f func() (A, B, error)) func() (string, string, error) {
	return func() (string, string, error) {
		a, b, err := f()
		return a.String(), b.String(), err
	}
}

func TestFields(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	set := Fields(pod)
	assert.Equal(t, "n1", set["spec.nodeName"])
	assert.Equal(t, "ns", set["metadata.namespace"])
	for _, label := range FieldLabels(schema.GroupResource{Resource: "pods"}) {
		assert.True(t, set.Has(label), "a value for every label pods are selected by: %s", label)
	}
	assert.Equal(t, []string{"metadata.name", "metadata.namespace"}, FieldLabels(schema.GroupResource{Group: "apps", Resource: "deployments"}))
	node := Fields(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{Unschedulable: true}})
	assert.Equal(t, "true", node["spec.unschedulable"])
}
