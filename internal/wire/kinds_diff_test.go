package wire

// Every kind of every group and version of k8s.io/api, decoded here and by
// apimachinery's own decoding (the generated Unmarshal, sigs.k8s.io/json,
// Unstructured.UnmarshalJSON): random objects, and what a newer server or
// another encoder may send them as. A few objects of each kind are drawn
// from a seed made of -wire.kinds-seed (logged) and the kind's name, so a
// run is repeatable; -wire.kinds-rounds multiplies the objects for a
// longer sweep:
//
//	go test -run EveryKind -wire.kinds-seed=7 -wire.kinds-rounds=20 ./internal/wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	jsoniter "github.com/json-iterator/go"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1alpha1 "k8s.io/api/admissionregistration/v1alpha1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apidiscoveryv2beta1 "k8s.io/api/apidiscovery/v2beta1"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	appsv1beta1 "k8s.io/api/apps/v1beta1"
	appsv1beta2 "k8s.io/api/apps/v1beta2"
	authenticationv1 "k8s.io/api/authentication/v1"
	authenticationv1alpha1 "k8s.io/api/authentication/v1alpha1"
	authenticationv1beta1 "k8s.io/api/authentication/v1beta1"
	authorizationv1 "k8s.io/api/authorization/v1"
	authorizationv1beta1 "k8s.io/api/authorization/v1beta1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	batchv1beta1 "k8s.io/api/batch/v1beta1"
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1alpha1 "k8s.io/api/certificates/v1alpha1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1alpha2 "k8s.io/api/coordination/v1alpha2"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	discoveryv1beta1 "k8s.io/api/discovery/v1beta1"
	eventsv1 "k8s.io/api/events/v1"
	eventsv1beta1 "k8s.io/api/events/v1beta1"
	extensionsv1beta1 "k8s.io/api/extensions/v1beta1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta1 "k8s.io/api/flowcontrol/v1beta1"
	flowcontrolv1beta2 "k8s.io/api/flowcontrol/v1beta2"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	imagepolicyv1alpha1 "k8s.io/api/imagepolicy/v1alpha1"
	lifecyclev1alpha1 "k8s.io/api/lifecycle/v1alpha1"
	networkingv1 "k8s.io/api/networking/v1"
	networkingv1beta1 "k8s.io/api/networking/v1beta1"
	nodev1 "k8s.io/api/node/v1"
	nodev1alpha1 "k8s.io/api/node/v1alpha1"
	nodev1beta1 "k8s.io/api/node/v1beta1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"
	rbacv1alpha1 "k8s.io/api/rbac/v1alpha1"
	rbacv1beta1 "k8s.io/api/rbac/v1beta1"
	resourcev1 "k8s.io/api/resource/v1"
	resourcev1alpha3 "k8s.io/api/resource/v1alpha3"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	storagev1 "k8s.io/api/storage/v1"
	storagev1alpha1 "k8s.io/api/storage/v1alpha1"
	storagev1beta1 "k8s.io/api/storage/v1beta1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	storagemigrationv1beta1 "k8s.io/api/storagemigration/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/randfill"
)

var (
	kindsSeed   = flag.Int64("wire.kinds-seed", 1, "seed of the random objects of every kind")
	kindsRounds = flag.Int("wire.kinds-rounds", 1, "multiplies the random objects of every kind")
)

// apiTypes are the struct types of every kind registered by every group
// and version of k8s.io/api, and metav1's, in the order of their package
// and name.
func apiTypes(t testing.TB) []reflect.Type {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		admissionv1.AddToScheme,
		admissionv1beta1.AddToScheme,
		admissionregistrationv1.AddToScheme,
		admissionregistrationv1alpha1.AddToScheme,
		admissionregistrationv1beta1.AddToScheme,
		apidiscoveryv2.AddToScheme,
		apidiscoveryv2beta1.AddToScheme,
		apiserverinternalv1alpha1.AddToScheme,
		appsv1.AddToScheme,
		appsv1beta1.AddToScheme,
		appsv1beta2.AddToScheme,
		authenticationv1.AddToScheme,
		authenticationv1alpha1.AddToScheme,
		authenticationv1beta1.AddToScheme,
		authorizationv1.AddToScheme,
		authorizationv1beta1.AddToScheme,
		autoscalingv1.AddToScheme,
		autoscalingv2.AddToScheme,
		batchv1.AddToScheme,
		batchv1beta1.AddToScheme,
		certificatesv1.AddToScheme,
		certificatesv1alpha1.AddToScheme,
		certificatesv1beta1.AddToScheme,
		coordinationv1.AddToScheme,
		coordinationv1alpha2.AddToScheme,
		coordinationv1beta1.AddToScheme,
		corev1.AddToScheme,
		discoveryv1.AddToScheme,
		discoveryv1beta1.AddToScheme,
		eventsv1.AddToScheme,
		eventsv1beta1.AddToScheme,
		extensionsv1beta1.AddToScheme,
		flowcontrolv1.AddToScheme,
		flowcontrolv1beta1.AddToScheme,
		flowcontrolv1beta2.AddToScheme,
		flowcontrolv1beta3.AddToScheme,
		imagepolicyv1alpha1.AddToScheme,
		lifecyclev1alpha1.AddToScheme,
		networkingv1.AddToScheme,
		networkingv1beta1.AddToScheme,
		nodev1.AddToScheme,
		nodev1alpha1.AddToScheme,
		nodev1beta1.AddToScheme,
		policyv1.AddToScheme,
		policyv1beta1.AddToScheme,
		rbacv1.AddToScheme,
		rbacv1alpha1.AddToScheme,
		rbacv1beta1.AddToScheme,
		resourcev1.AddToScheme,
		resourcev1alpha3.AddToScheme,
		resourcev1beta1.AddToScheme,
		resourcev1beta2.AddToScheme,
		schedulingv1.AddToScheme,
		schedulingv1alpha3.AddToScheme,
		schedulingv1beta1.AddToScheme,
		storagev1.AddToScheme,
		storagev1alpha1.AddToScheme,
		storagev1beta1.AddToScheme,
		storagemigrationv1.AddToScheme,
		storagemigrationv1beta1.AddToScheme,
		metav1.AddMetaToScheme,
	} {
		require.NoError(t, add(scheme))
	}
	seen := map[reflect.Type]bool{}
	var types []reflect.Type
	for _, typ := range scheme.AllKnownTypes() {
		if !seen[typ] && typ.Kind() == reflect.Struct {
			seen[typ] = true
			types = append(types, typ)
		}
	}
	slices.SortFunc(types, func(a, b reflect.Type) int {
		return strings.Compare(a.PkgPath()+"."+a.Name(), b.PkgPath()+"."+b.Name())
	})
	return types
}

// logKindsSeed logs the seed of a test of every kind, to run it again.
func logKindsSeed(t testing.TB) {
	t.Helper()
	t.Logf("-wire.kinds-seed=%d -wire.kinds-rounds=%d", *kindsSeed, *kindsRounds)
}

// kindSeed is the seed of typ's random objects in a test of every kind
// (salt tells the tests apart).
func kindSeed(typ reflect.Type, salt int64) int64 {
	h := fnv.New64a()
	h.Write([]byte(typ.PkgPath() + "." + typ.Name()))
	return *kindsSeed*1_000_003 + salt + int64(h.Sum64()>>1)
}

// firstDifference returns the first difference between a and b, "" if
// none: reflect.DeepEqual, except that quantities compare by value and
// format and times by instant and location, with a path that says where.
// Unlike apiequality.Semantic it tells a nil slice or map from an empty
// one, which a cache's reader sees.
func firstDifference(a, b any) string {
	return differenceAt(reflect.ValueOf(a), reflect.ValueOf(b))
}

// differenceAt returns the first difference as a path below a and b and
// what differs there.
func differenceAt(a, b reflect.Value) string {
	if a.IsValid() != b.IsValid() {
		return ": one is invalid"
	}
	if !a.IsValid() {
		return ""
	}
	if a.Type() != b.Type() {
		return fmt.Sprintf(": types %v and %v", a.Type(), b.Type())
	}
	switch a.Type() {
	case quantityType:
		if a.CanInterface() {
			qa, qb := a.Interface().(resource.Quantity), b.Interface().(resource.Quantity)
			if qa.Cmp(qb) != 0 || qa.Format != qb.Format {
				return fmt.Sprintf(": quantity %v (%s) != %v (%s)", qa.String(), qa.Format, qb.String(), qb.Format)
			}
			return ""
		}
	case reflect.TypeFor[time.Time]():
		if a.CanInterface() {
			ta, tb := a.Interface().(time.Time), b.Interface().(time.Time)
			if !ta.Equal(tb) || ta.Location() != tb.Location() {
				return fmt.Sprintf(": time %v != %v", ta, tb)
			}
			return ""
		}
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() != b.IsNil() {
			return fmt.Sprintf(": nil %v vs %v", a.IsNil(), b.IsNil())
		}
		if a.IsNil() {
			return ""
		}
		return differenceAt(a.Elem(), b.Elem())
	case reflect.Slice:
		if a.IsNil() != b.IsNil() {
			return fmt.Sprintf(": nil %v vs %v (len %d, %d)", a.IsNil(), b.IsNil(), a.Len(), b.Len())
		}
		fallthrough
	case reflect.Array:
		if a.Len() != b.Len() {
			return fmt.Sprintf(": len %d vs %d", a.Len(), b.Len())
		}
		for i := range a.Len() {
			if d := differenceAt(a.Index(i), b.Index(i)); d != "" {
				return fmt.Sprintf("[%d]", i) + d
			}
		}
	case reflect.Map:
		if a.IsNil() != b.IsNil() {
			return fmt.Sprintf(": nil %v vs %v (len %d, %d)", a.IsNil(), b.IsNil(), a.Len(), b.Len())
		}
		if a.Len() != b.Len() {
			return fmt.Sprintf(": len %d vs %d", a.Len(), b.Len())
		}
		for k, av := range a.Seq2() {
			bv := b.MapIndex(k)
			if !bv.IsValid() {
				return fmt.Sprintf(": key %v missing", k)
			}
			if d := differenceAt(av, bv); d != "" {
				return fmt.Sprintf("[%v]", k) + d
			}
		}
	case reflect.Struct:
		for i := range a.NumField() {
			if d := differenceAt(a.Field(i), b.Field(i)); d != "" {
				return "." + a.Type().Field(i).Name + d
			}
		}
	case reflect.String:
		if a.String() != b.String() {
			return fmt.Sprintf(": %q != %q", a.String(), b.String())
		}
	case reflect.Bool:
		if a.Bool() != b.Bool() {
			return fmt.Sprintf(": %v != %v", a.Bool(), b.Bool())
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if a.Int() != b.Int() {
			return fmt.Sprintf(": %d != %d", a.Int(), b.Int())
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if a.Uint() != b.Uint() {
			return fmt.Sprintf(": %d != %d", a.Uint(), b.Uint())
		}
	case reflect.Float32, reflect.Float64:
		if a.Float() != b.Float() && !(math.IsNaN(a.Float()) && math.IsNaN(b.Float())) {
			return fmt.Sprintf(": %v != %v", a.Float(), b.Float())
		}
	default:
		return fmt.Sprintf(": kind %v not compared", a.Kind())
	}
	return ""
}

// Protobuf

// unknownFields are fields of numbers no message has, one of each wire
// type a newer server's gogo/protobuf encoder could write.
func unknownFields() []byte {
	tag := func(b []byte, num, wt uint64) []byte { return binary.AppendUvarint(b, num<<3|wt) }
	var b []byte
	b = binary.AppendUvarint(tag(b, 9001, wireVarint), math.MaxUint64) // 10 bytes
	b = append(tag(b, 9002, wireFixed64), 1, 2, 3, 4, 5, 6, 7, 8)
	b = append(tag(b, 9003, wireFixed32), 1, 2, 3, 4)
	b = append(b, tagged(9004, []byte{0x0a, 0x01, 'x'})...) // a message, or a string
	b = append(b, tagged(9005, nil)...)
	b = binary.AppendUvarint(tag(b, 1<<29-1, wireVarint), 1) // the largest field number
	return b
}

// protoRewrite writes a message as a newer server or another encoder may,
// keeping what it means.
type protoRewrite struct {
	inject bool // unknown fields around the fields of every message and map entry
	split  bool // every singular embedded message written as two, to be merged
	unpack bool // packed repeated varints written one by one
}

// rewrite rewrites message b of compiled type m.
func (r protoRewrite) rewrite(t testing.TB, m *protoMessage, b []byte) []byte {
	var out []byte
	if r.inject {
		out = append(out, unknownFields()...)
	}
	for len(b) > 0 {
		f, rest, err := nextField(b)
		require.NoError(t, err)
		raw := b[:len(b)-len(rest)]
		b = rest
		var sf *protoStructField
		if f.num < uint64(len(m.fields)) {
			sf = m.fields[f.num]
		}
		num := int(f.num)
		switch {
		case sf == nil || f.typ != wireBytes:
			out = append(out, raw...)
		case sf.kind == kVarints && r.unpack:
			for d := f.data; len(d) > 0; {
				v, n := consumeVarint(d)
				d = d[n:]
				out = append(out, varintField(num, v)...)
			}
		case sf.msg != nil && (sf.kind == kMessage || sf.kind == kMessagePtr):
			data := r.rewrite(t, sf.msg, f.data)
			if r.split && len(data) > 0 {
				_, second, err := nextField(data) // cut after the first field
				require.NoError(t, err)
				out = append(out, tagged(num, data[:len(data)-len(second)])...)
				data = second
			}
			out = append(out, tagged(num, data)...)
		case sf.msg != nil && sf.kind == kMessages:
			out = append(out, tagged(num, r.rewrite(t, sf.msg, f.data))...)
		case sf.kind == kMap || sf.kind == kStringMap:
			var entry []byte
			if r.inject {
				entry = append(entry, unknownFields()...)
			}
			for d := f.data; len(d) > 0; {
				g, grest, err := nextField(d)
				require.NoError(t, err)
				if g.num == 2 && sf.mapVal.msg != nil {
					entry = append(entry, tagged(2, r.rewrite(t, sf.mapVal.msg, g.data))...)
				} else {
					entry = append(entry, d[:len(d)-len(grest)]...)
				}
				d = grest
			}
			if r.inject {
				entry = append(entry, unknownFields()...)
			}
			out = append(out, tagged(num, entry)...)
		default:
			out = append(out, raw...)
		}
	}
	if r.inject {
		out = append(out, unknownFields()...)
	}
	return out
}

// What a newer server may send decodes as the generated Unmarshal decodes
// it, and to the same object as the original bytes: unknown fields of
// every wire type in every message and map entry, embedded messages split
// in two (merged), repeated varints unpacked. With shared parts too, and
// no object is changed by the ones decoded after it.
func TestProtoDecodeForwardCompatibleEveryKind(t *testing.T) {
	logKindsSeed(t)
	table, parts := newInternTable(), newPartTable()
	var kept []decoded
	rewrites := []protoRewrite{{inject: true}, {split: true}, {unpack: true}, {inject: true, split: true, unpack: true}}
	for _, typ := range protoTypes(t) {
		m := protoMessageFor(typ)
		for i, data := range randomObjects(t, typ, kindSeed(typ, 0), *kindsRounds) {
			orig := reflect.New(typ)
			require.NoError(t, orig.Interface().(protoUnmarshaler).Unmarshal(data))
			for j, r := range rewrites {
				rewritten := r.rewrite(t, m, data)
				pt := []*partTable{nil, parts}[j%2] // every other one shares parts
				want, got, wantErr, gotErr := decodeBoth(typ, rewritten, table, pt)
				require.NoError(t, wantErr, "%v #%d %+v: generated", typ, i, r)
				require.NoError(t, gotErr, "%v #%d %+v: compiled", typ, i, r)
				if d := firstDifference(want, got); d != "" {
					t.Fatalf("%v #%d %+v: the compiled decoder differs from the generated one: %s", typ, i, r, d)
				}
				if d := firstDifference(orig.Interface(), got); d != "" {
					t.Fatalf("%v #%d %+v: differs from the original: %s", typ, i, r, d)
				}
				if pt != nil {
					kept = append(kept, decoded{typ, rewritten, got})
				}
			}
		}
	}
	checkUnchanged(t, kept)
}

// TestProtoDecodeMutations for every kind, with fewer mutations of each:
// what the compiled decoder accepts, the generated Unmarshal accepts too,
// with the same result.
func TestProtoDecodeMutationsEveryKind(t *testing.T) {
	logKindsSeed(t)
	table := newInternTable()
	r := rand.New(rand.NewSource(*kindsSeed))
	accepted := 0
	for _, typ := range protoTypes(t) {
		seeds := randomObjects(t, typ, kindSeed(typ, 0), 2)
		for i := range 8 * *kindsRounds {
			data := bytes.Clone(seeds[i%len(seeds)])
			for range 1 + r.Intn(3) {
				if len(data) == 0 {
					break
				}
				at := r.Intn(len(data))
				switch r.Intn(3) {
				case 0:
					data[at] = byte(r.Intn(256))
				case 1:
					data = append(data[:at], append([]byte{byte(r.Intn(256))}, data[at:]...)...)
				case 2:
					data = append(data[:at], data[at+1:]...)
				}
			}
			want, got, wantErr, gotErr := decodeBoth(typ, data, table, nil)
			if gotErr != nil {
				continue
			}
			accepted++
			if wantErr != nil {
				t.Fatalf("%v mutation %d: the compiled decoder accepted what the generated one refuses: %v\n%x", typ, i, wantErr, data)
			}
			if d := firstDifference(want, got); d != "" {
				t.Fatalf("%v mutation %d: %s\n%x", typ, i, d, data)
			}
		}
	}
	require.Greater(t, accepted, 250, "too few mutations decode to test anything")
}

// JSON

// jsonFiller is randomObjects' filler with values that encoding/json can
// encode and that apimachinery decodes (FieldsV1 and RawExtension holding
// JSON, an IntOrString of a known type), and quantities in more spellings.
func jsonFiller(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.2).NumElements(0, 3).MaxDepth(12).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			switch c.Intn(4) {
			case 0:
				*q = resource.MustParse(fmt.Sprintf("%d%018d", 1+c.Intn(1000), c.Int63n(1e18)))
			case 1:
				*q = resource.MustParse([]string{"1.5", "100m", "1Ki", "1e3", "0", "1E-3", "12Gi", "0.1", "5n", "1.25M"}[c.Intn(10)])
			default:
				*q = *resource.NewMilliQuantity(c.Int63n(64)<<c.Intn(40), []resource.Format{resource.DecimalSI, resource.BinarySI, resource.DecimalExponent}[c.Intn(3)])
			}
		},
		func(tm *metav1.Time, c randfill.Continue) { *tm = metav1.Unix(c.Int63n(1<<33), 0) },
		func(tm *metav1.MicroTime, c randfill.Continue) {
			*tm = metav1.NewMicroTime(metav1.Unix(c.Int63n(1<<33), c.Int63n(1e9)).Time)
		},
		func(r *runtime.RawExtension, c randfill.Continue) {
			if c.Bool() {
				r.Raw = []byte(`{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"b"},"n":[1,2.5,null]}`)
			}
		},
		func(f *metav1.FieldsV1, c randfill.Continue) {
			f.SetRawBytes([]byte(`{"f:metadata":{"f:labels":{".":{},"f:app":{}}}}`))
		},
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*v = intstr.FromInt32(c.Int31() - 1<<30)
			} else {
				*v = intstr.FromString(c.String(0))
			}
		},
	)
}

// randomJSON returns the JSON of n random objects of type typ; none if
// randfill cannot fill one (an interface field: metav1.Table,
// metav1.InternalEvent).
func randomJSON(t testing.TB, typ reflect.Type, seed int64, n int) (out [][]byte) {
	f := jsonFiller(seed)
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	for range n {
		obj := reflect.New(typ)
		f.Fill(obj.Interface())
		data, err := json.Marshal(obj.Interface())
		require.NoError(t, err, typ)
		out = append(out, data)
	}
	return out
}

// jsonConfig is one of the configurations a typed codec's JSON decoder
// may have.
type jsonConfig struct {
	name string
	api  jsoniter.API
}

// jsonConfigs are built once: building json-iterator's decoders of every
// kind is most of the time a first decode takes.
var jsonConfigs = sync.OnceValue(func() []jsonConfig {
	return []jsonConfig{
		{"copied", newJSONAPI(false, nil, nil)},
		{"interned", newJSONAPI(false, newInternTable(), nil)},
		{"shared", newJSONAPI(false, newInternTable(), newPartTable())},
	}
})

// decodeKJSON decodes data as a typ as apimachinery's JSON serializer does.
func decodeKJSON(typ reflect.Type, data []byte) (any, error) {
	v := reflect.New(typ)
	err := kjson.UnmarshalCaseSensitivePreserveInts(data, v.Interface())
	return v.Interface(), err
}

// decodeJSONWith decodes data as a typ with a codec's configuration.
func decodeJSONWith(api jsoniter.API, typ reflect.Type, data []byte) (any, error) {
	v := reflect.New(typ)
	it := api.BorrowIterator(data)
	defer api.ReturnIterator(it)
	it.ReadVal(v.Interface())
	return v.Interface(), it.Error
}

// Random objects of every kind, encoded by encoding/json, decode to what
// sigs.k8s.io/json gives: interning strings (a codec's default), and
// copying them or sharing parts, each in turn; each object twice (the
// second time from the tables). Building the decoders of a kind takes
// longer than decoding it, hence the turns.
func TestJSONDecodeEveryKind(t *testing.T) {
	logKindsSeed(t)
	all := jsonConfigs()
	n := 0
	for k, typ := range apiTypes(t) {
		configs := []jsonConfig{all[1], all[[]int{0, 2}[k%2]]}
		for i, data := range randomJSON(t, typ, kindSeed(typ, 0), *kindsRounds) {
			n++
			want, err := decodeKJSON(typ, data)
			require.NoError(t, err, "%v #%d", typ, i)
			for _, c := range configs {
				for pass := range 2 {
					got, err := decodeJSONWith(c.api, typ, data)
					require.NoError(t, err, "%v #%d %s", typ, i, c.name)
					if d := firstDifference(want, got); d != "" {
						t.Fatalf("%v #%d %s, pass %d: %s\n%s", typ, i, c.name, pass, d, data)
					}
				}
			}
		}
	}
	require.Greater(t, n, 300, "too few objects")
}

// jnode is a JSON value that keeps its object keys in order, repeated if
// they are, so that mutations can write what encoding/json cannot.
type jnode struct {
	kind byte     // 'o' object, 'a' array, 's' anything else, in raw
	raw  string   // as written
	keys []string // as written, quoted
	vals []*jnode
}

func parseJNode(data []byte) (*jnode, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var read func() (*jnode, error)
	read = func() (*jnode, error) {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		switch v := tok.(type) {
		case json.Delim:
			n := &jnode{kind: 'a'}
			if v == '{' {
				n.kind = 'o'
			}
			for dec.More() {
				if n.kind == 'o' {
					k, err := dec.Token()
					if err != nil {
						return nil, err
					}
					q, _ := json.Marshal(k)
					n.keys = append(n.keys, string(q))
				}
				v, err := read()
				if err != nil {
					return nil, err
				}
				n.vals = append(n.vals, v)
			}
			_, err := dec.Token()
			return n, err
		case json.Number:
			return scalar(v.String()), nil
		default:
			b, err := json.Marshal(v)
			return scalar(string(b)), err
		}
	}
	return read()
}

func scalar(raw string) *jnode { return &jnode{kind: 's', raw: raw} }

func (n *jnode) clone() *jnode {
	c := &jnode{kind: n.kind, raw: n.raw, keys: append([]string(nil), n.keys...)}
	for _, v := range n.vals {
		c.vals = append(c.vals, v.clone())
	}
	return c
}

func (n *jnode) write(b *bytes.Buffer) {
	switch n.kind {
	case 's':
		b.WriteString(n.raw)
	case 'a':
		b.WriteByte('[')
		for i, v := range n.vals {
			if i > 0 {
				b.WriteByte(',')
			}
			v.write(b)
		}
		b.WriteByte(']')
	case 'o':
		b.WriteByte('{')
		for i, v := range n.vals {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(n.keys[i])
			b.WriteByte(':')
			v.write(b)
		}
		b.WriteByte('}')
	}
}

// futureValue is what a newer server may send in a field this package
// does not know: every kind of JSON value, numbers in every form that
// float64 can hold.
var futureValue = func() *jnode {
	n, err := parseJNode([]byte(`{"a":[1,-2.5e10,"s\u00e9",null,true,false,{"b":{}},[[]]],"c":1e300,"d":-0,"e":18446744073709551616,"f":0.5E-3}`))
	if err != nil {
		panic(err)
	}
	return n
}()

// jsonMutations are the ways mutateJSON rewrites a value.
var jsonMutations = []string{
	"null",       // a value replaced by null
	"float",      // an integer written as a float or with an exponent
	"bignum",     // a number replaced by one beyond int32, int64 or uint64
	"escape",     // a string written with \u escapes
	"space",      // insignificant white space
	"dupnull",    // a key given twice, first null
	"dupempty",   // a key given twice, first an empty object or array
	"dupsame",    // a key given twice, the same value
	"nullafter",  // a key given twice, then null
	"unknown",    // a key no struct has, with any JSON under it
	"unknownstr", // a key no struct has, with a string
}

// mutateJSON rewrites n in place, in one way (a jsonMutations), at random
// places (a chance of 1 in every).
func mutateJSON(n *jnode, mode string, r *rand.Rand, every int, depth int) {
	hit := func() bool { return r.Intn(every) == 0 }
	isNumber := func(v *jnode) bool {
		return v.kind == 's' && v.raw != "" && (v.raw[0] == '-' || v.raw[0] >= '0' && v.raw[0] <= '9')
	}
	for i, v := range n.vals {
		mutateJSON(v, mode, r, every, depth+1)
		switch {
		case mode == "null" && hit():
			n.vals[i] = scalar("null")
		case mode == "float" && isNumber(v) && !strings.ContainsAny(v.raw, ".eE") && hit():
			v.raw = []string{v.raw + ".0", v.raw + "e0", v.raw + "E+00", "-0", "1e2", "0.5"}[r.Intn(6)]
		case mode == "bignum" && isNumber(v) && hit():
			v.raw = []string{"2147483648", "-2147483649", "9223372036854775808", "-9223372036854775809", "4294967296", "18446744073709551616", "1e300"}[r.Intn(7)]
		case mode == "escape" && v.kind == 's' && strings.HasPrefix(v.raw, `"`) && hit():
			var s string
			if json.Unmarshal([]byte(v.raw), &s) != nil {
				panic(v.raw) // json.Marshal wrote it
			}
			var b strings.Builder
			b.WriteByte('"')
			for _, c := range s {
				if c < 0x10000 {
					fmt.Fprintf(&b, `\u%04x`, c)
				} else {
					hi, lo := utf16.EncodeRune(c)
					fmt.Fprintf(&b, `\u%04X\u%04X`, hi, lo)
				}
			}
			b.WriteByte('"')
			v.raw = b.String()
		case mode == "space" && hit():
			v.raw = " \n\t\r" + v.raw + " \r\n\t"
		}
	}
	if n.kind != 'o' {
		return
	}
	var keys []string
	var vals []*jnode
	for i, k := range n.keys {
		v := n.vals[i]
		switch {
		case mode == "dupnull" && hit():
			keys, vals = append(keys, k), append(vals, scalar("null"))
		case mode == "dupempty" && v.kind != 's' && hit():
			keys, vals = append(keys, k), append(vals, &jnode{kind: v.kind})
		case mode == "dupsame" && hit():
			keys, vals = append(keys, k), append(vals, v)
		case mode == "nullafter" && hit():
			keys, vals = append(keys, k, k), append(vals, v, scalar("null"))
			continue
		}
		keys, vals = append(keys, k), append(vals, v)
	}
	if (mode == "unknown" || mode == "unknownstr") && depth < 64 {
		// in a struct a field unknown, in a map one more entry
		val := scalar(`"future"`)
		if mode == "unknown" {
			val = futureValue
		}
		at := r.Intn(len(keys) + 1)
		keys = append(keys[:at], append([]string{`"zzFutureField"`}, keys[at:]...)...)
		vals = append(vals[:at], append([]*jnode{val}, vals[at:]...)...)
	}
	n.keys, n.vals = keys, vals
}

// mutated returns a copy of tree rewritten in one way.
func mutated(tree *jnode, mode string, r *rand.Rand) *jnode {
	n := tree.clone()
	mutateJSON(n, mode, r, 1+r.Intn(6), 0)
	return n
}

func (n *jnode) bytes() []byte {
	var b bytes.Buffer
	n.write(&b)
	return b.Bytes()
}

// The mutations of random objects of every kind decode as
// sigs.k8s.io/json decodes them: both accept, with the same object, or
// both refuse. This package accepts escapes inside a quantity's string,
// which apimachinery refuses (TestValueTypesMatchApimachinery).
func TestJSONMutationsEveryKind(t *testing.T) {
	logKindsSeed(t)
	configs := jsonConfigs()
	r := rand.New(rand.NewSource(*kindsSeed))
	outcomes := map[string]int{}
	reported := map[string]bool{}
	for k, typ := range apiTypes(t) {
		for i, data := range randomJSON(t, typ, kindSeed(typ, 7), *kindsRounds) {
			tree, err := parseJNode(data)
			require.NoError(t, err)
			for j, mode := range jsonMutations {
				if (k+j)%2 != 0 {
					continue // half of the mutations for each kind, in turn
				}
				in := mutated(tree, mode, r).bytes()
				want, wantErr := decodeKJSON(typ, in)
				// one configuration for each kind, in turn
				c := configs[k%len(configs)]
				got, gotErr := decodeJSONWith(c.api, typ, in)
				var outcome, detail string
				switch {
				case wantErr == nil && gotErr != nil:
					outcome, detail = "refused", gotErr.Error()
				case wantErr != nil && gotErr == nil:
					outcome, detail = "accepted", wantErr.Error()
					if strings.HasPrefix(detail, "quantities must match") {
						outcome = "accepted a quantity with escapes"
					}
				case wantErr != nil:
					outcome = "both refuse"
				default:
					outcome, detail = "same", firstDifference(want, got)
					if detail != "" {
						outcome = "differs"
					}
				}
				outcomes[mode+" "+outcome]++
				switch outcome {
				case "same", "both refuse", "accepted a quantity with escapes":
					continue
				}
				// one failure of each kind is enough to read
				if key := mode + " " + c.name + " " + outcome; !reported[key] {
					reported[key] = true
					t.Errorf("%s, %v #%d, %s: %s: %s\n%.3000s", mode, typ, i, c.name, outcome, detail, in)
				}
			}
		}
	}
	t.Logf("outcomes: %v", outcomes)
}

// The same mutations decoded as Unstructured, against
// Unstructured.UnmarshalJSON: every number in the objects is read here
// (readAny), where typed decoding skips those of unknown fields.
func TestUnstructuredMutationsEveryKind(t *testing.T) {
	logKindsSeed(t)
	u := UnstructuredCodec(podGVK)
	r := rand.New(rand.NewSource(*kindsSeed + 1))
	outcomes := map[string]int{}
	reported := map[string]bool{}
	for k, typ := range apiTypes(t) {
		for i, data := range randomJSON(t, typ, kindSeed(typ, 11), *kindsRounds) {
			tree, err := parseJNode(data)
			require.NoError(t, err)
			for j, mode := range append([]string{""}, jsonMutations...) {
				if (k+j)%3 != 0 {
					continue // a third of the mutations for each kind, in turn
				}
				// a kind, which apimachinery requires (the codec checks
				// kinds after decoding)
				n := mutated(tree, mode, r)
				for i := 0; i < len(n.keys); i++ {
					if n.keys[i] == `"kind"` || n.keys[i] == `"apiVersion"` {
						n.keys, n.vals = slices.Delete(n.keys, i, i+1), slices.Delete(n.vals, i, i+1)
						i--
					}
				}
				n.keys = append([]string{`"kind"`, `"apiVersion"`}, n.keys...)
				n.vals = append([]*jnode{scalar(`"Pod"`), scalar(`"v1"`)}, n.vals...)
				in := n.bytes()
				want := new(unstructured.Unstructured)
				wantErr := want.UnmarshalJSON(in)
				it := jsoniter.ParseBytes(u.json, in)
				got := readUnstructured(it, false)
				var outcome, detail string
				switch {
				case wantErr == nil && it.Error != nil:
					outcome, detail = "refused", it.Error.Error()
				case wantErr != nil && it.Error == nil:
					outcome, detail = "accepted", wantErr.Error()
				case wantErr != nil:
					outcome = "both refuse"
				default:
					outcome, detail = "same", firstDifference(want.Object, got.Object)
					if detail != "" {
						outcome = "differs"
					}
				}
				outcomes[mode+" "+outcome]++
				if outcome == "same" || outcome == "both refuse" {
					continue
				}
				if key := mode + " " + outcome; !reported[key] {
					reported[key] = true
					t.Errorf("%s, %v #%d: %s: %s\n%.2000s", mode, typ, i, outcome, detail, in)
				}
			}
		}
	}
	t.Logf("outcomes: %v", outcomes)
}
