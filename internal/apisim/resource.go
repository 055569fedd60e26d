package apisim

import (
	"path"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource describes one kind of object the simulator serves. Register it
// with Server.Register (or the WithResources option) before using it.
//
// Resource is a plain comparable value; the zero value is not a valid
// resource. Protobuf may be true only for kinds known to the server's
// scheme (built-in k8s.io/api types): the simulator then stores them as
// typed objects and can answer application/vnd.kubernetes.protobuf.
//
// A kind the server's scheme knows has a status subresource when its Go
// type has a Status field (pods, deployments, nodes, namespaces, but not
// configmaps); any other kind, such as a custom resource, when
// StatusSubresource is set, as a CustomResourceDefinition enables one.
type Resource struct {
	Group    string // API group; "" for the core group
	Version  string // API version, e.g. "v1"
	Resource string // lower-case plural used in URLs, e.g. "pods"
	Kind     string // object kind, e.g. "Pod"
	ListKind string // list kind, e.g. "PodList"

	Namespaced bool // objects live in namespaces (URLs carry /namespaces/{ns})
	Protobuf   bool // built-in type: protobuf is offered besides JSON

	// StatusSubresource: a kind unknown to the scheme has a status
	// subresource (see above).
	StatusSubresource bool
}

// Pods returns the descriptor of core/v1 pods.
func Pods() Resource { return core("pods", "Pod", true) }

// ConfigMaps returns the descriptor of core/v1 configmaps.
func ConfigMaps() Resource { return core("configmaps", "ConfigMap", true) }

// Secrets returns the descriptor of core/v1 secrets.
func Secrets() Resource { return core("secrets", "Secret", true) }

// Namespaces returns the descriptor of core/v1 namespaces (cluster-scoped).
func Namespaces() Resource { return core("namespaces", "Namespace", false) }

// Nodes returns the descriptor of core/v1 nodes (cluster-scoped).
func Nodes() Resource { return core("nodes", "Node", false) }

// Deployments returns the descriptor of apps/v1 deployments.
func Deployments() Resource {
	return Resource{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment",
		ListKind: "DeploymentList", Namespaced: true, Protobuf: true}
}

// CustomResource returns the descriptor of a custom resource served like a
// CustomResourceDefinition: JSON only, objects kept as unstructured, no
// status subresource (set StatusSubresource for one).
func CustomResource(group, version, plural, kind string, namespaced bool) Resource {
	return Resource{Group: group, Version: version, Resource: plural, Kind: kind,
		ListKind: kind + "List", Namespaced: namespaced}
}

func core(plural, kind string, namespaced bool) Resource {
	return Resource{Version: "v1", Resource: plural, Kind: kind, ListKind: kind + "List",
		Namespaced: namespaced, Protobuf: true}
}

// GroupVersion returns the resource's API group and version.
func (r Resource) GroupVersion() schema.GroupVersion {
	return schema.GroupVersion{Group: r.Group, Version: r.Version}
}

// GroupVersionKind returns the kind of the resource's objects.
func (r Resource) GroupVersionKind() schema.GroupVersionKind {
	return r.GroupVersion().WithKind(r.Kind)
}

// GroupResource returns the group and plural, as used in error messages
// ("pods", "deployments.apps").
func (r Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.Group, Resource: r.Resource}
}

// APIVersion returns the apiVersion field of the resource's objects: "v1"
// for the core group, "group/version" otherwise.
func (r Resource) APIVersion() string { return r.GroupVersion().String() }

// Path returns the URL path of the collection: namespaced resources with a
// non-empty namespace get /namespaces/{namespace}; otherwise the path lists
// across all namespaces (or the cluster-scoped collection).
func (r Resource) Path(namespace string) string {
	p := r.prefix()
	if r.Namespaced && namespace != "" {
		p = path.Join(p, "namespaces", namespace)
	}
	return path.Join(p, r.Resource)
}

// ObjectPath returns the URL path of one object.
func (r Resource) ObjectPath(namespace, name string) string {
	return path.Join(r.Path(namespace), name)
}

func (r Resource) prefix() string {
	if r.Group == "" {
		return "/api/" + r.Version
	}
	return "/apis/" + r.Group + "/" + r.Version
}
