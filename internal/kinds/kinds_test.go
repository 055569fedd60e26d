package kinds

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/inf.v0"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	lifecyclev1alpha1 "k8s.io/api/lifecycle/v1alpha1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
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

	// status.podIP is the first of status.podIPs of the internal object,
	// as kube-apiserver has it, which its conversion from v1 makes
	// status.podIP when that is set (authoritative, for older clients).
	pod.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "fd00::1"}}
	assert.Equal(t, "10.0.0.1", Fields(pod)["status.podIP"])
	pod.Status.PodIP = "10.0.0.9"
	assert.Equal(t, "10.0.0.9", Fields(pod)["status.podIP"])

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
	deployments := schema.GroupResource{Group: "apps", Resource: "deployments"}
	assert.True(t, Selects(deployments, "metadata.namespace"))
	assert.False(t, Selects(deployments, "spec.replicas"), "a resource without labels of its own selects by metadata alone")
}

// Of knows the groups whose name is not the k8s.io/api directory followed
// by ".k8s.io", and refuses what is not a struct type of a k8s.io/api
// version package: a named string of one (PodPhase), and a struct of a
// package whose path has the same two-part shape outside k8s.io/api.
func TestOfGroupsAndRefusals(t *testing.T) {
	for _, tc := range []struct {
		got      func() (string, string, error)
		gvk, gvr string
	}{
		{wrap(Of[*batchv1.Job]), "batch/v1, Kind=Job", "batch/v1, Resource=jobs"},
		{wrap(Of[*policyv1.PodDisruptionBudget]), "policy/v1, Kind=PodDisruptionBudget", "policy/v1, Resource=poddisruptionbudgets"},
		{wrap(Of[*autoscalingv2.HorizontalPodAutoscaler]), "autoscaling/v2, Kind=HorizontalPodAutoscaler", "autoscaling/v2, Resource=horizontalpodautoscalers"},
		{wrap(Of[*flowcontrolv1.FlowSchema]), "flowcontrol.apiserver.k8s.io/v1, Kind=FlowSchema", "flowcontrol.apiserver.k8s.io/v1, Resource=flowschemas"},
		{wrap(Of[*apiserverinternalv1alpha1.StorageVersion]), "internal.apiserver.k8s.io/v1alpha1, Kind=StorageVersion", "internal.apiserver.k8s.io/v1alpha1, Resource=storageversions"},
		{wrap(Of[*certificatesv1.CertificateSigningRequest]), "certificates.k8s.io/v1, Kind=CertificateSigningRequest", "certificates.k8s.io/v1, Resource=certificatesigningrequests"},
	} {
		gvk, gvr, err := tc.got()
		require.NoError(t, err)
		assert.Equal(t, tc.gvk, gvk)
		assert.Equal(t, tc.gvr, gvr)
	}

	_, _, err := Of[corev1.PodPhase]()
	assert.ErrorContains(t, err, "not a k8s.io/api type", "a string type of core/v1")
	_, _, err = Of[*inf.Dec]() // package gopkg.in/inf.v0
	assert.ErrorContains(t, err, "not a k8s.io/api type")

	assert.Equal(t, "jobs", Name[*batchv1.Job]())
	assert.Equal(t, "objects", Name[*unstructured.Unstructured]())
}

// The labels each resource takes are exactly those of kube-apiserver's
// field label conversion functions (pkg/apis/core/v1/conversion.go and the
// others): a label the server refuses is refused here, and one it takes
// is never refused.
func TestFieldLabelsAreTheServers(t *testing.T) {
	meta := func(more ...string) []string { return append([]string{"metadata.name", "metadata.namespace"}, more...) }
	for gr, want := range map[schema.GroupResource][]string{
		{Resource: "pods"}: meta("spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
			"spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs",
			"status.nominatedNodeName", "spec.host"),
		{Resource: "nodes"}:                  {"metadata.name", "spec.unschedulable"},
		{Resource: "replicationcontrollers"}: meta("status.replicas"),
		{Resource: "events"}: meta("involvedObject.kind", "involvedObject.namespace",
			"involvedObject.name", "involvedObject.uid", "involvedObject.apiVersion",
			"involvedObject.resourceVersion", "involvedObject.fieldPath", "reason", "reportingComponent",
			"source", "type"),
		{Group: "events.k8s.io", Resource: "events"}: meta("regarding.kind", "regarding.namespace",
			"regarding.name", "regarding.uid", "regarding.apiVersion", "regarding.resourceVersion",
			"regarding.fieldPath", "reportingController", "reason", "type"),
		{Resource: "namespaces"}:           {"metadata.name", "status.phase"},
		{Resource: "secrets"}:              meta("type"),
		{Resource: "services"}:             meta("spec.clusterIP", "spec.type"),
		{Group: "batch", Resource: "jobs"}: meta("status.successful"),
		{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}: {"metadata.name", "spec.signerName"},
		{Group: "certificates.k8s.io", Resource: "clustertrustbundles"}:        {"metadata.name", "spec.signerName"},
		{Group: "certificates.k8s.io", Resource: "podcertificaterequests"}: {"metadata.name", "spec.signerName",
			"spec.podName", "spec.nodeName"},
		{Group: "resource.k8s.io", Resource: "resourceslices"}: {"metadata.name", "spec.nodeName", "spec.driver",
			"spec.pool.name"},
		{Group: "apps", Resource: "deployments"}: meta(),
		{Resource: "configmaps"}:                 meta(),
	} {
		var got []string
		for _, label := range []string{"metadata.name", "metadata.namespace", "spec.nodeName", "spec.host",
			"spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork",
			"status.phase", "status.podIP", "status.podIPs", "status.nominatedNodeName", "spec.unschedulable",
			"status.replicas", "involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
			"involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
			"involvedObject.fieldPath", "regarding.kind", "regarding.namespace", "regarding.name",
			"regarding.uid", "regarding.apiVersion", "regarding.resourceVersion", "regarding.fieldPath",
			"reason", "reportingComponent", "reportingController", "source", "type", "spec.clusterIP",
			"spec.type", "status.successful", "spec.signerName", "spec.replicas", "spec.podName", "spec.driver",
			"spec.pool.name"} {
			if _, _, err := ConvertFieldLabel(gr, label, "v"); err == nil {
				got = append(got, label)
			}
		}
		assert.ElementsMatch(t, want, got, "%v", gr)
	}

	// events.k8s.io's labels name core's fields, which both event types
	// fill in.
	events := schema.GroupResource{Group: "events.k8s.io", Resource: "events"}
	for label, field := range map[string]string{
		"regarding.kind": "involvedObject.kind", "regarding.namespace": "involvedObject.namespace",
		"regarding.name": "involvedObject.name", "regarding.uid": "involvedObject.uid",
		"regarding.apiVersion": "involvedObject.apiVersion", "regarding.resourceVersion": "involvedObject.resourceVersion",
		"regarding.fieldPath": "involvedObject.fieldPath", "reportingController": "reportingComponent",
		"reason": "reason", "type": "type",
	} {
		got, _, err := ConvertFieldLabel(events, label, "v")
		require.NoError(t, err, label)
		assert.Equal(t, field, got, label)
	}
}

// Fields gives, for an object of each resource with field labels of its
// own, every field its labels select, each read from where the server
// reads it: a field taken from the wrong place would select other objects.
func TestFieldsOfEachResource(t *testing.T) {
	meta := metav1.ObjectMeta{Namespace: "ns", Name: "n"}
	ref := corev1.ObjectReference{Kind: "Pod", Namespace: "web-ns", Name: "web", UID: "u-1",
		APIVersion: "v1", ResourceVersion: "42", FieldPath: "spec.containers{app}"}
	for _, tc := range []struct {
		obj  metav1.Object
		want fields.Set
	}{{
		&corev1.Pod{ObjectMeta: meta,
			Spec: corev1.PodSpec{NodeName: "node-1", RestartPolicy: corev1.RestartPolicyNever,
				SchedulerName: "sched", ServiceAccountName: "sa", HostNetwork: true},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.9", NominatedNodeName: "node-2",
				PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "fd00::1"}}}},
		fields.Set{"metadata.name": "n", "metadata.namespace": "ns", "spec.nodeName": "node-1",
			"spec.restartPolicy": "Never", "spec.schedulerName": "sched", "spec.serviceAccountName": "sa",
			"spec.hostNetwork": "true", "status.phase": "Running", "status.podIP": "10.0.0.9",
			"status.nominatedNodeName": "node-2"},
	}, {
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{Unschedulable: true}},
		fields.Set{"metadata.name": "n", "metadata.namespace": "", "spec.unschedulable": "true"},
	}, {
		&corev1.ReplicationController{ObjectMeta: meta,
			Spec:   corev1.ReplicationControllerSpec{Replicas: ptr(int32(5))},
			Status: corev1.ReplicationControllerStatus{Replicas: 2, ReadyReplicas: 1}},
		fields.Set{"metadata.name": "n", "metadata.namespace": "ns", "status.replicas": "2"},
	}, {
		&corev1.Event{ObjectMeta: meta, InvolvedObject: ref, Reason: "Failed", Type: "Warning",
			Source: corev1.EventSource{Component: "kubelet"}, ReportingController: "ctrl"},
		eventFields("kubelet"),
	}, {
		&eventsv1.Event{ObjectMeta: meta, Regarding: ref, Reason: "Failed", Type: "Warning",
			Related:          &corev1.ObjectReference{Kind: "Node", Name: "other", UID: "u-2"},
			DeprecatedSource: corev1.EventSource{Component: "kubelet"}, ReportingController: "ctrl"},
		eventFields("kubelet"),
	}, {
		&eventsv1.Event{ObjectMeta: meta, Regarding: ref, Reason: "Failed", Type: "Warning", ReportingController: "ctrl"},
		eventFields("ctrl"), // no source component: the reporting controller
	}, {
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
		fields.Set{"metadata.name": "n", "metadata.namespace": "", "status.phase": "Terminating"},
	}, {
		&corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeTLS},
		fields.Set{"metadata.name": "n", "metadata.namespace": "ns", "type": "kubernetes.io/tls"},
	}, {
		&corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10",
			ClusterIPs: []string{"10.96.0.10"}, ExternalName: "db.example.com", Type: corev1.ServiceTypeNodePort}},
		fields.Set{"metadata.name": "n", "metadata.namespace": "ns", "spec.clusterIP": "10.96.0.10", "spec.type": "NodePort"},
	}, {
		&batchv1.Job{ObjectMeta: meta, Status: batchv1.JobStatus{Succeeded: 3, Failed: 1, Active: 2}},
		fields.Set{"metadata.name": "n", "metadata.namespace": "ns", "status.successful": "3"},
	}, {
		&certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "n"},
			Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: "kubernetes.io/kubelet-serving", Username: "u"}},
		fields.Set{"metadata.name": "n", "metadata.namespace": "", "spec.signerName": "kubernetes.io/kubelet-serving"},
	}, {
		&appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(3))}},
		fields.Set{"metadata.name": "n", "metadata.namespace": "ns"},
	}} {
		assert.Equal(t, tc.want, Fields(tc.obj), "%T", tc.obj)
	}
}

func eventFields(source string) fields.Set {
	return fields.Set{"metadata.name": "n", "metadata.namespace": "ns",
		"involvedObject.kind": "Pod", "involvedObject.namespace": "web-ns", "involvedObject.name": "web",
		"involvedObject.uid": "u-1", "involvedObject.apiVersion": "v1", "involvedObject.resourceVersion": "42",
		"involvedObject.fieldPath": "spec.containers{app}", "reason": "Failed", "reportingComponent": "ctrl",
		"source": source, "type": "Warning"}
}

func ptr[T any](v T) *T { return &v }

// Every group of k8s.io/api that kube-apiserver serves is built in, and so
// are apiextensions' and the aggregator's; groups under k8s.io that only
// CRDs serve are not: an Unstructured of gateway.networking.k8s.io is a
// custom resource, whose updates need a resourceVersion.
func TestBuiltIn(t *testing.T) {
	for _, of := range []func() (schema.GroupVersionKind, schema.GroupVersionResource, error){
		Of[*admissionregistrationv1.ValidatingWebhookConfiguration], Of[*apiserverinternalv1alpha1.StorageVersion],
		Of[*appsv1.Deployment], Of[*authenticationv1.TokenReview], Of[*authorizationv1.SubjectAccessReview],
		Of[*autoscalingv2.HorizontalPodAutoscaler], Of[*batchv1.Job], Of[*certificatesv1.CertificateSigningRequest],
		Of[*coordinationv1.Lease], Of[*corev1.Pod], Of[*discoveryv1.EndpointSlice], Of[*eventsv1.Event],
		Of[*flowcontrolv1.FlowSchema], Of[*lifecyclev1alpha1.EvictionRequest], Of[*networkingv1.Ingress],
		Of[*nodev1.RuntimeClass], Of[*policyv1.PodDisruptionBudget], Of[*rbacv1.Role], Of[*resourcev1.ResourceClaim],
		Of[*schedulingv1.PriorityClass], Of[*storagev1.StorageClass], Of[*storagemigrationv1.StorageVersionMigration],
	} {
		gvk, _, err := of()
		require.NoError(t, err)
		assert.True(t, BuiltIn(gvk.Group), "%s", gvk)
	}
	for _, g := range []string{"apiextensions.k8s.io", "apiregistration.k8s.io", "extensions"} {
		assert.True(t, BuiltIn(g), g)
	}
	for _, g := range []string{"gateway.networking.k8s.io", "snapshot.storage.k8s.io", "autoscaling.k8s.io", "policy.networking.k8s.io", "example.com", "k8s.io"} {
		assert.False(t, BuiltIn(g), g)
	}
}
