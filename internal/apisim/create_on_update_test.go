package apisim_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/apisim"
)

// A PUT of a missing object of a kind whose strategy allows create on
// update (a Lease, a Service) creates it, as kube-apiserver's generic
// store does: 201 Created, stamped as a POST stamps it, whatever
// resourceVersion the body names (none, for a Lease that a PUT of an
// existing one must name one), and watchers see ADDED. A uid in the body
// is a precondition the missing object fails: 409. A missing Pod is
// still 404. apisim answered 404 to them all.
func TestPutCreatesWhereTheStrategyAllowsIt(t *testing.T) {
	leases := apisim.Resource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases", Kind: "Lease",
		ListKind: "LeaseList", Namespaced: true, Protobuf: true}
	services := apisim.Resource{Version: "v1", Resource: "services", Kind: "Service",
		ListKind: "ServiceList", Namespaced: true, Protobuf: true}
	s := start(t, apisim.WithResources(leases, services))
	w := watch(t, s, "/apis/coordination.k8s.io/v1/namespaces/default/leases?watch=1&resourceVersion="+s.ResourceVersion())

	for _, rv := range []string{"", "12345"} {
		name := "l" + rv
		resp, body := do(t, s, http.MethodPut, leases.ObjectPath("default", name), jsonBody(t, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, ResourceVersion: rv}}))
		require.Equal(t, http.StatusCreated, resp.StatusCode, string(body))
		var got coordinationv1.Lease
		require.NoError(t, json.Unmarshal(body, &got))
		assert.NotEmpty(t, got.UID, rv)
		assert.False(t, got.CreationTimestamp.IsZero(), rv)
		assert.Equal(t, int64(1), got.Generation, rv)
		assert.Equal(t, s.ResourceVersion(), got.ResourceVersion, rv)
		e := w.next(t)
		assert.Equal(t, "ADDED", e.Type, rv)
		assert.Equal(t, name, e.obj(t).GetName(), rv)
	}

	resp, body := do(t, s, http.MethodPut, leases.ObjectPath("default", "u"), jsonBody(t, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "u", UID: "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f"}}))
	assert.Equal(t, metav1.StatusReasonConflict, status(t, resp, body, http.StatusConflict).Reason)

	resp, body = do(t, s, http.MethodPut, services.ObjectPath("default", "svc")+"/status", jsonBody(t, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "svc"}}))
	assert.Equal(t, http.StatusCreated, resp.StatusCode, string(body))

	resp, body = do(t, s, http.MethodPut, apisim.Pods().ObjectPath("default", "p"), jsonBody(t, apisim.MakePod("default", "p")))
	assert.Equal(t, metav1.StatusReasonNotFound, status(t, resp, body, http.StatusNotFound).Reason)

	// The direct Go API creates too.
	l, err := apisim.Of[*coordinationv1.Lease](s, leases).Update(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "direct"}})
	require.NoError(t, err)
	assert.NotEmpty(t, l.UID)
}

// A PUT that names a uid has it checked first, as a precondition of the
// generic store's update: against the stored object, and against an empty
// one when none is stored, whatever the kind: 409 Conflict. apisim
// answered a missing Pod's 404 and took an existing one's update with
// another object's uid, keeping the stored uid.
func TestPutChecksTheUIDFirst(t *testing.T) {
	s := start(t)
	pods := apisim.Of[*corev1.Pod](s, apisim.Pods())
	p, err := pods.Create(apisim.MakePod("default", "p"))
	require.NoError(t, err)

	gone := apisim.MakePod("default", "gone")
	gone.UID = p.UID
	resp, body := do(t, s, http.MethodPut, apisim.Pods().ObjectPath("default", "gone"), jsonBody(t, gone))
	st := status(t, resp, body, http.StatusConflict)
	assert.Equal(t, metav1.StatusReasonConflict, st.Reason)
	assert.Contains(t, st.Message, "Precondition failed: UID in precondition: "+string(p.UID)+", UID in object meta: ")
	gone.UID = ""
	resp, body = do(t, s, http.MethodPut, apisim.Pods().ObjectPath("default", "gone"), jsonBody(t, gone))
	status(t, resp, body, http.StatusNotFound)

	other := p.DeepCopy()
	other.UID = "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f"
	other.ResourceVersion = "" // the uid comes first, before the write's resourceVersion
	other.Labels = map[string]string{"changed": "yes"}
	resp, body = do(t, s, http.MethodPut, apisim.Pods().ObjectPath("default", "p"), jsonBody(t, other))
	st = status(t, resp, body, http.StatusConflict)
	assert.Contains(t, st.Message, "UID in object meta: "+string(p.UID))
	got, err := pods.Get("default", "p")
	require.NoError(t, err)
	assert.Equal(t, p.ResourceVersion, got.ResourceVersion, "nothing written")
}
