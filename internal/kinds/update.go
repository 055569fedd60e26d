package kinds

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ConditionalUpdateOnly reports whether kube-apiserver refuses an update of
// the built-in resource gvr that names no metadata.resourceVersion: whether
// its strategy's AllowUnconditionalUpdate is false, status subresource
// included. Custom resources refuse one too (see BuiltIn); this does not
// check the group. An empty version stands for any version but those
// conditionalSince exempts.
func ConditionalUpdateOnly(gvr schema.GroupVersionResource) bool {
	gr := gvr.GroupResource()
	if conditionalOnly[gr] {
		return true
	}
	exempt, ok := conditionalSince[gr]
	return ok && gvr.Version != "" && !slices.Contains(exempt, gvr.Version)
}

// conditionalOnly are the built-in resources whose strategy refuses an
// update without a resourceVersion in every version (k8s.io/kubernetes
// v1.37 pkg/registry/*/strategy.go, and those of apiextensions-apiserver
// and kube-aggregator).
var conditionalOnly = map[schema.GroupResource]bool{
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}:                 true,
	{Group: "apiregistration.k8s.io", Resource: "apiservices"}:                             true,
	{Group: "coordination.k8s.io", Resource: "leases"}:                                     true,
	{Group: "coordination.k8s.io", Resource: "leasecandidates"}:                            true,
	{Group: "policy", Resource: "poddisruptionbudgets"}:                                    true,
	{Group: "certificates.k8s.io", Resource: "clustertrustbundles"}:                        true,
	{Group: "certificates.k8s.io", Resource: "podcertificaterequests"}:                     true,
	{Group: "node.k8s.io", Resource: "runtimeclasses"}:                                     true,
	{Group: "storage.k8s.io", Resource: "csidrivers"}:                                      true,
	{Group: "storage.k8s.io", Resource: "csinodes"}:                                        true,
	{Group: "storage.k8s.io", Resource: "csistoragecapacities"}:                            true,
	{Group: "storage.k8s.io", Resource: "volumeattachments"}:                               true,
	{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}:   true,
	{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"}:     true,
	{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"}:       true,
	{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicybindings"}: true,
	{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicies"}:         true,
	{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicybindings"}:   true,
	{Group: "internal.apiserver.k8s.io", Resource: "storageversions"}:                      true,
	{Group: "storagemigration.k8s.io", Resource: "storageversionmigrations"}:               true,
	{Group: "scheduling.k8s.io", Resource: "podgroups"}:                                    true,
	{Group: "scheduling.k8s.io", Resource: "compositepodgroups"}:                           true,
	{Group: "scheduling.k8s.io", Resource: "workloads"}:                                    true,
	{Group: "resource.k8s.io", Resource: "resourcepoolstatusrequests"}:                     true,
	{Group: "lifecycle.k8s.io", Resource: "evictions"}:                                     true,
	{Group: "lifecycle.k8s.io", Resource: "evictionrequests"}:                              true,
}

// conditionalSince are the built-in resources whose strategy refuses an
// update without a resourceVersion in all versions but those listed:
// DeviceTaintRules from v1 on (devicetaintrule/strategy.go: v1alpha3 and
// v1beta2 keep their unconditional updates).
var conditionalSince = map[schema.GroupResource][]string{
	{Group: "resource.k8s.io", Resource: "devicetaintrules"}: {"v1alpha3", "v1beta2"},
}

// CreateOnUpdate reports whether kube-apiserver creates the object of the
// resource gr that an update names when none is stored, where other
// resources answer 404 NotFound: whether its strategy's
// AllowCreateOnUpdate is true (k8s.io/kubernetes v1.37
// pkg/registry/*/*/strategy.go). The generic store then creates it as a
// POST would, whatever resourceVersion the request names (201 Created),
// before it asks for a resourceVersion where ConditionalUpdateOnly
// requires one: an update of a missing Lease without one creates it too.
// A UID in the request is a precondition that the missing object fails
// (409 Conflict). A Service's status strategy inherits the Service
// strategy's answer, so a PUT to the /status of a missing Service creates
// it as well. Custom resources (apiextensions-apiserver's
// customResourceStrategy), CustomResourceDefinitions and APIServices
// answer false.
func CreateOnUpdate(gr schema.GroupResource) bool { return createOnUpdate[gr] }

// createOnUpdate are the resources whose strategy's AllowCreateOnUpdate is
// true. events.k8s.io serves Events from the storage of core Events, and
// so with its strategy.
var createOnUpdate = map[schema.GroupResource]bool{
	{Resource: "services"}:                                                true,
	{Resource: "endpoints"}:                                               true,
	{Resource: "events"}:                                                  true,
	{Resource: "limitranges"}:                                             true,
	{Group: "events.k8s.io", Resource: "events"}:                          true,
	{Group: "coordination.k8s.io", Resource: "leases"}:                    true,
	{Group: "coordination.k8s.io", Resource: "leasecandidates"}:           true,
	{Group: "rbac.authorization.k8s.io", Resource: "roles"}:               true,
	{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}:        true,
	{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"}:        true,
	{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"}: true,
	{Group: "node.k8s.io", Resource: "runtimeclasses"}:                    true,
}
