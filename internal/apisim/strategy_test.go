package apisim_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/listwatch/listwatch/internal/apisim"
)

// A Namespace's status is at /api/v1/namespaces/{name}/status, which
// kube-apiserver reads as the namespace's own, not as a resource "status"
// in namespace {name}; apisim answered 404. Nodes, cluster-scoped, too.
func TestStatusOfClusterScopedKinds(t *testing.T) {
	s := start(t, apisim.WithResources(apisim.Namespaces()))
	ns, err := apisim.Of[*corev1.Namespace](s, apisim.Namespaces()).Create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}})
	require.NoError(t, err)
	resp, body := get(t, s, apisim.Namespaces().ObjectPath("", "team")+"/status")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	ns.Status.Phase = corev1.NamespaceTerminating
	var got corev1.Namespace
	put(t, s, apisim.Namespaces().ObjectPath("", "team")+"/status", ns, &got)
	assert.Equal(t, corev1.NamespaceTerminating, got.Status.Phase)

	n, err := apisim.Of[*corev1.Node](s, apisim.Nodes()).Create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	require.NoError(t, err)
	n.Status.Phase = corev1.NodeRunning
	var gotN corev1.Node
	put(t, s, apisim.Nodes().ObjectPath("", "n1")+"/status", n, &gotN)
	assert.Equal(t, corev1.NodeRunning, gotN.Status.Phase)
}

// An empty name before /status is a 400, as kube-apiserver's namer
// answers; apisim served a list of the collection (and a watch).
func TestStatusOfNoName(t *testing.T) {
	s := start(t)
	for _, path := range []string{"/api/v1/namespaces/default/pods//status", "/api/v1/namespaces/default/pods//status?watch=1"} {
		resp, body := get(t, s, path)
		assert.Equal(t, "name must be provided", status(t, resp, body, http.StatusBadRequest).Message, path)
	}
}

// A PUT to pods/status follows podStatusStrategy: it cannot mark the pod
// for deletion, and keeps the qosClass, the observedGeneration (the
// status's and each condition's) and the claim statuses that the request
// leaves out. Of a pod stored as unstructured (no protobuf) too.
func TestPodStatusStrategy(t *testing.T) {
	jsonPods := apisim.Pods()
	jsonPods.Protobuf = false
	for _, res := range []apisim.Resource{apisim.Pods(), jsonPods} {
		s := apisim.New(apisim.WithResources(res))
		require.NoError(t, s.Start())
		t.Cleanup(s.Close)
		p := apisim.MakePod("default", "p")
		p.Status.QOSClass = corev1.PodQOSBurstable
		p.Status.ObservedGeneration = 1
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, ObservedGeneration: 1}}
		p.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: new("gpu-1")}}
		_, err := apisim.Of[*corev1.Pod](s, res).Create(p)
		require.NoError(t, err)
		var pod corev1.Pod
		resp, body := get(t, s, res.ObjectPath("default", "p"))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.NoError(t, json.Unmarshal(body, &pod))

		change := pod.DeepCopy()
		change.Status.Phase = corev1.PodFailed
		change.Status.QOSClass, change.Status.ObservedGeneration, change.Status.ResourceClaimStatuses = "", 0, nil
		change.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
		now := metav1.NewTime(time.Now().Truncate(time.Second))
		change.DeletionTimestamp = &now
		var got corev1.Pod
		put(t, s, res.ObjectPath("default", "p")+"/status", change, &got)
		assert.Equal(t, corev1.PodFailed, got.Status.Phase, res.Protobuf)
		assert.Nil(t, got.DeletionTimestamp, "pods/status cannot mark the pod for deletion")
		assert.Equal(t, corev1.PodQOSBurstable, got.Status.QOSClass)
		assert.Equal(t, int64(1), got.Status.ObservedGeneration)
		assert.Equal(t, []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, ObservedGeneration: 1}}, got.Status.Conditions)
		assert.Equal(t, p.Status.ResourceClaimStatuses, got.Status.ResourceClaimStatuses)

	}
}

// An explicit empty list of claim statuses (resourceClaimStatuses,
// nodeAllocatableResourceClaimStatuses) in a JSON PUT to pods/status
// clears the stored one, as podStatusStrategy.PrepareForUpdate keeps only
// a nil list; apisim read the request as it stores it, where an empty list
// is none, and kept them. Protobuf has no empty list (a repeated field
// without elements is not in the bytes), so there the request leaves them
// out and they are kept, as on kube-apiserver given the same bytes.
func TestPodStatusEmptyClaimListsClear(t *testing.T) {
	jsonPods := apisim.Pods()
	jsonPods.Protobuf = false
	for _, res := range []apisim.Resource{apisim.Pods(), jsonPods} {
		s := apisim.New(apisim.WithResources(res))
		require.NoError(t, s.Start())
		t.Cleanup(s.Close)
		pods := apisim.Of[*corev1.Pod](s, res)
		p := apisim.MakePod("default", "p")
		p.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: new("gpu-1")}}
		p.Status.NodeAllocatableResourceClaimStatuses = []corev1.NodeAllocatableResourceClaimStatus{{ResourceClaimName: "cpu-1"}}
		stored, err := pods.Create(p)
		require.NoError(t, err)

		if res.Protobuf {
			change := stored.DeepCopy()
			change.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{}
			change.Status.NodeAllocatableResourceClaimStatuses = []corev1.NodeAllocatableResourceClaimStatus{}
			change.Status.Phase = corev1.PodFailed
			got := putProtobuf(t, s, res.ObjectPath("default", "p")+"/status", change)
			assert.Equal(t, corev1.PodFailed, got.Status.Phase)
			assert.Equal(t, p.Status.ResourceClaimStatuses, got.Status.ResourceClaimStatuses, "protobuf: none sent, kept")
			assert.Equal(t, p.Status.NodeAllocatableResourceClaimStatuses, got.Status.NodeAllocatableResourceClaimStatuses)
			stored = got
		}

		var change map[string]any
		b, err := json.Marshal(stored)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &change))
		st := change["status"].(map[string]any)
		st["resourceClaimStatuses"], st["nodeAllocatableResourceClaimStatuses"] = []any{}, []any{}
		var got corev1.Pod
		put(t, s, res.ObjectPath("default", "p")+"/status", change, &got)
		assert.Empty(t, got.Status.ResourceClaimStatuses, "JSON-only: %t", !res.Protobuf)
		assert.Empty(t, got.Status.NodeAllocatableResourceClaimStatuses, "JSON-only: %t", !res.Protobuf)
		after, err := pods.Get("default", "p")
		require.NoError(t, err)
		assert.Empty(t, after.Status.ResourceClaimStatuses)
		assert.Equal(t, got.ResourceVersion, after.ResourceVersion)
	}
}

// putProtobuf PUTs obj encoded as protobuf and decodes the answer.
func putProtobuf(t *testing.T, s *apisim.Server, path string, obj *corev1.Pod) *corev1.Pod {
	t.Helper()
	raw, err := obj.Marshal()
	require.NoError(t, err)
	unk := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "Pod"}, Raw: raw}
	body, err := unk.Marshal()
	require.NoError(t, err)
	resp, got := do(t, s, http.MethodPut, path, bytes.NewReader(append([]byte("k8s\x00"), body...)),
		"Content-Type", protobufMedia, "Accept", protobufMedia)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(got))
	pod, ok := decode(t, got).(*corev1.Pod)
	require.True(t, ok)
	return pod
}

// Only a delete marks an object for deletion: an update (of the object or
// of a Node's status) that sets the marks is 422, as kube-apiserver's
// validation answers (immutable fields); apisim stored them.
func TestUpdateCannotMarkForDeletion(t *testing.T) {
	s := start(t)
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	nodes := apisim.Of[*corev1.Node](s, apisim.Nodes())
	n, err := nodes.Create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	require.NoError(t, err)
	n.DeletionTimestamp, n.DeletionGracePeriodSeconds = &now, new(int64(30))
	for _, path := range []string{apisim.Nodes().ObjectPath("", "n1") + "/status", apisim.Nodes().ObjectPath("", "n1")} {
		resp, body := do(t, s, http.MethodPut, path, jsonBody(t, n))
		st := status(t, resp, body, http.StatusUnprocessableEntity)
		assert.Equal(t, metav1.StatusReasonInvalid, st.Reason)
		assert.Contains(t, st.Message, `Node "n1" is invalid`)
		assert.Contains(t, st.Message, "metadata.deletionTimestamp")
		assert.Contains(t, st.Message, "metadata.deletionGracePeriodSeconds")
	}

	// Marked by a test (the direct API sets them as it likes), the object
	// keeps its marks whatever a PUT sends, but takes no other grace
	// period and no new finalizer.
	n.Finalizers = []string{"example.com/hold"}
	n.ResourceVersion = ""
	marked, err := nodes.Update(n)
	require.NoError(t, err)
	edit := marked.DeepCopy()
	edit.DeletionTimestamp, edit.DeletionGracePeriodSeconds = nil, nil
	edit.Labels = map[string]string{"x": "y"}
	var got corev1.Node
	put(t, s, apisim.Nodes().ObjectPath("", "n1"), edit, &got)
	assert.Equal(t, marked.DeletionTimestamp.Unix(), got.DeletionTimestamp.Unix())
	assert.Equal(t, marked.DeletionGracePeriodSeconds, got.DeletionGracePeriodSeconds)
	edit = got.DeepCopy()
	edit.DeletionGracePeriodSeconds = new(int64(5))
	edit.Finalizers = append(edit.Finalizers, "example.com/more")
	resp, body := do(t, s, http.MethodPut, apisim.Nodes().ObjectPath("", "n1"), jsonBody(t, edit))
	st := status(t, resp, body, http.StatusUnprocessableEntity)
	assert.Contains(t, st.Message, "metadata.deletionGracePeriodSeconds")
	assert.Contains(t, st.Message, "metadata.finalizers")
}

// A PUT keeps what the kind's strategy keeps beside the status: a
// Namespace's spec.finalizers, written only through /finalize.
func TestPutKeepsNamespaceFinalizers(t *testing.T) {
	s := start(t, apisim.WithResources(apisim.Namespaces()))
	ns, err := apisim.Of[*corev1.Namespace](s, apisim.Namespaces()).Create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"},
		Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}}})
	require.NoError(t, err)
	ns.Spec.Finalizers = nil
	ns.Labels = map[string]string{"x": "y"}
	var got corev1.Namespace
	put(t, s, apisim.Namespaces().ObjectPath("", "team"), ns, &got)
	assert.Equal(t, []corev1.FinalizerName{corev1.FinalizerKubernetes}, got.Spec.Finalizers)
	assert.Equal(t, "y", got.Labels["x"])
}

// resourceVersion "0" is none, as the storage's versioner parses it: an
// unconditional PUT of a pod, a 422 of a custom resource; apisim answered
// 409. One that is not a number is the versioner's parse error, a 500.
func TestPutResourceVersionZeroOrGarbage(t *testing.T) {
	s := start(t)
	pod, err := apisim.Of[*corev1.Pod](s, apisim.Pods()).Create(apisim.MakePod("default", "p"))
	require.NoError(t, err)
	pod.ResourceVersion = "0"
	pod.Labels["x"] = "y"
	var got corev1.Pod
	put(t, s, apisim.Pods().ObjectPath("default", "p"), pod, &got)
	assert.Equal(t, "y", got.Labels["x"])

	w, err := apisim.Of[*unstructured.Unstructured](s, widgets).Create(newWidget("default", "w"))
	require.NoError(t, err)
	w.SetResourceVersion("0")
	resp, body := do(t, s, http.MethodPut, widgets.ObjectPath("default", "w"), jsonBody(t, w))
	status(t, resp, body, http.StatusUnprocessableEntity)

	pod.ResourceVersion = "abc"
	resp, body = do(t, s, http.MethodPut, apisim.Pods().ObjectPath("default", "p"), jsonBody(t, pod))
	st := status(t, resp, body, http.StatusInternalServerError)
	assert.Equal(t, `strconv.ParseUint: parsing "abc": invalid syntax`, st.Message)
	assert.Empty(t, st.Reason)
}

// Faults and request counts tell a resource from its status subresource,
// as RBAC does: "pods" and "pods/status". A fault for updates of pods hit
// a kubelet's status writes too.
func TestStatusRequestsAreApart(t *testing.T) {
	s := start(t)
	pod, err := apisim.Of[*corev1.Pod](s, apisim.Pods()).Create(apisim.MakePod("default", "p"))
	require.NoError(t, err)
	onPods := s.Inject(apisim.Match{Verb: apisim.VerbUpdate, Resource: "pods"}, apisim.ServerError(http.StatusInternalServerError), 0)
	pod.Status.Phase = corev1.PodFailed
	var got corev1.Pod
	put(t, s, apisim.Pods().ObjectPath("default", "p")+"/status", pod, &got)
	assert.Equal(t, 0, onPods.Hits())
	assert.Equal(t, 0, s.Requests(apisim.VerbUpdate, apisim.Pods()))
	assert.Equal(t, 1, s.StatusRequests(apisim.VerbUpdate, apisim.Pods()))
	onPods.Remove()

	onStatus := s.Inject(apisim.Match{Verb: apisim.VerbUpdate, Resource: "pods/status"}, apisim.ServerError(http.StatusInternalServerError), 1)
	resp, body := do(t, s, http.MethodPut, apisim.Pods().ObjectPath("default", "p")+"/status", jsonBody(t, &got))
	status(t, resp, body, http.StatusInternalServerError)
	assert.Equal(t, 1, onStatus.Hits())
}

// A built-in kind the scheme does not know (an autoscaling/v2
// HorizontalPodAutoscaler, served as JSON) is no custom resource: a
// change to its status alone never moves its generation.
func TestBuiltInKindOutsideTheScheme(t *testing.T) {
	hpa := apisim.Resource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers",
		Kind: "HorizontalPodAutoscaler", ListKind: "HorizontalPodAutoscalerList", Namespaced: true}
	s := start(t, apisim.WithResources(hpa))
	u, err := apisim.Of[*unstructured.Unstructured](s, hpa).Create(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
		"metadata": map[string]any{"namespace": "default", "name": "h"},
		"spec":     map[string]any{"maxReplicas": int64(3)},
		"status":   map[string]any{"currentReplicas": int64(1)},
	}})
	require.NoError(t, err)
	u.Object["status"] = map[string]any{"currentReplicas": int64(2)}
	var got unstructured.Unstructured
	put(t, s, hpa.ObjectPath("default", "h"), u, &got)
	assert.Equal(t, int64(1), got.GetGeneration())
}

// Pods served as JSON only are stored unstructured; a status write that
// leaves out what the strategy keeps, and changes nothing else, writes
// nothing, as on kube-apiserver (the rule's result is written back into
// the status only). A ConfigMap created through the typed Go API and
// updated over HTTP is stored in one form: the PUT panicked.
func TestJSONOnlyBuiltInKinds(t *testing.T) {
	jsonPods, jsonConfigMaps := apisim.Pods(), apisim.ConfigMaps()
	jsonPods.Protobuf, jsonConfigMaps.Protobuf = false, false
	s := apisim.New(apisim.WithResources(jsonPods, jsonConfigMaps))
	require.NoError(t, s.Start())
	t.Cleanup(s.Close)

	resp, body := do(t, s, http.MethodPost, "/api/v1/namespaces/default/pods", strings.NewReader(
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]},"status":{"qosClass":"BestEffort"}}`))
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(body))
	var stored map[string]any
	require.NoError(t, json.Unmarshal(body, &stored))
	delete(stored["status"].(map[string]any), "qosClass")
	var got map[string]any
	put(t, s, jsonPods.ObjectPath("default", "p")+"/status", stored, &got)
	md := got["metadata"].(map[string]any)
	assert.Equal(t, stored["metadata"].(map[string]any)["resourceVersion"], md["resourceVersion"], "nothing written")
	assert.Equal(t, "BestEffort", got["status"].(map[string]any)["qosClass"])

	// So with container statuses, whose typed form has fields the request
	// left out ("state": {}): the object is stored in that form, as
	// kube-apiserver stores it, so the status the rule writes back is no
	// change.
	resp, body = do(t, s, http.MethodPost, "/api/v1/namespaces/default/pods", strings.NewReader(
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q"},"spec":{"containers":[{"name":"c","image":"i"}]},`+
			`"status":{"qosClass":"BestEffort","containerStatuses":[{"name":"c","image":"i","imageID":"","ready":true,"restartCount":0}]}}`))
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(body))
	require.NoError(t, json.Unmarshal(body, &stored))
	delete(stored["status"].(map[string]any), "qosClass")
	put(t, s, jsonPods.ObjectPath("default", "q")+"/status", stored, &got)
	assert.Equal(t, stored["metadata"].(map[string]any)["resourceVersion"], got["metadata"].(map[string]any)["resourceVersion"], "nothing written")

	cm, err := apisim.Of[*corev1.ConfigMap](s, jsonConfigMaps).Create(apisim.MakeConfigMap("default", "c", 1))
	require.NoError(t, err)
	cm.Data = map[string]string{"k": "v"}
	var gotCM corev1.ConfigMap
	put(t, s, jsonConfigMaps.ObjectPath("default", "c"), cm, &gotCM)
	assert.Equal(t, map[string]string{"k": "v"}, gotCM.Data)
}

// A FlowSchema's status strategy takes all of the stored metadata: a
// status write carrying deletion marks or other labels is no error, and
// changes only the status.
func TestFlowSchemaStatusTakesTheStoredMetadata(t *testing.T) {
	flowSchemas := apisim.Resource{Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Resource: "flowschemas",
		Kind: "FlowSchema", ListKind: "FlowSchemaList", StatusSubresource: true}
	s := apisim.New(apisim.WithResources(flowSchemas))
	require.NoError(t, s.Start())
	t.Cleanup(s.Close)
	_, err := apisim.Of[*unstructured.Unstructured](s, flowSchemas).Create(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
		"metadata": map[string]any{"name": "f", "labels": map[string]any{"a": "b"}},
		"spec":     map[string]any{"priorityLevelConfiguration": map[string]any{"name": "global-default"}},
	}})
	require.NoError(t, err)
	resp, body := get(t, s, flowSchemas.ObjectPath("", "f"))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var f map[string]any
	require.NoError(t, json.Unmarshal(body, &f))
	md := f["metadata"].(map[string]any)
	md["labels"] = map[string]any{"a": "changed"}
	md["deletionTimestamp"] = "2026-01-01T00:00:00Z"
	f["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Dangling", "status": "False"}}}
	var got unstructured.Unstructured
	put(t, s, flowSchemas.ObjectPath("", "f")+"/status", f, &got)
	assert.Equal(t, map[string]string{"a": "b"}, got.GetLabels())
	assert.Nil(t, got.GetDeletionTimestamp())
	conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
	assert.Len(t, conds, 1)
}

// A Deployment created over HTTP as JSON and read back through the typed
// Go API is the same object: an update that changes nothing writes
// nothing and keeps the generation. apisim stored the request's JSON,
// whose shape the typed form then changed ("strategy": {}).
func TestJSONOnlyDeploymentRoundTrip(t *testing.T) {
	jsonDeployments := apisim.Deployments()
	jsonDeployments.Protobuf = false
	s := apisim.New(apisim.WithResources(jsonDeployments))
	require.NoError(t, s.Start())
	t.Cleanup(s.Close)
	resp, body := do(t, s, http.MethodPost, "/apis/apps/v1/namespaces/default/deployments", strings.NewReader(
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"a":"b"}},`+
			`"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`))
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(body))
	deployments := apisim.Of[*appsv1.Deployment](s, jsonDeployments)
	d, err := deployments.Get("default", "d")
	require.NoError(t, err)
	same, err := deployments.Update(d)
	require.NoError(t, err)
	assert.Equal(t, d.ResourceVersion, same.ResourceVersion, "nothing written")
	assert.Equal(t, int64(1), same.Generation)
}

// Objects of a struct type, not a pointer, are no object to write: an
// error, not a panic.
func TestObjectsOfAStructType(t *testing.T) {
	s := start(t)
	_, err := apisim.Of[podValue](s, apisim.Pods()).Create(podValue{})
	assert.Error(t, err)
}

// podValue is a Pod by value, embedded through a pointer.
type podValue struct{ *corev1.Pod }

// A JSON-only resource of a known kind takes a write by JSON's rules, as
// kube-apiserver decodes it into the kind's type: a number too large for
// its field is a 400 (it was cut to fit: 4294967297 replicas became 1). A
// custom resource whose kind is named as one of metav1's (Status) is no
// known kind: it is stored as sent (it was made a metav1.Status).
func TestJSONOnlyWritesDecodeAsTheServerDoes(t *testing.T) {
	jsonDeployments := apisim.Deployments()
	jsonDeployments.Protobuf = false
	statuses := apisim.CustomResource("example.com", "v1", "statuses", "Status", true)
	s := apisim.New(apisim.WithResources(jsonDeployments, statuses))
	require.NoError(t, s.Start())
	t.Cleanup(s.Close)

	resp, body := do(t, s, http.MethodPost, "/apis/apps/v1/namespaces/default/deployments", strings.NewReader(
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":4294967297,"selector":{"matchLabels":{"a":"b"}},`+
			`"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`))
	status(t, resp, body, http.StatusBadRequest)

	resp, body = do(t, s, http.MethodPost, "/apis/example.com/v1/namespaces/default/statuses", strings.NewReader(
		`{"apiVersion":"example.com/v1","kind":"Status","metadata":{"name":"a"},"spec":{"x":1}}`))
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(body))
	var got unstructured.Unstructured
	require.NoError(t, json.Unmarshal(body, &got))
	assert.Equal(t, "a", got.GetName())
	assert.Equal(t, map[string]any{"x": int64(1)}, got.Object["spec"])
}

// A write whose body the kind's type refuses (a float for an int32, a
// number too large for one) is 400 BadRequest in the words of
// kube-apiserver's update and create handlers (transformDecodeError over
// the JSON serializer's error). A JSON-only resource of a known kind took
// "replicas": 2.0 as 2, since it decoded the body unstructured and then
// into the type from the re-encoded map; both resources worded it as
// apisim's own, and took a field name in another case as the field.
func TestWritesTheTypeRefusesAreBadRequest(t *testing.T) {
	jsonDeployments := apisim.Deployments()
	jsonDeployments.Protobuf = false
	deployment := func(replicas string) *strings.Reader {
		return strings.NewReader(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"default"},"spec":{"replicas":` + replicas +
			`,"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`)
	}
	for _, res := range []apisim.Resource{apisim.Deployments(), jsonDeployments} {
		s := apisim.New(apisim.WithResources(res))
		require.NoError(t, s.Start())
		t.Cleanup(s.Close)
		collection, object := "/apis/apps/v1/namespaces/default/deployments", res.ObjectPath("default", "d")
		resp, body := do(t, s, http.MethodPost, collection, deployment("1"))
		require.Equal(t, http.StatusCreated, resp.StatusCode, string(body))
		for _, c := range []struct{ method, path, replicas, value string }{
			{http.MethodPost, collection, "2.0", "2.0"},
			{http.MethodPut, object, "2.0", "2.0"},
			{http.MethodPut, object, "2.5", "2.5"},
			{http.MethodPut, object + "/status", "2.0", "2.0"},
			{http.MethodPut, object, "4294967297", "4294967297"},
		} {
			resp, body := do(t, s, c.method, c.path, deployment(c.replicas))
			st := status(t, resp, body, http.StatusBadRequest)
			assert.Equal(t, metav1.StatusReasonBadRequest, st.Reason)
			assert.Equal(t, `Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal number `+c.value+
				` into Go struct field DeploymentSpec.spec.replicas of type int32`, st.Message, "%s %s, JSON-only: %t", c.method, c.path, !res.Protobuf)
		}
		// Field names are case-sensitive, as in the server's decoding:
		// "Paused" is no field of a Deployment's spec (it was taken).
		resp, body = do(t, s, http.MethodPut, object, deployment(`1,"Paused":true`))
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
		d, err := apisim.Of[*appsv1.Deployment](s, res).Get("default", "d")
		require.NoError(t, err)
		assert.Equal(t, int32(1), *d.Spec.Replicas)
		assert.False(t, d.Spec.Paused, "JSON-only: %t", !res.Protobuf)
	}
}
