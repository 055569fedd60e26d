package wire

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	jsoniter "github.com/json-iterator/go"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kjson "sigs.k8s.io/json"
)

// The fuzz targets check that no input makes a decoder panic (including
// panics the decoders recover from themselves, which would hide bugs),
// that what they return is consistent, and that memory stays bounded by
// the input and the limits. Their seed corpora live in testdata/fuzz;
// regenerate them with go test -run TestWriteFuzzCorpus -wire.write-corpus.
//
// Run them with a cap on minimization, which otherwise spends the whole
// budget shrinking each new interesting input:
//
//	go test -run='^$' -fuzz=FuzzJSONWatch -fuzztime=60s -fuzzminimizetime=100x ./internal/wire

const fuzzLimit = 64 << 10

var writeCorpus = flag.Bool("wire.write-corpus", false, "rewrite the fuzz seed corpora in testdata/fuzz")

// checkErr fails on a panic the decoder recovered from.
func checkErr(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), "panicked") {
		t.Fatalf("decoder panicked: %v", err)
	}
}

// checkAlloc fails when decoding allocated far more than the input can
// explain.
func checkAlloc(t *testing.T, data []byte, f func()) {
	t.Helper()
	limit := uint64(256*len(data) + 4<<20)
	if got := allocatedBy(f); got > limit {
		t.Fatalf("allocated %d bytes for %d bytes of input", got, len(data))
	}
}

func drainWatch[T any](t *testing.T, next func() (Event[T], error), isNil func(T) bool) {
	t.Helper()
	for range 10000 {
		ev, err := next()
		checkErr(t, err)
		if errors.Is(err, ErrWrongKind) {
			continue
		}
		if err != nil {
			if _, again := next(); again != err {
				t.Fatalf("error not sticky: %v then %v", err, again)
			}
			return
		}
		switch ev.Type {
		case Error:
			if ev.Status == nil || !isNil(ev.Object) {
				t.Fatalf("ERROR event with status %v and an object", ev.Status)
			}
		case Added, Modified, Deleted, Bookmark:
			if ev.Status != nil || isNil(ev.Object) {
				t.Fatalf("%s event without an object", ev.Type)
			}
		default:
			t.Fatalf("event type %q", ev.Type)
		}
	}
}

func isNilPod(p *corev1.Pod) bool                         { return p == nil }
func isNilUnstructured(u *unstructured.Unstructured) bool { return u == nil }
func isNilPartial(p *metav1.PartialObjectMetadata) bool   { return p == nil }
func discard[T any](T) error                              { return nil }

// fuzzCodecs are built once per target: codecs are safe for concurrent use,
// and building json-iterator's decoders for every input would dominate.
func fuzzCodecs(f *testing.F) (*Codec[*corev1.Pod], *Codec[*corev1.Pod]) {
	return mustCodec[*corev1.Pod](f, podGVK), mustCodec[*corev1.Pod](f, podGVK, WithoutManagedFields())
}

func FuzzJSONWatch(f *testing.F) {
	pods, pruned := fuzzCodecs(f)
	u, m := UnstructuredCodec(podGVK, WithoutManagedFields()), MetadataCodec(podGVK)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAlloc(t, data, func() {
			drainWatch(t, NewJSONWatchDecoder(bytes.NewReader(data), pods, fuzzLimit).Next, isNilPod)
			drainWatch(t, NewJSONWatchDecoder(bytes.NewReader(data), pruned, fuzzLimit).Next, isNilPod)
			drainWatch(t, NewJSONWatchDecoder(bytes.NewReader(data), u, fuzzLimit).Next, isNilUnstructured)
			drainWatch(t, NewJSONWatchDecoder(bytes.NewReader(data), m, fuzzLimit).Next, isNilPartial)
		})
		evs, err := drainNext(NewJSONWatchDecoder(bytes.NewReader(data), pods, fuzzLimit).Next)
		sameAsParallel(t, bytes.NewReader(data), evs, err, func(r io.Reader) *ParallelWatchDecoder[*corev1.Pod] {
			return NewParallelJSONWatchDecoder(r, pods, fuzzLimit, parallelWorkers)
		})
	})
}

func FuzzProtobufWatch(f *testing.F) {
	pods, pruned := fuzzCodecs(f)
	m := MetadataCodec(podGVK, WithoutManagedFields())
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAlloc(t, data, func() {
			drainWatch(t, NewProtobufWatchDecoder(bytes.NewReader(data), pods, fuzzLimit).Next, isNilPod)
			drainWatch(t, NewProtobufWatchDecoder(bytes.NewReader(data), pruned, fuzzLimit).Next, isNilPod)
			drainWatch(t, NewProtobufWatchDecoder(bytes.NewReader(data), m, fuzzLimit).Next, isNilPartial)
		})
		evs, err := drainNext(NewProtobufWatchDecoder(bytes.NewReader(data), pods, fuzzLimit).Next)
		sameAsParallel(t, bytes.NewReader(data), evs, err, func(r io.Reader) *ParallelWatchDecoder[*corev1.Pod] {
			return NewParallelProtobufWatchDecoder(r, pods, fuzzLimit, parallelWorkers)
		})
	})
}

func FuzzJSONList(f *testing.F) {
	pods, pruned := fuzzCodecs(f)
	u, m := UnstructuredCodec(podGVK), MetadataCodec(podGVK, WithoutManagedFields())
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAlloc(t, data, func() {
			for _, c := range []*Codec[*corev1.Pod]{pods, pruned} {
				_, err := DecodeJSONList(bytes.NewReader(data), c, fuzzLimit, func(p *corev1.Pod) error {
					if p == nil {
						t.Fatal("nil item")
					}
					return nil
				})
				checkErr(t, err)
			}
			_, err := DecodeJSONList(bytes.NewReader(data), u, fuzzLimit, discard[*unstructured.Unstructured])
			checkErr(t, err)
			_, err = DecodeJSONList(bytes.NewReader(data), m, fuzzLimit, discard[*metav1.PartialObjectMetadata])
			checkErr(t, err)
		})
	})
}

func FuzzProtobufList(f *testing.F) {
	pods, pruned := fuzzCodecs(f)
	m := MetadataCodec(podGVK)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAlloc(t, data, func() {
			for _, c := range []*Codec[*corev1.Pod]{pods, pruned} {
				_, err := DecodeProtobufList(bytes.NewReader(data), c, fuzzLimit, func(p *corev1.Pod) error {
					if p == nil {
						t.Fatal("nil item")
					}
					return nil
				})
				checkErr(t, err)
			}
			_, err := DecodeProtobufList(bytes.NewReader(data), m, fuzzLimit, discard[*metav1.PartialObjectMetadata])
			checkErr(t, err)
		})
	})
}

func jsonWatchSeeds(t testing.TB) [][]byte {
	pod := string(jsonOf(t, realisticPod(1)))
	return [][]byte{
		jsonStream(t, event{"ADDED", realisticPod(1)}, event{"MODIFIED", realisticPod(2)}, event{"DELETED", realisticPod(3)},
			event{"BOOKMARK", bookmarkPod("200", true)}, event{"ERROR", goneStatus()}),
		jsonStream(t, event{"ADDED", testConfigMap(1)}, event{"ADDED", testDeployment(1)}),
		[]byte(`{"object":` + pod + `,"type":"ADDED"}{"type":"RENAMED","object":{}}`),
		[]byte(`{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","managedFields":[{"manager":"m","fieldsV1":{"f:x":{}}}]},"spec":{"a":[1,2.5,-3e4,null,true,{"b":"\u00e9\n"}]}}}`),
		[]byte(`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","code":410,"reason":"Expired","details":{"causes":[{"reason":"x"}]}}}`),
		[]byte(`{"type":"ADDED","object":` + pod[:len(pod)/3]),
		[]byte(`{"type":"ADDED","object":null} {"type":"ADDED"}`),
		// Not one event per line: the parallel decoder goes sequential.
		[]byte("{\"type\":\"ADDED\",\"object\":{\"kind\":\n" + string(jsonStream(t, event{"ADDED", realisticPod(2)}))),
		[]byte("{\"type\": \"MODIFIED\",\n \"object\": " + pod + "\n}\n"),
	}
}

func protobufWatchSeeds(t testing.TB) [][]byte {
	full := protoWatchStream(t, event{"ADDED", realisticPod(1)}, event{"MODIFIED", realisticPod(2)}, event{"DELETED", realisticPod(3)},
		event{"BOOKMARK", bookmarkPod("200", true)}, event{"ERROR", goneStatus()})
	partial := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}, ObjectMeta: realisticPod(4).ObjectMeta}
	return [][]byte{
		full,
		protoWatchStream(t, event{"ADDED", testConfigMap(1)}, event{"ADDED", partial}),
		protoFrame(t, "RENAMED", protoOf(t, realisticPod(1))),
		full[:len(full)/2],
		{0, 0, 0, 2, 0x0a, 0x00},
	}
}

func jsonListSeeds(t testing.TB) [][]byte {
	list, _ := podList(2, "1234", "token", new(int64(5)))
	items := jsonOf(t, list.Items)
	return [][]byte{
		jsonOf(t, list),
		[]byte(`{"kind":"PodList","apiVersion":"v1","items":` + string(items) + `,"metadata":{"resourceVersion":"1"}}`),
		jsonOf(t, goneStatus()),
		[]byte(`{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{},"items":[{"metadata":{"name":"a"}}]}`),
		[]byte(`{"kind":"ConfigMapList","items":[{"kind":"ConfigMap"}]}`),
	}
}

func protobufListSeeds(t testing.TB) [][]byte {
	list, _ := podList(2, "1234", "token", new(int64(5)))
	partial := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: "meta.k8s.io/v1"},
		Items: []metav1.PartialObjectMetadata{{ObjectMeta: realisticPod(1).ObjectMeta}}}
	return [][]byte{
		protoOf(t, list),
		protoOf(t, goneStatus()),
		protoOf(t, partial),
		protoOf(t, &corev1.ConfigMapList{TypeMeta: metav1.TypeMeta{Kind: "ConfigMapList", APIVersion: "v1"}, Items: []corev1.ConfigMap{*testConfigMap(1)}}),
	}
}

// TestWriteFuzzCorpus checks that the committed corpus files under
// testdata/fuzz are the seeds above, so that go test runs them without
// -fuzz and the fuzzer starts from them: it fails on a seed file that is
// missing, differs, or no longer comes from a seed. With
// -wire.write-corpus it rewrites them instead (and removes the stale
// ones). Files not named seed-* (inputs the fuzzer found) are left alone.
func TestWriteFuzzCorpus(t *testing.T) {
	var bad []string
	for name, seeds := range map[string][][]byte{
		"FuzzJSONWatch":                   jsonWatchSeeds(t),
		"FuzzProtobufWatch":               protobufWatchSeeds(t),
		"FuzzJSONList":                    jsonListSeeds(t),
		"FuzzProtobufList":                protobufListSeeds(t),
		"FuzzJSONListMatchesApimachinery": jsonListDiffSeeds(t),
		"FuzzJSONMatchesApimachinery": {
			jsonOf(t, realisticPod(1)),
			[]byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","labels":{"x":null}},"spec":{"priority":null,"containers":[{"name":"c","resources":{"limits":{"cpu":"1.5"}}}]},"status":{"startTime":null}}`),
			[]byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"generation":9007199254740993,"annotations":{"a":"\u00e9\ud83d\ude00"}},"spec":{"overhead":{"memory":"1e3"},"x":[1,1.0,-0,1e2]}}`),
		},
	} {
		dir := filepath.Join("testdata", "fuzz", name)
		want := map[string]string{} // file name -> content
		for _, s := range seeds {
			want[fmt.Sprintf("seed-%x", sha256.Sum256(s))[:len("seed-")+16]] = fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
		}
		stale, err := filepath.Glob(filepath.Join(dir, "seed-*"))
		require.NoError(t, err)
		if *writeCorpus {
			require.NoError(t, os.MkdirAll(dir, 0o755))
			for file, content := range want {
				require.NoError(t, os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644))
			}
			for _, file := range stale {
				if _, ok := want[filepath.Base(file)]; !ok {
					require.NoError(t, os.Remove(file))
				}
			}
			continue
		}
		for file, content := range want {
			got, err := os.ReadFile(filepath.Join(dir, file))
			switch {
			case errors.Is(err, fs.ErrNotExist):
				bad = append(bad, filepath.Join(dir, file)+" (missing)")
			case err != nil:
				t.Fatal(err)
			case string(got) != content:
				bad = append(bad, filepath.Join(dir, file)+" (differs)")
			}
		}
		for _, file := range stale {
			if _, ok := want[filepath.Base(file)]; !ok {
				bad = append(bad, file+" (no seed gives it)")
			}
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		t.Fatalf("the committed fuzz corpus is not the seeds in fuzz_test.go:\n\t%s\nrerun with go test -run '^TestWriteFuzzCorpus$' ./internal/wire -wire.write-corpus and commit testdata/fuzz",
			strings.Join(bad, "\n\t"))
	}
}

// FuzzJSONMatchesApimachinery decodes one object with this package and with
// k8s.io/apimachinery's decoders (sigs.k8s.io/json for typed objects, the
// unstructured JSON scheme for maps): whenever both accept the bytes, they
// must produce the same object.
//
// Inputs that are not valid UTF-8 are left out: encoding/json replaces
// invalid bytes in strings with U+FFFD while json-iterator keeps them, and
// kube-apiserver only ever sends valid UTF-8 (its encoder coerces strings).
func FuzzJSONMatchesApimachinery(f *testing.F) {
	pods, u := mustCodec[*corev1.Pod](f, podGVK), UnstructuredCodec(podGVK)
	f.Fuzz(func(t *testing.T, data []byte) {
		if !utf8.Valid(data) {
			return
		}
		want := new(corev1.Pod)
		if kjson.UnmarshalCaseSensitivePreserveInts(data, want) == nil && want.Kind == "Pod" && want.APIVersion == "v1" {
			it := jsoniter.ParseBytes(pods.json, data)
			if it.WhatIsNext() == jsoniter.ObjectValue {
				got := pods.readJSON(it)
				if it.Error == nil {
					if err := pods.finishJSON(got); err != nil {
						t.Fatalf("kind check: %v", err)
					}
					semanticEqual(t, got, want)
				}
			}
		}
		wantU := new(unstructured.Unstructured)
		if wantU.UnmarshalJSON(data) == nil && wantU.GetKind() == "Pod" && wantU.GetAPIVersion() == "v1" {
			it := jsoniter.ParseBytes(u.json, data)
			got := readUnstructured(it, false)
			if it.Error == nil {
				semanticEqual(t, got, wantU)
			}
		}
	})
}

// FuzzJSONListMatchesApimachinery decodes a pod list with DecodeJSONList
// and with sigs.k8s.io/json (as apimachinery does): whenever this package
// accepts the bytes, apimachinery must too, with the same resourceVersion,
// continue token, remaining count and items. (It refuses more: a list
// without "items", an item of another kind.)
//
// Inputs that are not valid UTF-8, or hold control characters other than
// white space, are left out: json-iterator skips an unknown key without
// looking inside its string, and kube-apiserver only ever sends valid JSON.
func FuzzJSONListMatchesApimachinery(f *testing.F) {
	pods := mustCodec[*corev1.Pod](f, podGVK)
	f.Fuzz(func(t *testing.T, data []byte) {
		if !utf8.Valid(data) || bytes.ContainsFunc(data, func(r rune) bool { return r < 0x20 && r != '\t' && r != '\n' && r != '\r' }) {
			return
		}
		var got []*corev1.Pod
		meta, err := DecodeJSONList(bytes.NewReader(data), pods, fuzzLimit, func(p *corev1.Pod) error {
			got = append(got, p)
			return nil
		})
		if err != nil {
			return
		}
		want := new(corev1.PodList)
		if err := kjson.UnmarshalCaseSensitivePreserveInts(data, want); err != nil {
			t.Fatalf("accepted a list apimachinery refuses (%v)", err)
		}
		if meta.ResourceVersion != want.ResourceVersion || meta.Continue != want.Continue ||
			(meta.RemainingItemCount == nil) != (want.RemainingItemCount == nil) ||
			meta.RemainingItemCount != nil && *meta.RemainingItemCount != *want.RemainingItemCount {
			t.Fatalf("list metadata: got %+v, apimachinery %+v", meta, want.ListMeta)
		}
		if len(got) != len(want.Items) {
			t.Fatalf("%d items, apimachinery %d", len(got), len(want.Items))
		}
		for i, p := range got {
			w := &want.Items[i]
			w.TypeMeta = p.TypeMeta // the list's items carry no kind of their own in apimachinery
			semanticEqual(t, p, w)
		}
	})
}

func jsonListDiffSeeds(t testing.TB) [][]byte {
	return append(jsonListSeeds(t),
		[]byte(`{"kind":"PodList","metadata":{"resourceVersion":"1"},"metadata":{"continue":"x"},"items":[{"metadata":{"name":"a","labels":{"a":"b"}}}]}`),
		[]byte(`{"metadata":{"remainingItemCount":3},"items":null}`),
		[]byte(`{"items":[{"metadata":{"name":"a"},"spec":{"containers":[{"name":"c"}]}},{}]}`),
	)
}
