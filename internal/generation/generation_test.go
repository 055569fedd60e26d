package generation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The kinds with rules of their own follow them unstructured as typed: a
// PriorityClass's generation never moves, an EndpointSlice's moves with
// its labels, a Deployment's with its annotations. Unstructured, the first
// two followed the rule of any other kind.
func TestKindRulesOfUnstructuredObjects(t *testing.T) {
	obj := func(apiVersion, kind string, fields map[string]any, labels, annotations map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
			"metadata": map[string]any{"name": "x", "labels": labels, "annotations": annotations}}}
		for k, v := range fields {
			u.Object[k] = v
		}
		return u
	}
	for name, tc := range map[string]struct {
		old, cur *unstructured.Unstructured
		want     bool
	}{
		"PriorityClass value": {
			obj("scheduling.k8s.io/v1", "PriorityClass", map[string]any{"value": int64(1)}, nil, nil),
			obj("scheduling.k8s.io/v1", "PriorityClass", map[string]any{"value": int64(2)}, nil, nil), false},
		"EndpointSlice labels": {
			obj("discovery.k8s.io/v1", "EndpointSlice", nil, map[string]any{"a": "b"}, nil),
			obj("discovery.k8s.io/v1", "EndpointSlice", nil, map[string]any{"a": "c"}, nil), true},
		"Deployment annotations": {
			obj("apps/v1", "Deployment", nil, nil, map[string]any{"a": "b"}),
			obj("apps/v1", "Deployment", nil, nil, map[string]any{"a": "c"}), true},
		"ConfigMap labels": {
			obj("v1", "ConfigMap", nil, map[string]any{"a": "b"}, nil),
			obj("v1", "ConfigMap", nil, map[string]any{"a": "c"}, nil), false},
		"ConfigMap data": {
			obj("v1", "ConfigMap", map[string]any{"data": map[string]any{"a": "b"}}, nil, nil),
			obj("v1", "ConfigMap", map[string]any{"data": map[string]any{"a": "c"}}, nil, nil), true},
	} {
		assert.Equal(t, tc.want, SpecChanged(schema.GroupKind{}, tc.old, tc.cur), name)
	}
}

// myDeployment is a type of one's own embedding a Deployment.
type myDeployment struct{ appsv1.Deployment }

func (d *myDeployment) DeepCopyObject() runtime.Object {
	return &myDeployment{Deployment: *d.Deployment.DeepCopy()}
}

// A type of one's own that embeds a Deployment follows the Deployment's
// rule when the resource is named deployments: its annotations move the
// generation. Before, only the Go type told the kind.
func TestKindRulesOfAResource(t *testing.T) {
	old := &myDeployment{Deployment: appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"a": "b"}}}}
	cur := old.DeepCopyObject().(*myDeployment)
	cur.Annotations["a"] = "c"
	assert.True(t, SpecChanged(schema.GroupKind{Group: "apps", Kind: "Deployment"}, old, cur))
	assert.False(t, SpecChanged(schema.GroupKind{Kind: "myDeployment"}, old, cur))
}
