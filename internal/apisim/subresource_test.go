package apisim_test

import (
	"encoding/json"
	"net/http"
	"path"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/internal/apisim"
)

// gadgets is a custom resource whose definition enables the status
// subresource; widgets' does not.
var gadgets = func() apisim.Resource {
	r := apisim.CustomResource("example.com", "v1", "gadgets", "Gadget", true)
	r.StatusSubresource = true
	return r
}()

func newGadget(namespace, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Gadget",
		"metadata": map[string]any{"namespace": namespace, "name": name, "labels": map[string]any{"app": "g"}},
		"spec":     map[string]any{"color": "blue"},
		"status":   map[string]any{"phase": "Ready"},
	}}
}

// put sends obj with PUT to path and decodes the answer into out.
func put(t *testing.T, s *apisim.Server, path string, obj, out any) {
	t.Helper()
	resp, body := do(t, s, http.MethodPut, path, jsonBody(t, obj))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.NoError(t, json.Unmarshal(body, out))
}

// A PUT to an object with a status subresource keeps the stored status, as
// kube-apiserver's strategies' PrepareForUpdate do; apisim stored the
// status sent. A PUT that changes only the status then writes nothing.
func TestPutKeepsTheStoredStatus(t *testing.T) {
	s := start(t, apisim.WithResources(apisim.Deployments(), gadgets))

	pod, err := apisim.Of[*corev1.Pod](s, apisim.Pods()).Create(apisim.MakePod("default", "p"))
	require.NoError(t, err)
	change := pod.DeepCopy()
	change.Status.Phase = corev1.PodFailed
	var got corev1.Pod
	put(t, s, apisim.Pods().ObjectPath("default", "p"), change, &got)
	assert.Equal(t, corev1.PodRunning, got.Status.Phase)
	assert.Equal(t, pod.ResourceVersion, got.ResourceVersion, "only the status changed: nothing written")
	change.Labels["tier"] = "back"
	put(t, s, apisim.Pods().ObjectPath("default", "p"), change, &got)
	assert.Equal(t, corev1.PodRunning, got.Status.Phase)
	assert.Equal(t, "back", got.Labels["tier"])
	assert.NotEqual(t, pod.ResourceVersion, got.ResourceVersion)

	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "d"},
		Spec: appsv1.DeploymentSpec{Replicas: new(int32(1))}, Status: appsv1.DeploymentStatus{ReadyReplicas: 1}}
	d, err = apisim.Of[*appsv1.Deployment](s, apisim.Deployments()).Create(d)
	require.NoError(t, err)
	d.Spec.Replicas, d.Status.ReadyReplicas = new(int32(3)), 3
	var gotD appsv1.Deployment
	put(t, s, apisim.Deployments().ObjectPath("default", "d"), d, &gotD)
	assert.Equal(t, int32(3), *gotD.Spec.Replicas)
	assert.Equal(t, int32(1), gotD.Status.ReadyReplicas)
	assert.Equal(t, int64(2), gotD.Generation)

	for _, tc := range []struct {
		res       apisim.Resource
		obj       *unstructured.Unstructured
		wantPhase string
	}{
		{gadgets, newGadget("default", "g"), "Ready"},
		{widgets, newWidget("default", "w"), "Broken"}, // no status subresource: status is data
	} {
		if tc.res == widgets {
			tc.obj.Object["status"] = map[string]any{"phase": "Ready"}
		}
		u, err := apisim.Of[*unstructured.Unstructured](s, tc.res).Create(tc.obj)
		require.NoError(t, err)
		u.Object["status"] = map[string]any{"phase": "Broken"}
		u.Object["spec"] = map[string]any{"color": "red"}
		var gotU unstructured.Unstructured
		put(t, s, tc.res.ObjectPath("default", u.GetName()), u, &gotU)
		phase, _, _ := unstructured.NestedString(gotU.Object, "status", "phase")
		assert.Equal(t, tc.wantPhase, phase, tc.res.Resource)
		color, _, _ := unstructured.NestedString(gotU.Object, "spec", "color")
		assert.Equal(t, "red", color, tc.res.Resource)
	}

	// The direct Go API writes the object whole, status included.
	change.Status.Phase = corev1.PodSucceeded
	change.ResourceVersion = ""
	direct, err := apisim.Of[*corev1.Pod](s, apisim.Pods()).Update(change)
	require.NoError(t, err)
	assert.Equal(t, corev1.PodSucceeded, direct.Status.Phase)
}

// A PUT to .../status writes the status: a built-in kind keeps its stored
// spec and the metadata its status strategy protects (a Pod's
// ownerReferences, a Deployment's labels), a custom resource everything but
// its status; the generation does not move. apisim answered 404.
func TestPutStatus(t *testing.T) {
	s := start(t, apisim.WithResources(apisim.Deployments(), gadgets))

	p := apisim.MakePod("default", "p")
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u-1"}}
	pod, err := apisim.Of[*corev1.Pod](s, apisim.Pods()).Create(p)
	require.NoError(t, err)
	change := pod.DeepCopy()
	change.Status.Phase = corev1.PodFailed
	change.Spec.NodeName = "elsewhere"
	change.Labels["tier"] = "back"
	change.OwnerReferences = nil
	var got corev1.Pod
	put(t, s, apisim.Pods().ObjectPath("default", "p")+"/status", change, &got)
	assert.Equal(t, corev1.PodFailed, got.Status.Phase)
	assert.Equal(t, pod.Spec.NodeName, got.Spec.NodeName)
	assert.Equal(t, "back", got.Labels["tier"], "pods/status may change labels")
	assert.Equal(t, pod.OwnerReferences, got.OwnerReferences)
	assert.Equal(t, rvPlus(t, pod.ResourceVersion, 1), got.ResourceVersion)
	stored, err := apisim.Of[*corev1.Pod](s, apisim.Pods()).Get("default", "p")
	require.NoError(t, err)
	assert.Equal(t, got.ResourceVersion, stored.ResourceVersion)

	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "d", Labels: map[string]string{"app": "d"}},
		Spec: appsv1.DeploymentSpec{Replicas: new(int32(1))}}
	d, err = apisim.Of[*appsv1.Deployment](s, apisim.Deployments()).Create(d)
	require.NoError(t, err)
	d.Spec.Replicas, d.Status.ReadyReplicas = new(int32(3)), 1
	d.Labels = map[string]string{"app": "other"}
	d.Annotations = map[string]string{"note": "x"}
	var gotD appsv1.Deployment
	put(t, s, apisim.Deployments().ObjectPath("default", "d")+"/status", d, &gotD)
	assert.Equal(t, int32(1), *gotD.Spec.Replicas)
	assert.Equal(t, int32(1), gotD.Status.ReadyReplicas)
	assert.Equal(t, map[string]string{"app": "d"}, gotD.Labels)
	assert.Equal(t, map[string]string{"note": "x"}, gotD.Annotations)
	assert.Equal(t, int64(1), gotD.Generation, "a status write does not move the generation")

	g, err := apisim.Of[*unstructured.Unstructured](s, gadgets).Create(newGadget("default", "g"))
	require.NoError(t, err)
	change2 := g.DeepCopy()
	change2.SetLabels(map[string]string{"app": "other"})
	change2.Object["spec"] = map[string]any{"color": "red"}
	change2.Object["status"] = map[string]any{"phase": "Broken"}
	var gotG unstructured.Unstructured
	put(t, s, gadgets.ObjectPath("default", "g")+"/status", change2, &gotG)
	assert.Equal(t, map[string]any{"phase": "Broken"}, gotG.Object["status"])
	assert.Equal(t, g.Object["spec"], gotG.Object["spec"])
	assert.Equal(t, g.GetLabels(), gotG.GetLabels())

	// GET of the status subresource answers the whole object.
	resp, body := get(t, s, gadgets.ObjectPath("default", "g")+"/status")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	assert.JSONEq(t, mustJSON(t, &gotG), string(body))
}

// Kinds without a status subresource have no .../status path: 404, as from
// kube-apiserver; nor does any other subresource exist. Only GET and PUT
// are served on one.
func TestStatusSubresourcePaths(t *testing.T) {
	s := start(t, apisim.WithResources(gadgets))
	_, err := apisim.Of[*corev1.ConfigMap](s, apisim.ConfigMaps()).Create(apisim.MakeConfigMap("default", "c", 1))
	require.NoError(t, err)
	_, err = apisim.Of[*unstructured.Unstructured](s, widgets).Create(newWidget("default", "w"))
	require.NoError(t, err)
	_, err = apisim.Of[*corev1.Pod](s, apisim.Pods()).Create(apisim.MakePod("default", "p"))
	require.NoError(t, err)
	for _, path := range []string{
		apisim.ConfigMaps().ObjectPath("default", "c") + "/status",
		widgets.ObjectPath("default", "w") + "/status",
		apisim.Pods().ObjectPath("default", "p") + "/log",
		"/api/v1/watch/namespaces/default/pods/p/status",
	} {
		resp, body := get(t, s, path)
		assert.Equal(t, metav1.StatusReasonNotFound, status(t, resp, body, http.StatusNotFound).Reason, path)
	}
	for _, method := range []string{http.MethodPost, http.MethodDelete} {
		resp, body := do(t, s, method, apisim.Pods().ObjectPath("default", "p")+"/status", nil)
		assert.Equal(t, metav1.StatusReasonMethodNotAllowed, status(t, resp, body, http.StatusMethodNotAllowed).Reason, method)
	}
}

// A custom resource's strategy moves the generation on for any change but
// to metadata: without a status subresource, its status is such a change;
// with one, a PUT keeps the stored status and a status write never moves
// it. apisim left the status out for both.
func TestCustomResourceStatusAndGeneration(t *testing.T) {
	s := start(t, apisim.WithResources(gadgets))
	for _, tc := range []struct {
		res  apisim.Resource
		obj  *unstructured.Unstructured
		want int64
	}{
		{widgets, newWidget("default", "w"), 2},
		{gadgets, newGadget("default", "g"), 1},
	} {
		u, err := apisim.Of[*unstructured.Unstructured](s, tc.res).Create(tc.obj)
		require.NoError(t, err)
		u.Object["status"] = map[string]any{"phase": "Moved"}
		var got unstructured.Unstructured
		put(t, s, tc.res.ObjectPath("default", u.GetName()), u, &got)
		assert.Equal(t, tc.want, got.GetGeneration(), tc.res.Resource)

		u.SetResourceVersion("")
		direct, err := apisim.Of[*unstructured.Unstructured](s, tc.res).Update(u)
		require.NoError(t, err)
		phase, _, _ := unstructured.NestedString(direct.Object, "status", "phase")
		assert.Equal(t, "Moved", phase, tc.res.Resource)
		assert.Equal(t, tc.want, direct.GetGeneration(), "%s: the status moved already, or never moves it", tc.res.Resource)
	}
}

// csrs is certificates.k8s.io/v1 certificatesigningrequests, with protobuf.
var csrs = apisim.Resource{Group: "certificates.k8s.io", Version: "v1", Resource: "certificatesigningrequests",
	Kind: "CertificateSigningRequest", ListKind: "CertificateSigningRequestList", Protobuf: true}

// A PUT to a CertificateSigningRequest's status keeps its stored Approved
// and Denied conditions, as csrStatusStrategy.PrepareForUpdate does
// (preserveConditionInstances): only /approval changes them. The other
// conditions and the certificate are the request's. apisim wrote the
// request's. Of a resource without protobuf too.
func TestCSRStatusKeepsApprovalConditions(t *testing.T) {
	jsonCSRs := csrs
	jsonCSRs.Protobuf = false
	for _, res := range []apisim.Resource{csrs, jsonCSRs} {
		s := apisim.New(apisim.WithScheme(csrScheme()), apisim.WithResources(res))
		require.NoError(t, s.Start())
		t.Cleanup(s.Close)
		approved := certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved,
			Status: corev1.ConditionTrue, Reason: "AdminApproved", LastUpdateTime: metav1.Unix(1000, 0)}
		csr, err := apisim.Of[*certificatesv1.CertificateSigningRequest](s, res).Create(&certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: "c"},
			Spec:       certificatesv1.CertificateSigningRequestSpec{SignerName: "example.com/signer", Request: []byte("pem")},
			Status:     certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{approved}}})
		require.NoError(t, err)
		change := csr.DeepCopy()
		change.Status.Certificate = []byte("cert")
		change.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{
			{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionFalse, Reason: "Undone"},
			{Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue, Reason: "Broken", LastUpdateTime: metav1.Unix(2000, 0)},
		}
		var got certificatesv1.CertificateSigningRequest
		put(t, s, res.ObjectPath("", "c")+"/status", change, &got)
		assert.Equal(t, []byte("cert"), got.Status.Certificate, "JSON-only: %t", !res.Protobuf)
		assert.Equal(t, []certificatesv1.CertificateSigningRequestCondition{approved, change.Status.Conditions[1]},
			got.Status.Conditions, "JSON-only: %t", !res.Protobuf)
	}
}

// csrScheme is a scheme that knows core/v1 and certificates.k8s.io/v1.
func csrScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	_ = corev1.AddToScheme(scheme) // registration of static types cannot fail
	_ = certificatesv1.AddToScheme(scheme)
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	return scheme
}

// PUT /api/v1/namespaces/{name}/finalize writes a Namespace's
// spec.finalizers, which a PUT to the Namespace keeps, as kube-apiserver's
// finalize REST does (namespaceFinalizeStrategy: the stored status, the
// rest the request's): a write at a new resourceVersion, MODIFIED to
// watchers, counted as "namespaces/finalize" (SubresourceRequests), where
// a Match of that name selects it. It has the status subresource's errors
// (404 of another resource or a missing Namespace, 400 for no name, 405
// for another method); apisim answered 404 to all.
func TestNamespaceFinalize(t *testing.T) {
	s := start(t, apisim.WithResources(apisim.Namespaces()))
	namespaces := apisim.Of[*corev1.Namespace](s, apisim.Namespaces())
	ns, err := namespaces.Create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"},
		Spec:   corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}})
	require.NoError(t, err)
	w := watch(t, s, "/api/v1/namespaces?watch=1&resourceVersion="+ns.ResourceVersion)
	defer w.close()
	finalize := apisim.Namespaces().ObjectPath("", "team") + "/finalize"

	change := ns.DeepCopy()
	change.Spec.Finalizers = nil
	change.Status.Phase = corev1.NamespaceTerminating
	change.Labels = map[string]string{"x": "y"}
	var got corev1.Namespace
	put(t, s, finalize, change, &got)
	assert.Empty(t, got.Spec.Finalizers)
	assert.Equal(t, corev1.NamespaceActive, got.Status.Phase, "the stored status")
	assert.Equal(t, "y", got.Labels["x"], "the request's metadata")
	assert.NotEqual(t, ns.ResourceVersion, got.ResourceVersion)
	assert.Equal(t, ns.Generation, got.Generation, "no strategy of a Namespace moves its generation")
	e := w.next(t)
	assert.Equal(t, "MODIFIED", e.Type)
	assert.Equal(t, got.ResourceVersion, e.rv(t))
	assert.Equal(t, 1, s.SubresourceRequests(apisim.VerbUpdate, apisim.Namespaces(), "finalize"))
	assert.Equal(t, 0, s.Requests(apisim.VerbUpdate, apisim.Namespaces()))

	s.Inject(apisim.Match{Resource: "namespaces/finalize"}, apisim.ServerError(http.StatusServiceUnavailable), 1)
	resp, body := do(t, s, http.MethodPut, finalize, jsonBody(t, &got))
	status(t, resp, body, http.StatusServiceUnavailable)

	for _, c := range []struct {
		method, path string
		code         int
	}{
		{http.MethodPut, apisim.Pods().ObjectPath("default", "p") + "/finalize", http.StatusNotFound},
		{http.MethodPut, "/api/v1/watch/namespaces/team/finalize", http.StatusNotFound},
		{http.MethodPut, apisim.Namespaces().ObjectPath("", "gone") + "/finalize", http.StatusNotFound},
		{http.MethodPut, "/api/v1/namespaces//finalize", http.StatusBadRequest},
		{http.MethodGet, finalize, http.StatusMethodNotAllowed},
		{http.MethodDelete, finalize, http.StatusMethodNotAllowed},
	} {
		other := got.DeepCopy()
		other.Name = path.Base(path.Dir(c.path))
		other.UID = "" // another object's: a precondition that fails (409)
		resp, body := do(t, s, c.method, c.path, jsonBody(t, other))
		status(t, resp, body, c.code)
	}
}

// PUT .../certificatesigningrequests/{name}/approval writes the
// conditions alone, as kube-apiserver's approval REST does
// (csrApprovalStrategy: the stored spec and status but the conditions);
// GET there answers the object; only CertificateSigningRequests have it.
// It is counted as "certificatesigningrequests/approval". apisim answered
// 404.
func TestCSRApproval(t *testing.T) {
	jsonCSRs := csrs
	jsonCSRs.Protobuf = false
	for _, res := range []apisim.Resource{csrs, jsonCSRs} {
		s := apisim.New(apisim.WithScheme(csrScheme()), apisim.WithResources(res, apisim.Namespaces()))
		require.NoError(t, s.Start())
		t.Cleanup(s.Close)
		csr, err := apisim.Of[*certificatesv1.CertificateSigningRequest](s, res).Create(&certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: "c"},
			Spec:       certificatesv1.CertificateSigningRequestSpec{SignerName: "example.com/signer", Request: []byte("pem")}})
		require.NoError(t, err)
		approval := res.ObjectPath("", "c") + "/approval"
		change := csr.DeepCopy()
		change.Spec.SignerName = "example.com/other"
		change.Status.Certificate = []byte("cert")
		change.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{
			{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Admin"}}
		var got certificatesv1.CertificateSigningRequest
		put(t, s, approval, change, &got)
		assert.Equal(t, change.Status.Conditions, got.Status.Conditions, "JSON-only: %t", !res.Protobuf)
		assert.Empty(t, got.Status.Certificate)
		assert.Equal(t, "example.com/signer", got.Spec.SignerName)
		assert.NotEqual(t, csr.ResourceVersion, got.ResourceVersion)
		assert.Equal(t, 1, s.SubresourceRequests(apisim.VerbUpdate, res, "approval"))

		resp, body := get(t, s, approval)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
		resp, body = do(t, s, http.MethodPut, apisim.Namespaces().ObjectPath("", "c")+"/approval", jsonBody(t, change))
		status(t, resp, body, http.StatusNotFound)
	}
}
