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
