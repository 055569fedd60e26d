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
