package apisim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/listwatch/listwatch/internal/kinds"
	"github.com/listwatch/listwatch/internal/objkey"
)

// codec turns Go objects of one resource into stored versions: it picks
// the canonical Go form, stamps type information and encodes JSON (and
// protobuf for built-in types) once per write.
type codec struct {
	res    Resource
	scheme *runtime.Scheme
	typed  reflect.Type // canonical type for Protobuf resources (a pointer type); nil otherwise
	// known is the Go type of a JSON-only resource's kind when the scheme
	// knows it: its objects are stored unstructured in the shape that
	// type encodes to, as kube-apiserver stores them.
	known reflect.Type
	// field numbers of ListMeta and Items in the protobuf list message
	listMetaField, listItemsField int
}

// protoMarshaler is implemented by every k8s.io/api type.
type protoMarshaler interface {
	Marshal() ([]byte, error)
}

func newCodec(res Resource, scheme *runtime.Scheme) (codec, error) {
	c := codec{res: res, scheme: scheme}
	if res.Version == "" || res.Resource == "" || res.Kind == "" || res.ListKind == "" {
		return c, fmt.Errorf("apisim: resource %+v needs Version, Resource, Kind and ListKind", res)
	}
	if !res.Protobuf {
		// Recognizes, not New: New also makes metav1's kinds (Status,
		// APIGroup, ...) of any group, which a custom resource may be named.
		if scheme.Recognizes(res.GroupVersionKind()) {
			obj, _ := scheme.New(res.GroupVersionKind())
			c.known = reflect.TypeOf(obj)
		}
		return c, nil
	}
	obj, err := scheme.New(res.GroupVersionKind())
	if err != nil {
		return c, fmt.Errorf("apisim: resource %s has Protobuf set but its kind is not in the scheme: %w", res.GroupResource(), err)
	}
	if _, ok := obj.(protoMarshaler); !ok {
		return c, fmt.Errorf("apisim: kind %s cannot be marshalled to protobuf", res.Kind)
	}
	list, err := scheme.New(res.GroupVersion().WithKind(res.ListKind))
	if err != nil {
		return c, fmt.Errorf("apisim: resource %s has Protobuf set but its list kind is not in the scheme: %w", res.GroupResource(), err)
	}
	c.typed = reflect.TypeOf(obj)
	c.listMetaField, c.listItemsField = protoFieldNumber(list, "ListMeta"), protoFieldNumber(list, "Items")
	if c.listMetaField == 0 || c.listItemsField == 0 {
		return c, fmt.Errorf("apisim: list kind %s has no protobuf metadata/items fields", res.ListKind)
	}
	return c, nil
}

// protoFieldNumber reads the protobuf field number of a struct field from
// its `protobuf:"bytes,N,..."` tag.
func protoFieldNumber(obj runtime.Object, field string) int {
	f, ok := reflect.TypeOf(obj).Elem().FieldByName(field)
	if !ok {
		return 0
	}
	parts := strings.Split(f.Tag.Get("protobuf"), ",")
	if len(parts) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(parts[1])
	return n
}

// canonical returns a private copy of obj in the resource's canonical Go
// form, with apiVersion and kind set, as it would be stored: sent, then
// stored.
func (c codec) canonical(obj runtime.Object) (runtime.Object, error) {
	out, err := c.sent(obj)
	if err != nil {
		return nil, err
	}
	return c.stored(out)
}

// sent returns a private copy of obj in the resource's canonical Go form,
// with apiVersion and kind set, holding what the request holds: as
// kube-apiserver's strategies see a request decoded into its type, an
// empty list is not an absent one (on a JSON-only resource of a known
// kind, one the type would refuse is an error). stored makes it what the
// server keeps.
func (c codec) sent(obj runtime.Object) (runtime.Object, error) {
	if objkey.IsNil(obj) {
		return nil, fmt.Errorf("apisim: nil object for %s", c.res.GroupResource())
	}
	var out runtime.Object
	switch {
	case c.typed != nil && reflect.TypeOf(obj) == c.typed:
		out = obj.DeepCopyObject()
	case c.typed != nil:
		u, err := toUnstructured(obj)
		if err != nil {
			return nil, err
		}
		out = reflect.New(c.typed.Elem()).Interface().(runtime.Object)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, out); err != nil {
			return nil, fmt.Errorf("apisim: convert %T to %s: %w", obj, c.res.Kind, err)
		}
	default: // unstructured, whatever Go type obj has: one form in the store
		u, err := toUnstructured(obj)
		if err != nil {
			return nil, err
		}
		if c.known != nil {
			if _, err := c.knownShape(u); err != nil {
				return nil, err
			}
		}
		out = &unstructured.Unstructured{Object: u}
	}
	if _, err := meta.Accessor(out); err != nil {
		return nil, fmt.Errorf("apisim: %T has no object metadata: %w", obj, err)
	}
	out.GetObjectKind().SetGroupVersionKind(c.res.GroupVersionKind())
	return out, nil
}

// stored returns obj, of the form sent returns, as the server stores it:
// a JSON-only resource's object of a known kind in its type's shape
// (knownShape), a typed one as its encoding keeps it (asStored); in both
// an empty list is none, as it is omitted.
func (c codec) stored(obj runtime.Object) (runtime.Object, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok && c.known != nil {
		shaped, err := c.knownShape(u.Object)
		if err != nil {
			return nil, err
		}
		u.Object = shaped
		u.SetGroupVersionKind(c.res.GroupVersionKind())
		return u, nil
	}
	return c.asStored(obj)
}

// knownShape returns u in the shape its kind's Go type gives it, as
// kube-apiserver decodes an object into its type and stores that: the
// fields the type always has ("resources": {} in a container), none it
// lacks (a field name in another case is none of its fields). A u that
// does not fit the type is an error, by the rules the server decodes by
// (a number too large for its field is one; the unstructured converter
// would cut it).
func (c codec) knownShape(u map[string]any) (map[string]any, error) {
	b, err := json.Marshal(u)
	if err != nil {
		return nil, fmt.Errorf("apisim: encode %s: %w", c.res.Kind, err)
	}
	typed := reflect.New(c.known.Elem()).Interface().(runtime.Object)
	if err := utiljson.Unmarshal(b, typed); err != nil {
		return nil, fmt.Errorf("apisim: decode %s: %w", c.res.Kind, err)
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
}

// asStored returns obj as kube-apiserver holds it: what its encoding keeps
// (a metav1.Time keeps whole seconds, in protobuf and JSON alike). An
// object written back as it was read is then the same as the one stored,
// and writes nothing, as in kube-apiserver; before, the nanoseconds of a
// time given through Objects, or set here (creationTimestamp), made it a
// change. Objects of JSON-only resources hold their times as text already.
func (c codec) asStored(obj runtime.Object) (runtime.Object, error) {
	if c.typed == nil {
		return obj, nil
	}
	b, err := obj.(protoMarshaler).Marshal()
	if err != nil {
		return nil, fmt.Errorf("apisim: encode %s as protobuf: %w", c.res.Kind, err)
	}
	stored := reflect.New(c.typed.Elem()).Interface().(runtime.Object)
	if err := stored.(interface{ Unmarshal([]byte) error }).Unmarshal(b); err != nil {
		return nil, fmt.Errorf("apisim: decode %s from protobuf: %w", c.res.Kind, err)
	}
	stored.GetObjectKind().SetGroupVersionKind(c.res.GroupVersionKind())
	return stored, nil
}

// decode parses a request body (JSON) into the canonical form. A body
// of a kind's type (a built-in type's, or a JSON-only resource's known
// kind) is decoded into that type as kube-apiserver's JSON serializer
// decodes it (case-sensitive field names, no float for an integer field,
// no number too large for one); one the type refuses is a
// *apierrors.StatusError, 400 BadRequest in the server's words. Other
// errors are the body's: the caller words them.
func (c codec) decode(body []byte) (runtime.Object, error) {
	var obj runtime.Object
	u := &unstructured.Unstructured{}
	if c.typed == nil {
		if err := u.UnmarshalJSON(body); err != nil {
			return nil, err
		}
		obj = u
	}
	if t := cmp.Or(c.typed, c.known); t != nil {
		typed := reflect.New(t.Elem()).Interface().(runtime.Object)
		if err := utiljson.Unmarshal(body, typed); err != nil {
			return nil, c.refused(body, err)
		}
		if c.typed != nil {
			obj = typed
		}
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if (gvk.Kind != "" && gvk.Kind != c.res.Kind) || (gvk.Version != "" && gvk.GroupVersion() != c.res.GroupVersion()) {
		return nil, fmt.Errorf("the body is a %s, not a %s", gvk, c.res.GroupVersionKind())
	}
	obj.GetObjectKind().SetGroupVersionKind(c.res.GroupVersionKind())
	return obj, nil
}

// refused is kube-apiserver's answer to a body that its kind's type
// refuses, err (transformDecodeError in k8s.io/apiserver's
// pkg/endpoints/handlers/rest.go): the kind and version named are the
// body's, or the resource's where the body names none, as the handler
// decodes with the resource's as defaults.
func (c codec) refused(body []byte, err error) error {
	var tm metav1.TypeMeta
	if json.Unmarshal(body, &tm) != nil {
		return err
	}
	gvk := schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind)
	if gvk.Kind == "" {
		gvk.Kind = c.res.Kind
	}
	if gvk.Group == "" && gvk.Version == "" {
		gvk.Version = c.res.Version
	}
	return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, c.res.Kind, err))
}

// newVersion encodes a canonical object that the caller has finished
// stamping and will not modify any more.
func (c codec) newVersion(obj runtime.Object, rv uint64, deleted bool) (*version, error) {
	obj, err := c.asStored(obj) // with the times set here since canonical
	if err != nil {
		return nil, err
	}
	m, _ := meta.Accessor(obj) // canonical objects always have metadata
	v := &version{
		namespace: m.GetNamespace(),
		name:      m.GetName(),
		uid:       string(m.GetUID()),
		rv:        rv,
		deleted:   deleted,
		obj:       obj,
		labels:    m.GetLabels(),
	}
	v.key = objectKey(v.namespace, v.name)
	// An unstructured object of a kind with fields of its own (a
	// JSON-only events.k8s.io Event) is read as its type for them, as the
	// server reads it.
	if v.fields, err = kinds.FieldsOf(c.res.GroupResource(), m); err != nil {
		return nil, fmt.Errorf("apisim: %s %q: %w", c.res.Kind, v.key, err)
	}
	if v.json, err = json.Marshal(obj); err != nil {
		return nil, fmt.Errorf("apisim: encode %s %q as JSON: %w", c.res.Kind, v.key, err)
	}
	if c.typed != nil {
		if v.proto, err = obj.(protoMarshaler).Marshal(); err != nil {
			return nil, fmt.Errorf("apisim: encode %s %q as protobuf: %w", c.res.Kind, v.key, err)
		}
	}
	return v, nil
}

// restamped returns a copy of v's object with its resourceVersion set to rv,
// as a new version (for deletions and selector exits).
func (c codec) restamped(v *version, rv uint64, deleted bool) (*version, error) {
	obj := v.obj.DeepCopyObject()
	m, _ := meta.Accessor(obj)
	m.SetResourceVersion(strconv.FormatUint(rv, 10))
	return c.newVersion(obj, rv, deleted)
}

// partial returns the metadata-only encodings of v (made once).
func (v *version) partial() (jsonBytes, pb []byte) {
	v.partialOnce.Do(func() {
		m, _ := meta.Accessor(v.obj)
		p := meta.AsPartialObjectMetadata(m)
		p.TypeMeta = metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}
		v.partialJSON, _ = json.Marshal(p) // plain struct: cannot fail
		v.partialPB, _ = p.Marshal()
	})
	return v.partialJSON, v.partialPB
}

// partialAs encodes v metadata-only in another meta.k8s.io version
// (v1beta1), on every call: no client of note asks for it.
func (v *version) partialAs(f format) encoded {
	m, _ := meta.Accessor(v.obj)
	p := meta.AsPartialObjectMetadata(m)
	p.TypeMeta = metav1.TypeMeta{APIVersion: f.metaAPIVersion(), Kind: "PartialObjectMetadata"}
	if f.proto {
		pb, _ := p.Marshal() // plain struct: cannot fail
		return encoded{apiVersion: p.APIVersion, kind: p.Kind, body: pb}
	}
	js, _ := json.Marshal(p) // plain struct: cannot fail
	return encoded{body: js}
}

func objectKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

func toUnstructured(obj runtime.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return runtime.DeepCopyJSON(u.Object), nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("apisim: convert %T to unstructured: %w", obj, err)
	}
	return m, nil
}

// convertTo returns a private copy of a stored object as a T: the same Go
// type when it matches, else an unstructured, metadata-only or typed
// conversion.
func convertTo[T runtime.Object](obj runtime.Object) (T, error) {
	var zero T
	if t, ok := obj.(T); ok {
		return t.DeepCopyObject().(T), nil
	}
	tt := reflect.TypeFor[T]()
	if tt.Kind() != reflect.Pointer || tt.Elem().Kind() != reflect.Struct {
		return zero, fmt.Errorf("apisim: cannot convert %T to %v: T must be a pointer to a struct", obj, tt)
	}
	out := reflect.New(tt.Elem()).Interface().(T)
	switch o := any(out).(type) {
	case *metav1.PartialObjectMetadata:
		m, err := meta.Accessor(obj)
		if err != nil {
			return zero, err
		}
		*o = *meta.AsPartialObjectMetadata(m).DeepCopy()
		o.TypeMeta = metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}
	case *unstructured.Unstructured:
		m, err := toUnstructured(obj)
		if err != nil {
			return zero, err
		}
		o.Object = m
	default:
		m, err := toUnstructured(obj)
		if err != nil {
			return zero, err
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, out); err != nil {
			return zero, fmt.Errorf("apisim: convert %T to %T: %w", obj, out, err)
		}
	}
	return out, nil
}
