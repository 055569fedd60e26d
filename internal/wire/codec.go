package wire

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	jsoniter "github.com/json-iterator/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/internal/share"
)

// Codec knows how to turn the server's bytes for one object type into a T:
// how to make a new T, how to decode JSON and (for built-in types) protobuf
// into it, and which kind the server must say the object is.
//
// Build one with TypedCodec, UnstructuredCodec or MetadataCodec; the zero
// Codec is not usable. A Codec is immutable (but for the tables that intern
// strings and share parts) and safe for concurrent use by any number of
// decoders.
//
// Short strings decoded from JSON are shared between the objects, unless
// the codec was built WithoutStringInterning.
//
// Every object a Codec decodes carries the codec's apiVersion and kind in
// its TypeMeta (filled in when the server left them out, as it does for
// list items and protobuf objects), so JSON and protobuf give equal objects.
type Codec[T any] struct {
	gvk schema.GroupVersionKind // what the caller asked for

	// objAPIVersion and objKind stamp decoded objects; the strings are
	// shared by every object instead of being copied from the wire.
	objAPIVersion, objKind string
	// listKind is the kind a list body must have ("" accepts any: custom
	// resources choose their own list kind).
	listKind string
	// anyListKind: WithAnyListKind (a typed codec's listKind stays "").
	anyListKind bool
	// alsoAPIVersion and alsoKind are a second kind an object may have (a
	// metadata codec accepts both PartialObjectMetadata and the full
	// resource's kind).
	alsoAPIVersion, alsoKind string
	// anyKind accepts objects and lists of any kind (a metadata codec that
	// was not told the resource's kind); with sameVersion, only of
	// objAPIVersion (an unstructured codec).
	anyKind, sameVersion bool
	// fillListItem, when set, gives a JSON list item what it lacks from
	// its list's kind, before the item is checked.
	fillListItem func(obj T, listKind string)

	json    jsoniter.API
	strings *internTable // nil: WithoutStringInterning
	// WithSharedParts: parts shares the parts of objects decoded by the
	// compiled protobuf decoder (compiledProto) and of JSON decoded through
	// json (jsonShared), walk those of the others after decoding (one walk
	// at a time, walkMu).
	parts             *partTable
	compiledProto     bool
	jsonShared        bool
	walk              *share.Table
	walkMu            sync.Mutex
	internProtobuf    bool // WithProtobufInterning
	generatedProto    bool // withGeneratedUnmarshal
	dropManagedFields bool

	// readJSON decodes the iterator's next JSON value into a new T and
	// reports problems through it.Error.
	readJSON func(it *jsoniter.Iterator) T
	// kindOf reports what a JSON-decoded object says it is.
	kindOf func(obj T) (apiVersion, kind string)
	// stamp fills in the canonical apiVersion and kind.
	stamp func(obj T)
	// unmarshalProto decodes an object's protobuf bytes (without the
	// k8s\x00 envelope) into a new T; nil when T has no protobuf form.
	unmarshalProto func(data []byte) (T, error)
	// internProto shares the strings of a protobuf-decoded object with
	// the objects decoded before it (see intern_walk.go); nil: leave them.
	internProto func(obj T)
}

// CodecOption changes how a Codec decodes.
type CodecOption func(*codecOptions)

type codecOptions struct {
	dropManagedFields bool
	noInterning       bool
	protoInterning    bool
	generatedProto    bool // tests: decode protobuf with the generated Unmarshal
	sharedParts       bool
	anyListKind       bool     // WithAnyListKind
	strings           *Strings // WithStrings; nil: a table of the codec's own
}

// Strings is a table of interned strings (see WithoutStringInterning) that
// codecs can share, given to each WithStrings: the decoders of several
// resources, or of one resource in several namespaces, then hand out one
// copy of the strings they have in common, and pay the table's fixed cost
// (about 47 KiB of slots) once rather than each. It is bounded, as a
// codec's own table is, and safe for concurrent use.
type Strings struct{ t *internTable }

// NewStrings returns an empty table of interned strings.
func NewStrings() *Strings { return &Strings{t: newInternTable()} }

// WithStrings makes the codec intern strings in s, which other codecs may
// share, rather than in a table of its own. It does nothing with
// WithoutStringInterning, or with a nil s.
func WithStrings(s *Strings) CodecOption {
	return func(o *codecOptions) { o.strings = s }
}

// withGeneratedUnmarshal makes a codec decode protobuf with the types'
// generated Unmarshal instead of the compiled decoder (proto_decode.go),
// which tests and benchmarks compare it with.
func withGeneratedUnmarshal() CodecOption {
	return func(o *codecOptions) { o.generatedProto = true }
}

// WithoutStringInterning makes a typed or metadata codec copy every string
// it decodes. By default the codec interns strings of up to 128 bytes
// (namespaces, label keys and values, image and node names, condition
// types, ...) in a bounded table of its own, so that decoded objects share
// one copy of each, and managedFields' bytes and parsed quantities
// likewise: about a sixth less memory held per cached pod
// (BenchmarkJSONRetainedHeap, BenchmarkProtobufRetainedHeap), for a few
// percent more decode CPU with JSON and less with protobuf, whose strings
// would otherwise each be an allocation. Fields that differ in every
// object (name, uid, resourceVersion, pod IPs, container IDs) are always
// copied. Unstructured objects are not interned.
func WithoutStringInterning() CodecOption {
	return func(o *codecOptions) { o.noInterning = true }
}

// WithProtobufInterning matters only for a protobuf type that the codec
// cannot compile a decoder for (every k8s.io/api type compiles, and its
// objects are interned while decoding): such objects are decoded by their
// generated Unmarshal, which copies every string, and this option walks
// each object afterwards and swaps the strings of 16 bytes or more (and
// identical managedFields bytes) for the copies the table holds; see
// intern_walk.go. It does nothing with WithoutStringInterning.
func WithProtobufInterning() CodecOption {
	return func(o *codecOptions) { o.protoInterning = true }
}

// WithSharedParts makes the objects a codec decodes share their identical
// parts, so that the pods of one ReplicaSet, and the versions of one pod,
// hold one copy of what they have in common. A map, a slice or a
// pointed-to struct whose bytes equal those of one decoded shortly before
// (the same labels, owner reference, tolerations, ports, resource lists,
// security context) is given that one's value instead of being decoded
// again: less memory and less decode CPU. That is done while decoding for
// protobuf (proto_share.go) and for the JSON of typed and metadata codecs
// (json_share.go); types decoded by a generated Unmarshal are shared by
// internal/share's walk after decoding, which costs CPU. Unstructured
// objects go through the walk too, but it does not look inside their
// map[string]interface{} trees, so they share nothing. The parts
// remembered while decoding stay alive after their objects are dropped,
// until pushed out: at most 2048 of them, each decoded from at most 2 KiB
// to at most 16 KiB of slices, map entries and structs (proto_share.go).
// It is sound only if nobody modifies a decoded object's maps, slices and
// pointed-to values in place.
func WithSharedParts() CodecOption {
	return func(o *codecOptions) { o.sharedParts = true }
}

// WithoutManagedFields makes the codec skip metadata.managedFields while
// decoding, so that the entries (often the largest part of an object) are
// never built. A transform that clears them after decoding saves the
// memory held but not the work or the garbage.
//
// For JSON the decoder skips the value (scanning it still costs a
// short-lived string per key inside it). For protobuf the
// managedFields entries of the object's metadata (field 1, ObjectMeta
// field 17, true of every k8s.io/api type) are relabelled in the read
// buffer as a field number ObjectMeta does not know, which the generated
// Unmarshal skips without allocating.
func WithoutManagedFields() CodecOption {
	return func(o *codecOptions) { o.dropManagedFields = true }
}

// WithAnyListKind makes a typed codec accept a list body of any kind, for a
// Go type of one's own for a custom resource: its list kind is its CRD's
// spec.names.listKind, which need not be Kind+"List" and may change while
// the kind cannot. The items are still checked against the codec's kind.
func WithAnyListKind() CodecOption {
	return func(o *codecOptions) { o.anyListKind = true }
}

// GroupVersionKind returns the kind the codec was built for.
func (c *Codec[T]) GroupVersionKind() schema.GroupVersionKind { return c.gvk }

// SupportsProtobuf reports whether the codec can decode protobuf
// (application/vnd.kubernetes.protobuf). Ask the server for JSON otherwise.
func (c *Codec[T]) SupportsProtobuf() bool { return c.unmarshalProto != nil }

// TypedCodec returns a codec for a Go type generated from the Kubernetes API
// such as *corev1.Pod (T must be a pointer to a struct). gvk is the kind the
// server sends for it (for example corev1.SchemeGroupVersion.WithKind("Pod")).
// Protobuf is supported when *T's struct has the generated
// Unmarshal([]byte) error method, as every k8s.io/api type does.
func TypedCodec[T runtime.Object](gvk schema.GroupVersionKind, opts ...CodecOption) (*Codec[T], error) {
	typ := reflect.TypeFor[T]()
	if typ.Kind() != reflect.Pointer || typ.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("wire.TypedCodec: %v is not a pointer to a struct", typ)
	}
	if gvk.Kind == "" || gvk.Version == "" {
		return nil, fmt.Errorf("wire.TypedCodec[%v]: the GroupVersionKind %q needs a version and a kind", typ, gvk.String())
	}
	elem := typ.Elem()
	newObject := func() T { return reflect.New(elem).Interface().(T) }

	c := newCodec[T](gvk, opts)
	if !c.anyListKind {
		c.listKind = gvk.Kind + "List"
	}
	c.readJSON = func(it *jsoniter.Iterator) T {
		obj := newObject()
		it.ReadVal(obj)
		forgetOwned(it)
		return obj
	}
	c.jsonShared = c.parts != nil
	c.kindOf = func(obj T) (string, string) { return typeMetaOf(obj) }
	c.stamp = func(obj T) { stampTypeMeta(obj, c.objAPIVersion, c.objKind, c.gvk) }
	if _, ok := any(newObject()).(protoUnmarshaler); ok {
		c.protoWith(elem, func(data []byte) (T, error) {
			obj := newObject()
			return obj, any(obj).(protoUnmarshaler).Unmarshal(data)
		})
	}
	return c, nil
}

// UnstructuredCodec returns a codec for *unstructured.Unstructured objects
// of the given kind, for custom resources and any type without Go structs.
// It decodes JSON only; numbers become int64 when they are integers and
// float64 otherwise, as in k8s.io/apimachinery. gvk.Kind may be empty when
// the caller does not know it: objects of any kind of gvk's group and
// version are then accepted and keep the kind they carry. List items that
// carry none (kube-apiserver omits it in lists of built-in resources) get
// the list's kind without "List", as client-go's dynamic client gives
// them; so an item of a DeploymentList is refused by a codec of another
// kind, as a watched Deployment is.
func UnstructuredCodec(gvk schema.GroupVersionKind, opts ...CodecOption) *Codec[*unstructured.Unstructured] {
	c := newCodec[*unstructured.Unstructured](gvk, opts)
	c.anyKind, c.sameVersion = gvk.Kind == "", true
	c.fillListItem = func(u *unstructured.Unstructured, listKind string) {
		if _, ok := u.Object["kind"]; !ok && len(listKind) > len("List") && strings.HasSuffix(listKind, "List") {
			u.Object["kind"] = strings.TrimSuffix(listKind, "List")
		}
	}
	c.readJSON = func(it *jsoniter.Iterator) *unstructured.Unstructured {
		return readUnstructured(it, c.dropManagedFields)
	}
	c.kindOf = func(u *unstructured.Unstructured) (string, string) {
		apiVersion, _ := u.Object["apiVersion"].(string)
		kind, _ := u.Object["kind"].(string)
		return apiVersion, kind
	}
	c.stamp = func(u *unstructured.Unstructured) {
		u.Object["apiVersion"] = c.objAPIVersion
		if !c.anyKind {
			u.Object["kind"] = c.objKind
		}
	}
	return c
}

// MetadataCodec returns a codec for *metav1.PartialObjectMetadata, the form
// the server sends when asked for metadata only (Accept:
// application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1). gvk is the
// full resource's kind; objects of that kind are accepted too, and only
// their metadata is kept; if gvk has no Kind, objects of any kind are
// accepted. Decoded objects are stamped as PartialObjectMetadata
// meta.k8s.io/v1. It decodes JSON and protobuf.
func MetadataCodec(gvk schema.GroupVersionKind, opts ...CodecOption) *Codec[*metav1.PartialObjectMetadata] {
	c := newCodec[*metav1.PartialObjectMetadata](gvk, opts)
	c.objAPIVersion, c.objKind = "meta.k8s.io/v1", "PartialObjectMetadata"
	c.alsoAPIVersion, c.alsoKind = gvk.GroupVersion().String(), gvk.Kind
	c.anyKind = gvk.Kind == ""
	c.listKind = "PartialObjectMetadataList"
	c.readJSON = func(it *jsoniter.Iterator) *metav1.PartialObjectMetadata {
		obj := new(metav1.PartialObjectMetadata)
		it.ReadVal(obj)
		forgetOwned(it)
		return obj
	}
	c.jsonShared = c.parts != nil
	c.kindOf = func(obj *metav1.PartialObjectMetadata) (string, string) { return obj.APIVersion, obj.Kind }
	c.stamp = func(obj *metav1.PartialObjectMetadata) { obj.APIVersion, obj.Kind = c.objAPIVersion, c.objKind }
	c.protoWith(reflect.TypeFor[metav1.PartialObjectMetadata](), func(data []byte) (*metav1.PartialObjectMetadata, error) {
		obj := new(metav1.PartialObjectMetadata)
		return obj, obj.Unmarshal(data)
	})
	return c
}

func newCodec[T any](gvk schema.GroupVersionKind, opts []CodecOption) *Codec[T] {
	var o codecOptions
	for _, opt := range opts {
		opt(&o)
	}
	var table *internTable
	switch {
	case o.noInterning:
	case o.strings != nil:
		table = o.strings.t
	default:
		table = newInternTable()
	}
	var parts *partTable
	var walk *share.Table
	if o.sharedParts {
		parts, walk = newPartTable(), share.New(share.DefaultSlots)
	}
	return &Codec[T]{
		parts:             parts,
		walk:              walk,
		internProtobuf:    o.protoInterning,
		generatedProto:    o.generatedProto,
		gvk:               gvk,
		objAPIVersion:     gvk.GroupVersion().String(),
		objKind:           gvk.Kind,
		json:              newJSONAPI(o.dropManagedFields, table, parts),
		strings:           table,
		dropManagedFields: o.dropManagedFields,
		anyListKind:       o.anyListKind,
	}
}

// protoWith sets how the codec decodes protobuf objects of struct type
// elem (T points to it): with the compiled decoder when elem is a
// generated message, else with generated, the type's own Unmarshal.
func (c *Codec[T]) protoWith(elem reflect.Type, generated func(data []byte) (T, error)) {
	m := protoMessageFor(elem)
	if m == nil || c.generatedProto {
		c.unmarshalProto = generated
		c.internProtoWith(elem)
		return
	}
	c.compiledProto = true
	c.unmarshalProto = func(data []byte) (T, error) {
		p := reflect.New(elem)
		d := protoDecoder{strings: c.strings, parts: c.parts}
		return p.Interface().(T), m.decode(p.UnsafePointer(), data, &d)
	}
}

// internProtoWith makes decodeProto intern the strings of the objects it
// decodes, when the codec was built WithProtobufInterning. elem is the
// struct type T points to.
func (c *Codec[T]) internProtoWith(elem reflect.Type) {
	if c.strings == nil || !c.internProtobuf {
		return
	}
	if walk := internWalkFor(elem); walk != nil {
		c.internProto = func(obj T) { walk(reflect.ValueOf(obj).UnsafePointer(), c.strings) }
	}
}

// protoUnmarshaler is the method gogo-protobuf generated for every
// k8s.io/api type. The generated code copies every string and []byte it
// keeps, so the input buffer may be reused afterwards.
type protoUnmarshaler interface {
	Unmarshal(data []byte) error
}

// accepts reports whether an object that says it is (apiVersion, kind) is
// one this codec decodes. Empty fields are accepted: list items and
// protobuf bodies often omit them.
func (c *Codec[T]) accepts(apiVersion, kind string) bool {
	matches := func(wantAPIVersion, wantKind string) bool {
		return (kind == "" || kind == wantKind) && (apiVersion == "" || apiVersion == wantAPIVersion)
	}
	switch {
	case c.anyKind && (!c.sameVersion || apiVersion == "" || apiVersion == c.objAPIVersion):
		return true
	case matches(c.objAPIVersion, c.objKind):
		return true
	case c.alsoKind != "" && matches(c.alsoAPIVersion, c.alsoKind):
		return true
	}
	// meta.k8s.io/v1beta1 PartialObjectMetadata is the same type as v1.
	return c.objKind == "PartialObjectMetadata" && kind == c.objKind && apiVersion == "meta.k8s.io/v1beta1"
}

// acceptsList reports whether a list body of this kind holds our objects.
func (c *Codec[T]) acceptsList(kind string) bool {
	if kind == "" || c.listKind == "" || kind == c.listKind || c.anyKind {
		return true
	}
	return c.alsoKind != "" && kind == c.alsoKind+"List"
}

// wrongKind builds the error for an object that is not ours.
func (c *Codec[T]) wrongKind(apiVersion, kind string) error {
	return &WrongKindError{
		Got:  schema.FromAPIVersionAndKind(apiVersion, kind),
		Want: schema.FromAPIVersionAndKind(c.objAPIVersion, c.objKind),
	}
}

// finishJSON checks the kind of a JSON-decoded object and stamps it.
func (c *Codec[T]) finishJSON(obj T) error {
	apiVersion, kind := c.kindOf(obj)
	if !c.accepts(apiVersion, kind) {
		return c.wrongKind(apiVersion, kind)
	}
	c.stamp(obj)
	if !c.jsonShared {
		c.shareWalk(obj)
	}
	return nil
}

// shareWalk shares the parts of an object that was not decoded sharing
// them (WithSharedParts): unstructured, or protobuf through a generated
// Unmarshal.
func (c *Codec[T]) shareWalk(obj T) {
	if c.walk == nil {
		return
	}
	c.walkMu.Lock()
	defer c.walkMu.Unlock() // a panic in the walk is recovered by the decoders
	share.Share(c.walk, obj)
}

// SharesParts reports whether the codec was built WithSharedParts.
func (c *Codec[T]) SharesParts() bool { return c.parts != nil }

// ForgetSharedParts empties the table of parts shared while decoding
// (WithSharedParts), so that the objects decoded next share only with each
// other. A part is remembered by the bytes it was decoded from, and is not
// checked against them when found again: were a cached object modified
// against the rules, every object decoded later from the same bytes would
// get the modified part. Forgetting at every list lets a relist repair
// that. The walk's table, which compares values rather than bytes, is
// emptied too: what it remembers of objects since deleted is then no
// longer kept alive.
func (c *Codec[T]) ForgetSharedParts() {
	if c.parts != nil {
		c.parts.forget()
	}
	if c.walk != nil {
		c.walkMu.Lock()
		c.walk.Forget()
		c.walkMu.Unlock()
	}
}

// decodeProto unmarshals one object's protobuf bytes into a new T. data is
// owned by the caller's read buffer and may be modified (managedFields are
// relabelled in place when the codec drops them). A panic in generated
// code becomes an error.
func (c *Codec[T]) decodeProto(data []byte) (obj T, err error) {
	if c.dropManagedFields {
		hideManagedFields(data)
	}
	defer func() {
		if r := recover(); r != nil {
			var zero T
			obj, err = zero, fmt.Errorf("%w: protobuf %s: decoder panicked: %v", ErrMalformed, c.objKind, r)
		}
	}()
	obj, err = c.unmarshalProto(data)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("%w: protobuf %s: %v", ErrMalformed, c.objKind, err)
	}
	if c.internProto != nil {
		c.internProto(obj)
	}
	c.stamp(obj)
	if !c.compiledProto {
		c.shareWalk(obj)
	}
	return obj, nil
}

// typeMetaOf reads apiVersion and kind without allocating when the object
// keeps them in a metav1.TypeMeta, as every generated type does.
func typeMetaOf(obj runtime.Object) (apiVersion, kind string) {
	switch tm := obj.GetObjectKind().(type) {
	case *metav1.TypeMeta:
		return tm.APIVersion, tm.Kind
	default:
		return tm.GroupVersionKind().ToAPIVersionAndKind()
	}
}

func stampTypeMeta(obj runtime.Object, apiVersion, kind string, gvk schema.GroupVersionKind) {
	switch tm := obj.GetObjectKind().(type) {
	case *metav1.TypeMeta:
		tm.APIVersion, tm.Kind = apiVersion, kind
	default:
		tm.SetGroupVersionKind(gvk)
	}
}
