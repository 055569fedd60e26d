package generation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
		assert.Equal(t, tc.want, SpecChanged(tc.old, tc.cur), name)
	}
}
