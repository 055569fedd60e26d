package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	jsoniter "github.com/json-iterator/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// jsonBoth decodes data as a typ with a codec's JSON configuration without
// sharing and with parts.
func jsonBoth(typ reflect.Type, data []byte, parts *partTable) (plain, shared any, plainErr, sharedErr error) {
	p := reflect.New(typ)
	plainErr = plainJSON.Unmarshal(data, p.Interface())
	s := reflect.New(typ)
	sharedErr = jsonAPIFor(parts).Unmarshal(data, s.Interface())
	return p.Interface(), s.Interface(), plainErr, sharedErr
}

var plainJSON = newJSONAPI(false, nil, nil)

var jsonAPIs = map[*partTable]interface {
	Unmarshal([]byte, any) error
}{}

// jsonAPIFor returns the one JSON configuration that shares through parts.
func jsonAPIFor(parts *partTable) interface{ Unmarshal([]byte, any) error } {
	if api, ok := jsonAPIs[parts]; ok {
		return api
	}
	api := newJSONAPI(false, newInternTable(), parts)
	jsonAPIs[parts] = api
	return api
}

// checkJSONUnchanged fails if an object kept differs from what its JSON
// decodes to now.
func checkJSONUnchanged(t testing.TB, kept []decoded) {
	t.Helper()
	for i, k := range kept {
		want, _, err, _ := jsonBoth(k.typ, k.data, nil)
		require.NoError(t, err)
		if !reflect.DeepEqual(want, k.obj) {
			t.Fatalf("%v #%d was changed after it was decoded:\n%#v\n%#v", k.typ, i, want, k.obj)
		}
	}
}

// Random objects of every kind decode from JSON to the same object with
// and without sharing parts (each twice, so that the second shares
// everything), and no object is changed by decoding the ones after it.
func TestJSONSharedPartsMatch(t *testing.T) {
	parts := newPartTable()
	var kept []decoded
	for _, typ := range protoTypes(t) {
		for i, data := range randomObjects(t, typ, kindSeed(typ, 0), 4) {
			obj := reflect.New(typ)
			require.NoError(t, obj.Interface().(protoUnmarshaler).Unmarshal(data))
			js, err := json.Marshal(obj.Interface())
			if err != nil {
				continue // random managedFields bytes that are not JSON
			}
			for range 2 {
				want, got, wantErr, gotErr := jsonBoth(typ, js, parts)
				require.NoError(t, wantErr, "%v #%d", typ, i)
				require.NoError(t, gotErr, "%v #%d", typ, i)
				require.Equal(t, want, got, "%v #%d", typ, i)
				kept = append(kept, decoded{typ, js, got})
			}
		}
	}
	require.Greater(t, len(kept), 1000, "too few objects to test anything")
	checkJSONUnchanged(t, kept)
}

// Two pods of one ReplicaSet decoded from JSON share what they have in
// common.
func TestJSONSharedParts(t *testing.T) {
	typ, parts := reflect.TypeFor[corev1.Pod](), newPartTable()
	var pods []*corev1.Pod
	for i := range 2 {
		js, err := json.Marshal(realisticPod(i))
		require.NoError(t, err)
		want, got, _, err := jsonBoth(typ, js, parts)
		require.NoError(t, err)
		require.Equal(t, want, got)
		pods = append(pods, got.(*corev1.Pod))
	}
	a, b := pods[0], pods[1]
	same := func(x, y any) bool { return reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer() }
	require.True(t, same(a.Labels, b.Labels), "labels")
	require.True(t, same(a.Spec.Containers, b.Spec.Containers), "containers")
	require.True(t, same(a.OwnerReferences, b.OwnerReferences), "owner references")
	require.False(t, same(a.Status.PodIPs, b.Status.PodIPs), "pod IPs differ")
}

// Unstructured objects share nothing, WithSharedParts or not: the walk
// they go through does not look inside their map[string]interface{}
// trees, so two items with the same labels hold two maps.
func TestUnstructuredSharesNothing(t *testing.T) {
	body := `{"kind":"WidgetList","apiVersion":"example.com/v1","metadata":{"resourceVersion":"9"},"items":[
{"kind":"Widget","apiVersion":"example.com/v1","metadata":{"name":"a","resourceVersion":"1","labels":{"app":"web","tier":"front"}}},
{"kind":"Widget","apiVersion":"example.com/v1","metadata":{"name":"b","resourceVersion":"2","labels":{"app":"web","tier":"front"}}}]}`
	c := UnstructuredCodec(schemaGVK("example.com", "v1", "Widget"), WithSharedParts())
	var labels []any
	_, err := DecodeJSONList(strings.NewReader(body), c, 0, func(o *unstructured.Unstructured) error {
		labels = append(labels, o.Object["metadata"].(map[string]any)["labels"])
		return nil
	})
	require.NoError(t, err)
	require.Len(t, labels, 2)
	require.Equal(t, labels[0], labels[1])
	require.NotEqual(t, reflect.ValueOf(labels[0]).UnsafePointer(), reflect.ValueOf(labels[1]).UnsafePointer(), "the labels maps are shared")
}

// A key met twice in one object decodes into what the field holds, which
// may be shared with an object decoded before: that object stays as it
// was, and the result is json-iterator's without sharing.
func TestJSONSharedPartsDuplicateKeys(t *testing.T) {
	typ, parts := reflect.TypeFor[corev1.Pod](), newPartTable()
	first := []byte(`{"metadata":{"name":"a","labels":{"app":"web"}},"spec":{"securityContext":{"runAsUser":1},"containers":[{"name":"c","env":[{"name":"A","value":"1"}]}],"tolerations":[{"key":"one"}]}}`)
	_, got, _, err := jsonBoth(typ, first, parts)
	require.NoError(t, err)
	kept := []decoded{{typ, first, got}}

	again := []byte(`{"metadata":{"name":"b","labels":{"app":"web"},"labels":{"tier":"db"}},"spec":{"securityContext":{"runAsUser":1},"securityContext":{"fsGroup":2},"containers":[{"name":"c","env":[{"name":"A","value":"1"}]}],"containers":[{"image":"x"}],"tolerations":[{"key":"one"}],"tolerations":[{"effect":"NoSchedule"}]}}`)
	want, got, wantErr, gotErr := jsonBoth(typ, again, parts)
	require.NoError(t, wantErr)
	require.NoError(t, gotErr)
	require.Equal(t, want, got)
	checkJSONUnchanged(t, kept)
}

// Random mutations of pods' JSON, and of JSON with keys repeated, decode
// the same with and without sharing, or fail both ways; no object decoded
// is changed by the ones after it.
func TestJSONSharedPartsMutations(t *testing.T) {
	typ, parts := reflect.TypeFor[corev1.Pod](), newPartTable()
	var seeds [][]byte
	for i := range 3 {
		js, err := json.Marshal(realisticPod(i))
		require.NoError(t, err)
		seeds = append(seeds, js)
	}
	r := rand.New(rand.NewSource(1))
	var kept []decoded
	for i := range 5000 {
		data := bytes.Clone(seeds[i%len(seeds)])
		for range 1 + r.Intn(3) {
			at, n := r.Intn(len(data)), 1+r.Intn(60)
			switch r.Intn(3) {
			case 0:
				const chars = "{}[],:\"ax1 "
				data[at] = chars[r.Intn(len(chars))]
			case 1: // repeat a stretch: keys met twice
				end := min(at+n, len(data))
				data = append(data[:end], append(bytes.Clone(data[at:end]), data[end:]...)...)
			case 2:
				data = append(data[:at], data[min(at+n, len(data)):]...)
			}
		}
		want, got, wantErr, gotErr := jsonBoth(typ, data, parts)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("mutation %d: without sharing: %v; with: %v\n%s", i, wantErr, gotErr, data)
		}
		if wantErr != nil {
			continue
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("mutation %d: different objects:\n%#v\n%#v", i, want, got)
		}
		kept = append(kept, decoded{typ, data, got})
	}
	require.Greater(t, len(kept), 300, "too few mutations decode to test anything")
	checkJSONUnchanged(t, kept)
}

// FuzzJSONSharedPartsMatch is TestJSONSharedPartsMutations for the fuzzing
// engine: pod JSON decodes alike with and without sharing parts (to equal
// objects), and the object decoded before, which may share parts with this
// one, is not changed by decoding it. Sharing may refuse what the plain
// decoder lets through only if it is not valid JSON: a part is skipped
// before it is decoded, and json-iterator's skipping checks strings for
// control characters where its decoding of a small struct's keys does not.
// Run it with
//
//	go test -run X -fuzz FuzzJSONSharedPartsMatch -fuzzminimizetime 100x ./internal/wire
func FuzzJSONSharedPartsMatch(f *testing.F) {
	typ, parts := reflect.TypeFor[corev1.Pod](), newPartTable()
	for i := range 3 {
		js, err := json.Marshal(realisticPod(i))
		require.NoError(f, err)
		f.Add(js)
	}
	var last []decoded
	f.Fuzz(func(t *testing.T, data []byte) {
		want, got, wantErr, gotErr := jsonBoth(typ, data, parts)
		switch {
		case wantErr != nil && gotErr == nil:
			t.Fatalf("sharing accepted what the plain decoder refuses: %v", wantErr)
		case wantErr == nil && gotErr != nil && json.Valid(data):
			t.Fatalf("sharing refused valid JSON that the plain decoder accepts: %v", gotErr)
		case wantErr != nil || gotErr != nil:
			return
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("different objects:\n%#v\n%#v", want, got)
		}
		checkJSONUnchanged(t, last)
		last = []decoded{{typ, bytes.Clone(data), got}}
	})
}

// Slices decoded from JSON have no spare capacity, with and without shared
// parts: json-iterator grows them by doubling, and the cache would hold the
// spare room for as long as it holds the object.
func TestJSONSlicesHaveNoSpareCapacity(t *testing.T) {
	p := realisticPod(1)
	p.Status.Conditions = nil
	for _, c := range []corev1.PodConditionType{"PodScheduled", "Initialized", "ContainersReady", "Ready", "PodReadyToStartContainers"} {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue})
	}
	js, err := json.Marshal(p)
	require.NoError(t, err)
	for name, api := range map[string]interface{ Unmarshal([]byte, any) error }{
		"plain": newJSONAPI(false, newInternTable(), nil), "shared parts": jsonAPIFor(newPartTable()),
	} {
		for range 2 { // the second time, shared parts come from the table
			got := new(corev1.Pod)
			require.NoError(t, api.Unmarshal(js, got), name)
			require.Len(t, got.Status.Conditions, 5, name)
			forEachSlice(reflect.ValueOf(got), func(path string, v reflect.Value) {
				assert.Equal(t, v.Len(), v.Cap(), "%s: %s", name, path)
			}, "pod")
		}
	}
}

// forEachSlice calls f with every non-empty slice reachable from v through
// exported fields, pointers, slices and map values.
func forEachSlice(v reflect.Value, f func(string, reflect.Value), path string) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			forEachSlice(v.Elem(), f, path)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if sf := v.Type().Field(i); sf.IsExported() {
				forEachSlice(v.Field(i), f, path+"."+sf.Name)
			}
		}
	case reflect.Slice:
		if v.Len() > 0 && v.Type().Elem().Kind() != reflect.Uint8 {
			f(path, v)
		}
		for i := range v.Len() {
			forEachSlice(v.Index(i), f, fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			forEachSlice(it.Value(), f, fmt.Sprintf("%s[%v]", path, it.Key()))
		}
	}
}

// Read from a stream, parts that lie across the read buffer's end decode
// as they do without sharing: those too long to remember (a ConfigMap's
// data) straight from the stream, shorter ones from a copy.
func TestJSONSharedPartsStreamed(t *testing.T) {
	cm := testConfigMap(1)
	cm.Data["long"] = configText(1, 20<<10)
	var stream []byte
	for i := range 6 {
		for _, obj := range []any{cm, realisticPod(i)} {
			js, err := json.Marshal(obj)
			require.NoError(t, err)
			stream = append(append(stream, js...), '\n')
		}
	}
	parts := newPartTable()
	for _, size := range []int{64, 4096, 8192} {
		plain := jsoniter.Parse(plainJSON, bytes.NewReader(stream), size)
		shared := jsoniter.Parse(jsonAPIFor(parts).(jsoniter.API), bytes.NewReader(stream), size)
		i := 0
		for ; plain.WhatIsNext() != jsoniter.InvalidValue; i++ {
			var want, got any = new(corev1.ConfigMap), new(corev1.ConfigMap)
			if i%2 == 1 {
				want, got = new(corev1.Pod), new(corev1.Pod)
			}
			plain.ReadVal(want)
			shared.ReadVal(got)
			require.NoError(t, plain.Error)
			require.NoError(t, shared.Error, "buffer %d, object %d", size, i)
			require.Equal(t, want, got, "buffer %d, object %d", size, i)
		}
		require.Equal(t, 12, i)
	}
}

// TestJSONSharedPartMetAgainIsCopiedDeep: a key met twice in one object
// merges into a part that may be shared with objects decoded before; the
// copy it merges into must share nothing with them, down to the bytes of a
// runtime.RawExtension, which decodes itself by appending into Raw[:0].
func TestJSONSharedPartMetAgainIsCopiedDeep(t *testing.T) {
	config := func(x string) string {
		return `[{"opaque":{"driver":"d","parameters":{"x":"` + x + `"}}}]`
	}
	a := `{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"a"},` +
		`"spec":{"devices":{"config":` + config("AAAA") + `}}}`
	b := `{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"b"},` +
		`"spec":{"devices":{"config":` + config("AAAA") + `,"config":` + config("BBBB") + `}}}`
	api := jsonAPIFor(newPartTable())
	var first, second resourcev1.ResourceClaim
	require.NoError(t, api.Unmarshal([]byte(a), &first))
	require.NoError(t, api.Unmarshal([]byte(b), &second))
	assert.JSONEq(t, `{"x":"AAAA"}`, string(first.Spec.Devices.Config[0].Opaque.Parameters.Raw), "the first object changed")
	assert.JSONEq(t, `{"x":"BBBB"}`, string(second.Spec.Devices.Config[0].Opaque.Parameters.Raw))
	var third resourcev1.ResourceClaim // the part remembered is still the first's
	require.NoError(t, api.Unmarshal([]byte(a), &third))
	assert.JSONEq(t, `{"x":"AAAA"}`, string(third.Spec.Devices.Config[0].Opaque.Parameters.Raw))
}

// depthTree nests without end, as a type of one's own may.
type depthTree map[string]depthTree

// TestJSONKeepsTheDepthLimit: json-iterator refuses values nested more
// than 10,000 levels deep, as encoding/json does, but did not count the
// levels of maps, and a part decoded from its bytes (WithSharedParts) had
// an iterator of its own that counted from nothing: a million levels went
// through (from one byte slice, in 200 s: each level's part was found by
// scanning to its end), and some millions overflowed the stack, a crash no
// recover catches. (A part of at most maxPartLen bytes still counts from
// nothing: some hundred levels more, and no further.)
func TestJSONKeepsTheDepthLimit(t *testing.T) {
	nested := func(levels int) []byte {
		return []byte(strings.Repeat(`{"a":`, levels-1) + `{}` + strings.Repeat(`}`, levels-1))
	}
	decode := func(api jsoniter.API, doc []byte, buffer int, into any) error {
		if buffer == 0 { // from one byte slice
			return api.Unmarshal(doc, into)
		}
		it := jsoniter.Parse(api, bytes.NewReader(doc), buffer)
		it.ReadVal(into)
		return it.Error
	}
	for _, levels := range []int{9_999, 100_000, 1_000_000} {
		doc := nested(levels)
		for _, buffer := range []int{0, 64, 4096} {
			t.Run(fmt.Sprintf("maps, %d levels, buffer %d", levels, buffer), func(t *testing.T) {
				plainErr := decode(plainJSON, doc, buffer, new(depthTree))
				sharedErr := decode(jsonAPIFor(newPartTable()).(jsoniter.API), doc, buffer, new(depthTree))
				require.Equal(t, levels > 10_000, plainErr != nil, "without sharing: %.200v", plainErr)
				require.Equal(t, levels > 10_000, sharedErr != nil, "with shared parts: %.200v", sharedErr)
			})
		}
	}
}

// Only maps that can hold themselves through maps and pointers alone are
// counted: between any other two levels a decoder that counts stands.
func TestHoldsItselfUncounted(t *testing.T) {
	type (
		viaPointer map[string]*viaPointer
		mutualA    map[string]map[string]*mutualA
		viaStruct  map[string]struct{ M viaStruct }
		viaSlice   map[string][]viaSlice
	)
	for typ, want := range map[reflect.Type]bool{
		reflect.TypeFor[depthTree]():         true,
		reflect.TypeFor[viaPointer]():        true,
		reflect.TypeFor[mutualA]():           true,
		reflect.TypeFor[viaStruct]():         false,
		reflect.TypeFor[viaSlice]():          false,
		reflect.TypeFor[map[string]any]():    false,
		reflect.TypeFor[map[string]string](): false,
	} {
		assert.Equal(t, want, holdsItselfUncounted(typ, typ.Elem(), nil), "%v", typ)
	}
}
