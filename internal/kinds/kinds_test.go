package kinds

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
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
	assert.Equal(t, "false", set["spec.hostNetwork"])
	node := Fields(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{Unschedulable: true}})
	assert.Equal(t, "true", node["spec.unschedulable"])

	// status.podIP is the first of status.podIPs, as kube-apiserver has it.
	pod.Status.PodIP = "10.0.0.9"
	assert.Empty(t, Fields(pod)["status.podIP"])
	pod.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "fd00::1"}}
	assert.Equal(t, "10.0.0.1", Fields(pod)["status.podIP"])

	event := Fields(&corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web"}, ReportingController: "kubelet", Type: "Warning"})
	assert.Equal(t, "web", event["involvedObject.name"])
	assert.Equal(t, "kubelet", event["source"], "source is the reporting controller without a source component")
	newEvent := Fields(&eventsv1.Event{Regarding: corev1.ObjectReference{Name: "web"}, Reason: "Failed"})
	assert.Equal(t, "web", newEvent["involvedObject.name"])
	assert.Equal(t, "Failed", newEvent["reason"])
	assert.Equal(t, "LoadBalancer", Fields(&corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}})["spec.type"])
	assert.Equal(t, "2", Fields(&corev1.ReplicationController{Status: corev1.ReplicationControllerStatus{Replicas: 2}})["status.replicas"])
	assert.Equal(t, "3", Fields(&batchv1.Job{Status: batchv1.JobStatus{Succeeded: 3}})["status.successful"])

	// Every label a resource is selected by names a field its objects
	// have (status.podIPs is accepted and matches nothing, as on the
	// server).
	for gr, obj := range map[schema.GroupResource]metav1.Object{
		{Resource: "pods"}:                           &corev1.Pod{},
		{Resource: "nodes"}:                          &corev1.Node{},
		{Resource: "replicationcontrollers"}:         &corev1.ReplicationController{},
		{Resource: "events"}:                         &corev1.Event{},
		{Group: "events.k8s.io", Resource: "events"}: &eventsv1.Event{},
		{Resource: "namespaces"}:                     &corev1.Namespace{},
		{Resource: "secrets"}:                        &corev1.Secret{},
		{Resource: "services"}:                       &corev1.Service{},
		{Group: "batch", Resource: "jobs"}:           &batchv1.Job{},
		{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}: &certificatesv1.CertificateSigningRequest{},
		{Group: "apps", Resource: "deployments"}:                               &appsv1.Deployment{},
	} {
		set := Fields(obj)
		labels := fieldLabels[gr]
		if labels == nil {
			labels = defaultFieldLabels
		}
		for label := range labels {
			field, _, err := ConvertFieldLabel(gr, label, "")
			require.NoError(t, err)
			if label != "status.podIPs" {
				assert.True(t, set.Has(field), "%v: a value for %s (%s)", gr, label, field)
			}
		}
	}
}

func TestConvertFieldLabel(t *testing.T) {
	for _, c := range []struct {
		gr           schema.GroupResource
		label, field string // field "": refused
	}{
		{schema.GroupResource{Resource: "pods"}, "spec.nodeName", "spec.nodeName"},
		{schema.GroupResource{Resource: "pods"}, "spec.host", "spec.nodeName"},
		{schema.GroupResource{Resource: "pods"}, "spec.nodename", ""},
		{schema.GroupResource{Resource: "events"}, "involvedObject.name", "involvedObject.name"},
		{schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, "regarding.name", "involvedObject.name"},
		{schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, "involvedObject.name", ""},
		{schema.GroupResource{Resource: "nodes"}, "metadata.namespace", ""},
		{schema.GroupResource{Resource: "services"}, "spec.type", "spec.type"},
		{schema.GroupResource{Group: "apps", Resource: "deployments"}, "metadata.namespace", "metadata.namespace"},
		{schema.GroupResource{Group: "apps", Resource: "deployments"}, "spec.replicas", ""},
	} {
		field, value, err := ConvertFieldLabel(c.gr, c.label, "v")
		if c.field == "" {
			assert.EqualError(t, err, "field label not supported: "+c.label, "%v %s", c.gr, c.label)
			continue
		}
		if assert.NoError(t, err, "%v %s", c.gr, c.label) {
			assert.Equal(t, c.field, field)
			assert.Equal(t, "v", value)
		}
	}
}

// Every resource with field labels of its own has a model type, into
// which FieldsOf reads an unstructured object of it; the fields the model
// computes are the ones its labels convert to (but status.podIPs, which
// the server takes and matches as empty).
func TestFieldsOf(t *testing.T) {
	for gr, labels := range fieldLabels {
		require.Contains(t, models, gr)
		set := Fields(models[gr]())
		for label, field := range labels {
			if field == "status.podIPs" {
				continue
			}
			assert.Contains(t, set, field, "%v %s", gr, label)
			assert.True(t, Selects(gr, field), "%v %s", gr, field)
		}
	}

	pods := schema.GroupResource{Resource: "pods"}
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "p"},
		"spec":     map[string]any{"nodeName": "n1"},
		"status":   map[string]any{"podIPs": []any{map[string]any{"ip": "10.0.0.2"}}},
	}}
	set, err := FieldsOf(pods, u)
	require.NoError(t, err)
	assert.Equal(t, "n1", set["spec.nodeName"])
	assert.Equal(t, "10.0.0.2", set["status.podIP"])
	assert.Equal(t, "false", set["spec.hostNetwork"])

	u.Object["spec"] = map[string]any{"nodeName": int64(3)}
	_, err = FieldsOf(pods, u)
	assert.Error(t, err, "not a pod the server would have stored")

	set, err = FieldsOf(schema.GroupResource{Group: "example.com", Resource: "widgets"}, u)
	require.NoError(t, err)
	assert.Equal(t, "p", set["metadata.name"])
	assert.NotContains(t, set, "spec.nodeName")
	assert.False(t, Selects(pods, "spec.replicas"))
	assert.True(t, Selects(schema.GroupResource{Group: "apps", Resource: "deployments"}, "metadata.namespace"))
}
