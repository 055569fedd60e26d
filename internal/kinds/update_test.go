package kinds

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestConditionalUpdateOnly(t *testing.T) {
	for gvr, want := range map[schema.GroupVersionResource]bool{
		{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}:             true,
		{Group: "coordination.k8s.io", Resource: "leases"}:                            true,
		{Version: "v1", Resource: "pods"}:                                             false,
		{Group: "resource.k8s.io", Version: "v1", Resource: "devicetaintrules"}:       true,
		{Group: "resource.k8s.io", Version: "v1beta2", Resource: "devicetaintrules"}:  false,
		{Group: "resource.k8s.io", Version: "v1alpha3", Resource: "devicetaintrules"}: false,
		{Group: "resource.k8s.io", Resource: "devicetaintrules"}:                      false,
	} {
		assert.Equal(t, want, ConditionalUpdateOnly(gvr), gvr.String())
	}
}

func TestCreateOnUpdate(t *testing.T) {
	for gr, want := range map[schema.GroupResource]bool{
		{Resource: "services"}:                                                 true,
		{Resource: "endpoints"}:                                                true,
		{Resource: "events"}:                                                   true,
		{Group: "events.k8s.io", Resource: "events"}:                           true,
		{Group: "coordination.k8s.io", Resource: "leases"}:                     true,
		{Group: "rbac.authorization.k8s.io", Resource: "roles"}:                true,
		{Group: "node.k8s.io", Resource: "runtimeclasses"}:                     true,
		{Resource: "pods"}:                                                     false,
		{Resource: "configmaps"}:                                               false,
		{Group: "apps", Resource: "deployments"}:                               false,
		{Group: "example.com", Resource: "widgets"}:                            false,
		{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}: false,
	} {
		assert.Equal(t, want, CreateOnUpdate(gr), gr.String())
	}
}
