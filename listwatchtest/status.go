package listwatchtest

import (
	"errors"
	"net/http"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/listwatch/listwatch/internal/kinds"
	"github.com/listwatch/listwatch/internal/semantic"
	"github.com/listwatch/listwatch/internal/strategy"
)

// UpdateStatus writes obj's status to the stored object of obj's namespace
// and name, as a PUT to its /status subresource does, and returns a copy
// of what it stored. Everything else is the stored object's, whatever obj
// has: its spec and the rest of its content, and all of its metadata
// (labels, annotations, finalizers, ownerReferences, managedFields, the
// deletionTimestamp and metadata.generation, which a status write does
// not move on), as kube-apiserver's status strategies have it for custom
// resources and the kinds whose strategy calls
// metav1.ResetObjectMetaForStatus, and its field manager for
// managedFields. The checks are Update's: apierrors.IsNotFound if no such
// object exists, apierrors.IsConflict for a resourceVersion that is not
// the stored one or another UID, apierrors.IsInvalid for no
// resourceVersion where the resource requires one, and for the deletion
// marks and finalizers Update refuses (of a built-in kind: the server
// validates the metadata the request sends, after the kind's status
// strategy has put back what it keeps of the stored: a Pod's
// deletionTimestamp, a ResourceClaim's finalizers), and
// apierrors.IsBadRequest if obj cannot be copied. A status write that
// changes nothing writes nothing, as Update's: it returns a copy of the
// stored object and watchers get no event; one that does gives the object
// a new resourceVersion, which watchers get as MODIFIED.
//
// Of a missing Service, UpdateStatus creates obj, as Update does (see
// there): kube-apiserver's Service status strategy inherits the Service
// strategy's create on update. It stores obj as Create does, status
// included, where the server's create clears a Service's status.
//
// For a resource without a status subresource (a type without a Status
// field, such as *corev1.ConfigMap, or an *unstructured.Unstructured
// without WithStatusSubresource), it is an error whatever is stored,
// apierrors.IsNotFound, as kube-apiserver answers 404: for a custom
// resource, its handler's NotFound of the object (widgets.example.com "w"
// not found); for another, the 404 of a path it does not serve, as
// client-go reports it (the server could not find the requested resource
// (put configmaps x)).
//
// Some of kube-apiserver's older strategies take more from a /status PUT
// than its status: those of Pods, Deployments, Nodes, Services, Jobs and
// other kinds of k8s.io/api write the labels, annotations, finalizers or
// ownerReferences the request sends, each keeping some (a Pod its
// ownerReferences, a Deployment its labels). A Source does not: change
// metadata with Update, as controllers do. Of the stored status, it keeps
// what a Pod's status strategy keeps when obj leaves it out (qosClass,
// observedGeneration, the claim statuses: a nil list, not an empty one),
// and a CertificateSigningRequest's Approved and Denied conditions where
// obj has as many of each as stored (kube-apiserver refuses one with
// more or fewer; a Source writes obj's).
func (s *Source[T]) UpdateStatus(obj T) (T, error) {
	var zero T
	if isNil(obj) {
		return zero, errors.New("listwatchtest: UpdateStatus: the object is nil, or embeds its metadata through a nil pointer")
	}
	if !s.status {
		return zero, s.noStatus(obj.GetName())
	}
	obj, err := copyIn(obj)
	if err != nil {
		return zero, err
	}
	asStored(obj)
	s.mu.Lock()
	defer s.mu.Unlock()
	if created, ok, err := s.createOnUpdate(obj); ok {
		return created, err
	}
	old, err := s.replaced(obj)
	if err != nil {
		return zero, err
	}
	if _, custom := any(obj).(*unstructured.Unstructured); !custom || kinds.BuiltIn(s.resource.Group) {
		// A built-in kind's status strategy takes the request's metadata,
		// but what strategy.StatusMeta keeps, and the server then
		// validates it; a custom resource's takes none. (obj is a copy,
		// and only its status is written.)
		if keep := strategy.StatusMeta(s.kind); keep != nil {
			keep(obj, deepCopy(old))
		}
		if errs := strategy.DeletionMarkErrors(obj, old); len(errs) > 0 {
			return zero, apierrors.NewInvalid(s.kind, obj.GetName(), errs)
		}
	}
	cur := deepCopy(old)
	setStatus(cur, obj)
	strategy.KeepOnStatusUpdate(cur, old)
	if semantic.Equal(old, cur) {
		return deepCopy(old), nil // nothing to write, as kube-apiserver's GuaranteedUpdate finds
	}
	return deepCopy(s.src.Update(cur)), nil
}

// noStatus returns kube-apiserver's answer to a PUT to the /status of
// name, of a resource that has none.
func (s *Source[T]) noStatus(name string) error {
	if _, ok := any(*new(T)).(*unstructured.Unstructured); ok && !kinds.BuiltIn(s.resource.Group) {
		// apiextensions-apiserver's handler of custom resources
		// (customresource_handler.go, ServeHTTP: "default:").
		return apierrors.NewNotFound(s.resource, name)
	}
	// No route: the server's mux answers "404 page not found" as text,
	// which client-go makes into a StatusError (rest.Request's
	// newUnstructuredResponseError).
	return apierrors.NewGenericServerResponse(http.StatusNotFound, http.MethodPut, s.resource, name, "404 page not found", 0, true)
}

// hasStatus reports whether the resource of objects of Go type typ has a
// status subresource: for a pointer to a struct with a Status field (a
// Pod, a Deployment, a type of one's own embedding either), always, as
// every kind of k8s.io/api with one that can be listed and updated has
// /status; for an *unstructured.Unstructured, if WithStatusSubresource
// says so (the CRD's choice); for other types, never.
func hasStatus(typ reflect.Type, unstructuredHasOne bool) bool {
	if typ == reflect.TypeFor[*unstructured.Unstructured]() {
		return unstructuredHasOne
	}
	if typ.Kind() != reflect.Pointer || typ.Elem().Kind() != reflect.Struct {
		return false
	}
	_, ok := typ.Elem().FieldByName("Status")
	return ok
}

// setStatus makes dst's status src's: its Status field, or its "status"
// (none if src has none) of an *unstructured.Unstructured. dst then shares
// the status's maps, slices and pointers with src: src is a copy of its
// own.
func setStatus(dst, src any) {
	if du, ok := dst.(*unstructured.Unstructured); ok {
		su := src.(*unstructured.Unstructured)
		if st, ok := su.Object["status"]; ok {
			du.Object["status"] = st
		} else {
			delete(du.Object, "status")
		}
		return
	}
	d, s := statusField(dst), statusField(src)
	if d.IsValid() && s.IsValid() {
		d.Set(s)
	}
}

// statusField returns obj's Status field, settable, or the zero Value if
// it has none (or one behind a nil embedded pointer).
func statusField(obj any) reflect.Value {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}
	}
	f, ok := v.Elem().Type().FieldByName("Status")
	if !ok {
		return reflect.Value{}
	}
	fv, err := v.Elem().FieldByIndexErr(f.Index)
	if err != nil || !fv.CanSet() {
		return reflect.Value{}
	}
	return fv
}
