package apisim

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"
)

// Objects is direct access to one resource of a Server, without HTTP: the
// fast way for tests to create, change and delete objects while a client
// lists and watches over HTTP. Writes go through the same path as HTTP
// writes (same resourceVersions, same watch events).
//
// T is the Go type you work with: the resource's typed object (such as
// *corev1.Pod), *unstructured.Unstructured for any resource, or
// *metav1.PartialObjectMetadata for reads. Objects are copied in and out;
// the server never keeps or returns your pointers.
//
// The zero value is not usable; get one from Of. Objects is safe for
// concurrent use.
type Objects[T runtime.Object] struct {
	s   *Server
	res Resource
}

// Of returns direct access to res on s as T. res must be registered.
func Of[T runtime.Object](s *Server, res Resource) Objects[T] {
	return Objects[T]{s: s, res: res}
}

// Create stores obj as a new object and returns it as stored: uid,
// creationTimestamp, generation 1 and the new resourceVersion filled in.
// It fails with an AlreadyExists status error (apierrors.IsAlreadyExists)
// when the name is taken.
func (o Objects[T]) Create(obj T) (T, error) {
	return o.write(func(c *collection) (*version, error) { return o.s.create(c, obj, "") })
}

// Update replaces the object with obj's name, status included: the test
// stands for every writer of the cluster at once (a PUT over HTTP keeps the
// stored status of a kind with a status subresource, as kube-apiserver's
// does, and writes it only through .../status). When obj carries a
// resourceVersion other than "0" it must be the current one, else a
// Conflict status error (apierrors.IsConflict); without one it replaces
// whatever is stored, even for the resources whose PUT must name one
// (custom resources, leases).
// NotFound when the object does not exist, but for the resources
// kube-apiserver creates on an update (services, endpoints, events,
// leases, RBAC roles and bindings, ...: kinds.CreateOnUpdate): it creates
// the object as Create does, and watchers get it as ADDED.
func (o Objects[T]) Update(obj T) (T, error) {
	return o.write(func(c *collection) (*version, error) {
		v, _, err := o.s.update(c, obj, "", writeWhole)
		return v, err
	})
}

// Delete removes an object (namespace "" for cluster-scoped resources) and
// returns its last state stamped with the deletion's resourceVersion, as
// watchers see it in the DELETED event. NotFound when it does not exist.
func (o Objects[T]) Delete(namespace, name string) (T, error) {
	return o.write(func(c *collection) (*version, error) { return o.s.remove(c, namespace, name, nil) })
}

// Expire deletes the objects named (namespace "" for cluster-scoped
// resources) all at one resourceVersion, as etcd deletes the keys of an
// expired lease in one transaction: kube-apiserver puts the Events created
// within a minute of each other on one lease, and watchers get a DELETED
// event for each, every one at that revision. It returns their
// tombstones; NotFound, deleting none, when one does not exist.
func (o Objects[T]) Expire(namespace string, names ...string) ([]T, error) {
	c, err := o.s.collection(o.res)
	if err != nil {
		return nil, err
	}
	vs, err := o.s.removeTogether(c, namespace, names)
	if err != nil {
		return nil, err
	}
	out := make([]T, len(vs))
	for i, v := range vs {
		if out[i], err = convertTo[T](v.obj); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Get returns the current state of an object, or a NotFound status error.
func (o Objects[T]) Get(namespace, name string) (T, error) {
	var zero T
	c, err := o.s.collection(o.res)
	if err != nil {
		return zero, err
	}
	o.s.mu.Lock()
	v := c.store.current(objectKey(namespace, name))
	o.s.mu.Unlock()
	if v == nil {
		return zero, notFound(c, name)
	}
	return convertTo[T](v.obj)
}

// List returns the current objects in key order (namespace "" for all
// namespaces) and the resourceVersion of that state.
func (o Objects[T]) List(namespace string) ([]T, string, error) {
	c, err := o.s.collection(o.res)
	if err != nil {
		return nil, "", err
	}
	o.s.mu.Lock()
	rv := o.s.rv
	var vs []*version
	c.store.scan(scopePrefix(c.res, namespace), "", rv, func(v *version) bool {
		vs = append(vs, v)
		return true
	})
	o.s.mu.Unlock()
	out := make([]T, 0, len(vs))
	for _, v := range vs {
		t, err := convertTo[T](v.obj)
		if err != nil {
			return nil, "", err
		}
		out = append(out, t)
	}
	return out, strconv.FormatUint(rv, 10), nil
}

func (o Objects[T]) write(do func(*collection) (*version, error)) (T, error) {
	var zero T
	c, err := o.s.collection(o.res)
	if err != nil {
		return zero, err
	}
	v, err := do(c)
	if err != nil {
		return zero, err
	}
	return convertTo[T](v.obj)
}

// Populate creates n objects of res through the direct path, spread round
// robin over namespaces (ignored for cluster-scoped resources; nil or empty
// means "default"). makeObj builds object i for a namespace; it must set a
// unique name. It stops at the first error.
func (s *Server) Populate(res Resource, n int, namespaces []string, makeObj func(namespace string, i int) runtime.Object) error {
	c, err := s.collection(res)
	if err != nil {
		return err
	}
	if len(namespaces) == 0 {
		namespaces = []string{"default"}
	}
	for i := range n {
		ns := ""
		if res.Namespaced {
			ns = namespaces[i%len(namespaces)]
		}
		obj := makeObj(ns, i)
		if _, err := s.create(c, obj, ns); err != nil {
			return fmt.Errorf("apisim: populate %s, object %d: %w", res.GroupResource(), i, err)
		}
	}
	return nil
}

// scopePrefix returns the key prefix of a list scope: "ns/" for one
// namespace of a namespaced resource, "" for everything.
func scopePrefix(res Resource, namespace string) string {
	if res.Namespaced && namespace != "" {
		return namespace + "/"
	}
	return ""
}
