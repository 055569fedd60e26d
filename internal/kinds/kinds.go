// Package kinds finds the group, version, kind and resource of a Go type
// from k8s.io/api without a scheme: the package path of the type names the
// group directory and the version, and the type's name is the kind. It also
// knows the field selectors kube-apiserver serves for a resource (fields.go),
// for the simulator (internal/apisim) and listwatchtest.
package kinds

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const apiPrefix = "k8s.io/api/"

// groups maps the directory of a k8s.io/api package to its API group where
// the group is not simply the directory name followed by ".k8s.io".
var groups = map[string]string{
	"core":              "",
	"apps":              "apps",
	"batch":             "batch",
	"autoscaling":       "autoscaling",
	"policy":            "policy",
	"rbac":              "rbac.authorization.k8s.io",
	"flowcontrol":       "flowcontrol.apiserver.k8s.io",
	"apiserverinternal": "internal.apiserver.k8s.io",
}

// Name is what errors and logs call the objects of T when the caller named
// nothing: the resource of a k8s.io/api type ("pods"), or "objects".
func Name[T any]() string {
	if _, gvr, err := Of[T](); err == nil {
		return gvr.Resource
	}
	return "objects"
}

// Of returns the GroupVersionKind and GroupVersionResource of T, which must
// be a pointer to a struct type of a k8s.io/api package, such as
// *corev1.Pod. For other types it returns an error saying to name the
// resource explicitly.
func Of[T any]() (schema.GroupVersionKind, schema.GroupVersionResource, error) {
	t := reflect.TypeFor[T]()
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	pkg := t.PkgPath()
	rest, ok := strings.CutPrefix(pkg, apiPrefix)
	dir, version, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || t.Kind() != reflect.Struct || strings.Contains(version, "/") {
		return schema.GroupVersionKind{}, schema.GroupVersionResource{},
			fmt.Errorf("cannot tell the API resource of %s: it is not a k8s.io/api type; name its group, version and resource explicitly", t)
	}
	group, known := groups[dir]
	if !known {
		group = dir + ".k8s.io"
	}
	gvk := schema.GroupVersionKind{Group: group, Version: version, Kind: t.Name()}
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	return gvk, gvr, nil
}

// servedGroups are the API groups with a dot that kube-apiserver v1.37
// serves itself, apiextensions' and the aggregator's included. Others
// under k8s.io are served through CRDs (gateway.networking.k8s.io,
// snapshot.storage.k8s.io, autoscaling.k8s.io), as custom resources.
var servedGroups = map[string]bool{
	"admissionregistration.k8s.io": true,
	"apiextensions.k8s.io":         true,
	"apiregistration.k8s.io":       true,
	"authentication.k8s.io":        true,
	"authorization.k8s.io":         true,
	"certificates.k8s.io":          true,
	"coordination.k8s.io":          true,
	"discovery.k8s.io":             true,
	"events.k8s.io":                true,
	"flowcontrol.apiserver.k8s.io": true,
	"internal.apiserver.k8s.io":    true,
	"lifecycle.k8s.io":             true,
	"networking.k8s.io":            true,
	"node.k8s.io":                  true,
	"rbac.authorization.k8s.io":    true,
	"resource.k8s.io":              true,
	"scheduling.k8s.io":            true,
	"storage.k8s.io":               true,
	"storagemigration.k8s.io":      true,
}

// BuiltIn reports whether kube-apiserver serves group itself: "" (core),
// a group without a dot (apps, batch, policy, autoscaling; a CRD's group
// must have one), or one of its own groups with a dot. Objects of any
// other group, k8s.io ones included, are custom resources.
func BuiltIn(group string) bool {
	return !strings.Contains(group, ".") || servedGroups[group]
}
