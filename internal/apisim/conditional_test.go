package apisim_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/listwatch/listwatch/internal/apisim"
)

// A PUT without metadata.resourceVersion of a custom resource, or of a kind
// whose strategy's AllowUnconditionalUpdate is false (a Lease), is refused
// with kube-apiserver's 422, which names the resource where the kind
// belongs; a Pod's or a ConfigMap's replaces what is stored. apisim
// replaced them all.
func TestUnconditionalPut(t *testing.T) {
	leases := apisim.Resource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases", Kind: "Lease",
		ListKind: "LeaseList", Namespaced: true, Protobuf: true}
	s := start(t, apisim.WithResources(leases, gadgets))
	_, err := apisim.Of[*unstructured.Unstructured](s, widgets).Create(newWidget("default", "w"))
	require.NoError(t, err)
	_, err = apisim.Of[*unstructured.Unstructured](s, gadgets).Create(newGadget("default", "g"))
	require.NoError(t, err)
	_, err = apisim.Of[*coordinationv1.Lease](s, leases).Create(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "l"}})
	require.NoError(t, err)

	for _, tc := range []struct {
		path string
		obj  any
		want string
	}{
		{widgets.ObjectPath("default", "w"), newWidget("default", "w"),
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"widgets.example.com \"w\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update","reason":"Invalid","details":{"name":"w","group":"example.com","kind":"widgets","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: 0: must be specified for an update","field":"metadata.resourceVersion"}]},"code":422}`},
		{gadgets.ObjectPath("default", "g") + "/status", newGadget("default", "g"),
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"gadgets.example.com \"g\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update","reason":"Invalid","details":{"name":"g","group":"example.com","kind":"gadgets","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: 0: must be specified for an update","field":"metadata.resourceVersion"}]},"code":422}`},
		{leases.ObjectPath("default", "l"), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "l"}},
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"leases.coordination.k8s.io \"l\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update","reason":"Invalid","details":{"name":"l","group":"coordination.k8s.io","kind":"leases","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: 0: must be specified for an update","field":"metadata.resourceVersion"}]},"code":422}`},
	} {
		resp, body := do(t, s, http.MethodPut, tc.path, jsonBody(t, tc.obj))
		assert.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, tc.path)
		assert.JSONEq(t, tc.want, string(body), tc.path)
	}

	// Built-in kinds that allow it, and the direct Go API, update
	// unconditionally.
	p, err := apisim.Of[*corev1.Pod](s, apisim.Pods()).Create(apisim.MakePod("default", "p"))
	require.NoError(t, err)
	p.ResourceVersion = ""
	p.Labels["tier"] = "back"
	var got corev1.Pod
	put(t, s, apisim.Pods().ObjectPath("default", "p"), p, &got)
	assert.Equal(t, "back", got.Labels["tier"])
	w := newWidget("default", "w")
	w.SetLabels(map[string]string{"app": "other"})
	_, err = apisim.Of[*unstructured.Unstructured](s, widgets).Update(w)
	require.NoError(t, err)
}
