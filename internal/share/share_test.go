package share_test

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/listwatch/listwatch/internal/share"
)

// pod returns pod i of app: the pods of one app differ only in name, uid,
// node and status, as the pods of one ReplicaSet do.
func pod(app string, i int) *corev1.Pod {
	grace := int64(30)
	yes := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:              fmt.Sprintf("%s-%d", app, i),
			Namespace:         "shop",
			UID:               types.UID(fmt.Sprintf("uid-%s-%d", app, i)),
			ResourceVersion:   fmt.Sprint(100 + i),
			CreationTimestamp: metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Local()),
			Labels:            map[string]string{"app": app, "tier": "backend"},
			Annotations:       map[string]string{"prometheus.io/scrape": "true"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-rs", UID: "rs-" + "uid",
				Controller: &yes,
			}},
		},
		Spec: corev1.PodSpec{
			NodeName:                      fmt.Sprintf("node-%d", i%3),
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name:  "server",
				Image: "registry.example/" + app + ":v1",
				Args:  []string{"--port=8080", "--verbose"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Env:   []corev1.EnvVar{{Name: "APP", Value: app}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
				},
			}},
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			PodIP: fmt.Sprintf("10.0.0.%d", i),
			Conditions: []corev1.PodCondition{{
				Type: corev1.PodReady, Status: corev1.ConditionTrue,
				LastTransitionTime: metav1.NewTime(time.Unix(int64(1000+i), 0)),
			}},
		},
	}
}

func sameMap[M ~map[K]V, K comparable, V any](a, b M) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

func sameSlice[S ~[]E, E any](a, b S) bool {
	return unsafe.SliceData(a) == unsafe.SliceData(b) && len(a) == len(b)
}

func TestShareSharesEqualParts(t *testing.T) {
	tab := share.New(0)
	a, b, other := pod("cart", 1), pod("cart", 2), pod("search", 3)
	share.Share(tab, a)
	share.Share(tab, b)
	share.Share(tab, other)

	assert.True(t, sameMap(a.Labels, b.Labels), "labels")
	assert.True(t, sameMap(a.Annotations, other.Annotations), "annotations of another app")
	assert.True(t, sameSlice(a.OwnerReferences, b.OwnerReferences), "owner references")
	assert.True(t, sameSlice(a.Spec.Containers, b.Spec.Containers), "containers")
	assert.True(t, sameSlice(a.Spec.Tolerations, other.Spec.Tolerations), "tolerations")
	assert.Same(t, a.Spec.TerminationGracePeriodSeconds, other.Spec.TerminationGracePeriodSeconds)
	// Within the other app's container, the parts it has in common.
	assert.True(t, sameMap(a.Spec.Containers[0].Resources.Requests, other.Spec.Containers[0].Resources.Requests), "requests")
	assert.True(t, sameSlice(a.Spec.Containers[0].Ports, other.Spec.Containers[0].Ports), "ports")
	assert.True(t, sameSlice(a.Spec.Containers[0].Args, other.Spec.Containers[0].Args), "args")

	assert.False(t, sameMap(a.Labels, other.Labels), "labels of another app")
	assert.False(t, sameSlice(a.Spec.Containers, other.Spec.Containers), "containers of another app")
	assert.False(t, sameSlice(a.Status.Conditions, b.Status.Conditions), "conditions at other times")

	assert.Equal(t, pod("cart", 1), a)
	assert.Equal(t, pod("cart", 2), b)
	assert.Equal(t, pod("search", 3), other)
}

// After Forget, nothing shares with what the Table held: a Reflector
// forgets before each list, so a deleted object's parts are not kept alive
// past it.
func TestForget(t *testing.T) {
	tab := share.New(0)
	a, b, c := pod("cart", 1), pod("cart", 2), pod("cart", 3)
	share.Share(tab, a)
	tab.Forget()
	share.Share(tab, b)
	share.Share(tab, c)
	assert.False(t, sameMap(a.Labels, b.Labels), "shared across Forget")
	assert.True(t, sameMap(b.Labels, c.Labels), "after Forget, sharing goes on")
}

func TestShareKeepsNilAndEmpty(t *testing.T) {
	tab := share.New(0)
	withEmpty := pod("cart", 1)
	withEmpty.Spec.Tolerations = []corev1.Toleration{}
	withEmpty.Annotations = map[string]string{}
	withNil := pod("cart", 2)
	withNil.Spec.Tolerations = nil
	withNil.Annotations = nil
	share.Share(tab, withEmpty)
	share.Share(tab, withNil)
	assert.NotNil(t, withEmpty.Spec.Tolerations)
	assert.NotNil(t, withEmpty.Annotations)
	assert.Nil(t, withNil.Spec.Tolerations)
	assert.Nil(t, withNil.Annotations)
}

// A slice decoded with room to spare (decoders grow slices by doubling) is
// trimmed to its length, shared or kept as the object's own: were a shared
// array to have room behind it, append(pod.Spec.Tolerations, x), which
// modifies no pod, would write where the same append on every other pod
// sharing it writes.
func TestShareTrimsSpareCapacity(t *testing.T) {
	roomy := func(i int) *corev1.Pod {
		p := pod("cart", i)
		p.Spec.Tolerations = append(make([]corev1.Toleration, 0, 8), p.Spec.Tolerations...)
		q := resource.MustParse("64Mi") // a Quantity in place: the volumes are never shared
		p.Spec.Volumes = append(make([]corev1.Volume, 0, 8),
			corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &q}}})
		return p
	}
	tab := share.New(0)
	a, b := roomy(1), roomy(2)
	share.Share(tab, a)
	share.Share(tab, b)
	require.True(t, sameSlice(a.Spec.Tolerations, b.Spec.Tolerations), "tolerations")
	for _, p := range []*corev1.Pod{a, b} {
		assert.Equal(t, len(p.Spec.Tolerations), cap(p.Spec.Tolerations), "%s: room behind the shared tolerations", p.Name)
		assert.Equal(t, len(p.Spec.Volumes), cap(p.Spec.Volumes), "%s: room behind its own volumes", p.Name)
	}
	first := corev1.Toleration{Key: "first"}
	fromA := append(a.Spec.Tolerations, first)
	_ = append(b.Spec.Tolerations, corev1.Toleration{Key: "second"})
	assert.Equal(t, first, fromA[len(fromA)-1], "an append to one pod's tolerations, overwritten by one to the other's")
	assert.Equal(t, roomy(1), a)
	assert.Equal(t, roomy(2), b)
}

// TestShareComparesExactly: values that == or reflect.DeepEqual would call
// equal but that are not the same representation are never shared.
func TestShareComparesExactly(t *testing.T) {
	type box struct {
		F  *float64
		Fs []float64
		Q  map[string]resource.Quantity
	}
	zero, negZero := 0.0, math.Copysign(0, -1)
	a := &box{F: &zero, Fs: []float64{zero}, Q: map[string]resource.Quantity{"cpu": resource.MustParse("1")}}
	b := &box{F: &negZero, Fs: []float64{negZero}, Q: map[string]resource.Quantity{"cpu": resource.MustParse("1000m")}}
	tab := share.New(0)
	share.Share(tab, a)
	share.Share(tab, b)
	assert.NotSame(t, a.F, b.F)
	assert.False(t, sameSlice(a.Fs, b.Fs))
	assert.False(t, sameMap(a.Q, b.Q), "1 and 1000m are equal quantities but print differently")
	assert.True(t, math.Signbit(*b.F))
}

// In a table where every value has the same hash, only the comparison
// tells values apart, and it looks at all of each: a slice is not taken for
// a longer one that starts with it (even when the array behind it holds the
// rest), nor for one that differs past its first element; a map is not
// taken for a smaller one whose entries it holds; and a map with float
// keys, which may hold several NaN keys, is never shared (plainKey). Map
// iteration order is random, so each try runs on a fresh table: a
// comparison that looks at some entries only passes thirty tries with
// probability 2^-30.
func TestShareComparesWholeValues(t *testing.T) {
	type box struct {
		Ints  []int64
		Names []string // compared element by element, not as bytes
		Attrs map[int32]string
		ByNaN map[float64]string
	}
	byNaN := func(vals ...string) map[float64]string {
		m := map[float64]string{}
		for _, v := range vals {
			m[math.NaN()] = v // NaN != NaN: every one is a key of its own
		}
		return m
	}
	for try := range 30 {
		tab := share.NewColliding(0)
		first := &box{Ints: []int64{1, 2}, Names: []string{"a", "b"}, Attrs: map[int32]string{1: "a"}, ByNaN: byNaN("a", "a")}
		backing := []int64{1, 2}
		prefix := &box{Ints: backing[:1], Attrs: map[int32]string{1: "a", 2: "b"}, ByNaN: byNaN("a", "b")}
		tail := &box{Ints: []int64{1, 3}, Names: []string{"a", "c"}}
		for _, b := range []*box{first, prefix, tail} {
			share.Share(tab, b)
		}
		require.Equal(t, []int64{1}, prefix.Ints, "try %d: a slice that a longer one starts with", try)
		require.Equal(t, map[int32]string{1: "a", 2: "b"}, prefix.Attrs, "try %d: a map holding a smaller one", try)
		var vals []string
		for _, v := range prefix.ByNaN {
			vals = append(vals, v)
		}
		slices.Sort(vals)
		require.Equal(t, []string{"a", "b"}, vals, "try %d: NaN keys", try)
		require.Equal(t, []int64{1, 3}, tail.Ints, "try %d: a slice that differs in its last element", try)
		require.Equal(t, []string{"a", "c"}, tail.Names, "try %d: a slice of strings that differs in its last element", try)
		require.Equal(t, []int64{1, 2}, first.Ints, "try %d", try)
	}
}

// TestShareLeavesUnexportedAlone: a node behind an unexported field belongs
// to its package; Share compares it by identity and never replaces it.
func TestShareLeavesUnexportedAlone(t *testing.T) {
	type inner struct{ N int }
	type box struct {
		p *inner
		P *inner
	}
	a, b := &box{p: &inner{1}, P: &inner{1}}, &box{p: &inner{1}, P: &inner{1}}
	tab := share.New(0)
	share.Share(tab, a)
	share.Share(tab, b)
	assert.NotSame(t, a.p, b.p)
	assert.Same(t, a.P, b.P)
}

// An embedded field of an unexported type is gone into, as its fields are
// promoted to exported ones; a map with integer keys is shared as one with
// string keys is.
func TestShareReachesPromotedFieldsAndIntegerKeys(t *testing.T) {
	type meta struct{ Labels map[string]string }
	type box struct {
		meta
		Ports map[int32]string
	}
	mk := func() *box {
		return &box{meta: meta{Labels: map[string]string{"app": "web"}}, Ports: map[int32]string{80: "http"}}
	}
	a, b := mk(), mk()
	tab := share.New(0)
	share.Share(tab, a)
	share.Share(tab, b)
	assert.True(t, sameMap(a.Labels, b.Labels), "a map promoted from an embedded unexported type")
	assert.True(t, sameMap(a.Ports, b.Ports), "a map with integer keys")
	assert.Equal(t, mk(), b)
}

// tree is a recursive type with every kind of node.
type tree struct {
	Name     string
	Weight   float32
	Flag     bool
	Tags     map[string]string
	Attrs    map[int32]leaf
	Kids     []tree
	Next     *tree
	Pair     [2]leaf
	Any      any
	Bytes    []byte
	Names    []string
	Optional *int16
}

type leaf struct {
	A uint8
	S string
	B int64
}

// randomTree builds a tree from a small alphabet of values, so that many
// parts repeat.
func randomTree(r *rand.Rand, depth int) tree {
	pick := func(vals ...string) string { return vals[r.IntN(len(vals))] }
	t := tree{Name: pick("a", "b", ""), Weight: float32(r.IntN(2)), Flag: r.IntN(2) == 0}
	if r.IntN(3) > 0 {
		t.Tags = map[string]string{}
		for range r.IntN(3) {
			t.Tags[pick("x", "y", "z")] = pick("1", "2")
		}
	}
	if r.IntN(3) == 0 {
		t.Attrs = map[int32]leaf{int32(r.IntN(2)): {A: uint8(r.IntN(2)), S: pick("p", "q")}}
	}
	if depth > 0 {
		for range r.IntN(3) {
			t.Kids = append(t.Kids, randomTree(r, depth-1))
		}
		if r.IntN(2) == 0 {
			next := randomTree(r, depth-1)
			t.Next = &next
		}
	}
	t.Pair[r.IntN(2)] = leaf{B: int64(r.IntN(2)), S: pick("m", "n")}
	if r.IntN(4) == 0 {
		t.Any = pick("i", "j") // an interface: compared by identity
	}
	if r.IntN(2) == 0 {
		t.Bytes = []byte(pick("bytes", "other", ""))
	}
	if r.IntN(2) == 0 {
		t.Names = []string{pick("n1", "n2"), pick("n1", "n3")}
	}
	if r.IntN(2) == 0 {
		v := int16(r.IntN(2))
		t.Optional = &v
	}
	return t
}

// TestShareRandomTrees shares many random trees through tables of several
// sizes, and through tables in which every value has the same hash, and
// checks that each tree still equals the copy built from the same seed.
func TestShareRandomTrees(t *testing.T) {
	for _, slots := range []int{2, 64, 0} {
		for _, collide := range []bool{false, true} {
			t.Run(fmt.Sprintf("slots=%d/collide=%v", slots, collide), func(t *testing.T) {
				tab := share.New(slots)
				if collide {
					tab = share.NewColliding(slots)
				}
				var shared []*tree
				for seed := range uint64(500) {
					tr := randomTree(rand.New(rand.NewPCG(seed, 1)), 3)
					share.Share(tab, &tr)
					shared = append(shared, &tr)
				}
				for seed, tr := range shared {
					want := randomTree(rand.New(rand.NewPCG(uint64(seed), 1)), 3)
					require.Equal(t, want, *tr, "tree %d", seed)
				}
			})
		}
	}
}

// TestShareIgnoresNonPointers: Share leaves a value that is not a pointer,
// a nil pointer and a pointer held in an interface alone, and remembers
// nothing of them; the same tree behind a *tree is remembered.
func TestShareIgnoresNonPointers(t *testing.T) {
	full := func() tree { return tree{Tags: map[string]string{"a": "b"}, Kids: []tree{{Name: "k"}}} }
	tab := share.New(0)
	share.Share(tab, full())
	share.Share[*tree](tab, nil)
	tr := full()
	share.Share[any](tab, &tr)
	require.Zero(t, share.RememberedOf(tab), "values remembered from non-pointers")
	require.Zero(t, share.SlotsOf(tab), "slots allocated for non-pointers")

	share.Share(tab, &tr) // the control: the same tree as a *tree is remembered
	require.NotZero(t, share.RememberedOf(tab), "nothing remembered from a *tree")
}

// BenchmarkShare shares freshly decoded-like pods (deep copies of 1,000
// pods of 50 apps), against the copy alone.
// Maps of more than a few entries are compared by looking each entry up
// (the search of small maps is quadratic: a Node's 20,000-entry resource
// list took 1.5 s to compare): equal ones are shared, and one that
// differs in a key, a value or a quantity's form is not.
func TestShareLargeMaps(t *testing.T) {
	list := func(n int, last string) corev1.ResourceList {
		rl := corev1.ResourceList{}
		for i := range n - 1 {
			rl[corev1.ResourceName(fmt.Sprintf("example.com/r-%d", i))] = resource.MustParse("1")
		}
		rl["example.com/last"] = resource.MustParse(last)
		return rl
	}
	holding := func(rl corev1.ResourceList) *corev1.Pod {
		p := &corev1.Pod{}
		p.Spec.Overhead = rl
		return p
	}
	tab := share.New(0)
	a := holding(list(100, "1"))
	share.Share(tab, a)
	for name, c := range map[string]struct {
		rl    corev1.ResourceList
		share bool
	}{
		"equal":                    {list(100, "1"), true},
		"another value":            {list(100, "2"), false},
		"an equal quantity, 1000m": {list(100, "1000m"), false},
		"another key": {func() corev1.ResourceList {
			rl := list(100, "1")
			delete(rl, "example.com/r-0")
			rl["example.com/other"] = resource.MustParse("1")
			return rl
		}(), false},
	} {
		b := holding(c.rl)
		share.Share(tab, b)
		assert.Equal(t, c.share, sameMap(a.Spec.Overhead, b.Spec.Overhead), name)
	}
}

// BenchmarkShareLargeMap shares an object holding a map of 500 entries
// (the most a value under MaxValueBytes holds of these) equal to one
// shared before: linear in the entries. (It had 20,000, which took 1.5 s
// when small maps' search was quadratic.)
func BenchmarkShareLargeMap(b *testing.B) {
	rl := corev1.ResourceList{}
	for i := range 500 {
		rl[corev1.ResourceName(fmt.Sprintf("example.com/r-%d", i))] = resource.MustParse("1")
	}
	tab := share.New(0)
	share.Share(tab, &corev1.Pod{Spec: corev1.PodSpec{Overhead: rl}})
	for b.Loop() {
		p := &corev1.Pod{Spec: corev1.PodSpec{Overhead: maps.Clone(rl)}}
		share.Share(tab, p)
		if !sameMap(rl, p.Spec.Overhead) {
			b.Fatal("the map was not shared")
		}
	}
}

func BenchmarkShare(b *testing.B) {
	pods := make([]*corev1.Pod, 1000)
	for i := range pods {
		pods[i] = pod(fmt.Sprint("app-", i/20), i)
	}
	for _, sharing := range []bool{false, true} {
		b.Run(fmt.Sprint("share=", sharing), func(b *testing.B) {
			tab := share.New(0)
			b.ReportAllocs()
			for i := range b.N {
				p := pods[i%len(pods)].DeepCopy()
				if sharing {
					share.Share(tab, p)
				}
			}
		})
	}
}

// TestTableGrowsAsItFills: a table for a few objects stays small; one that
// sees many distinct values grows to its bound and no further.
func TestTableGrowsAsItFills(t *testing.T) {
	small := share.New(0)
	for i := range 10 {
		share.Share(small, pod("cart", i))
	}
	assert.Equal(t, 1024, share.SlotsOf(small))

	large := share.New(0)
	var pods []*corev1.Pod
	for i := range 5000 {
		p := pod(fmt.Sprint("app-", i), i)
		share.Share(large, p)
		pods = append(pods, p)
	}
	assert.Equal(t, share.DefaultSlots, share.SlotsOf(large))
	for i, p := range pods {
		require.Equal(t, pod(fmt.Sprint("app-", i), i), p)
	}
	// It still shares. The containers of those 5,000 pods all differed, so
	// containers stopped being looked up but once in 16; once they repeat,
	// a window later, they are looked up again.
	var again []*corev1.Pod
	for i := range 3000 {
		p := pod("app-again", i)
		share.Share(large, p)
		again = append(again, p)
	}
	// The table is full, so a value can be pushed out by chance before the
	// next pod looks for it: count over the last thousand pods.
	var containers, tolerations int
	last := again[len(again)-1000:]
	for i := 1; i < len(last); i++ {
		a, b := last[i-1], last[i]
		if sameSlice(a.Spec.Containers, b.Spec.Containers) {
			containers++
		}
		if sameSlice(a.Spec.Tolerations, b.Spec.Tolerations) {
			tolerations++
		}
	}
	assert.Greater(t, containers, 950, "pods sharing their predecessor's containers, of 999")
	assert.Greater(t, tolerations, 950, "pods sharing their predecessor's tolerations, of 999")
}

// A table that may still grow forgets nothing: a value that finds its
// bucket full makes it grow, up to its bound (New's slots rounded up to a
// power of two) if it must. At its bound, a full bucket takes the value in
// a slot picked at random, so that two values that keep coming back to it
// do not push each other out every time.
func TestTableGrowsWhenABucketFills(t *testing.T) {
	type box struct{ P *int }
	shared := func(tab *share.Table, v int) bool {
		b := &box{P: &v}
		share.Share(tab, b)
		return b.P != &v
	}
	for slots, want := range map[int]int{0: share.DefaultSlots, 2048: 2048, 3000: 4096} {
		tab := share.NewColliding(slots) // every value in one bucket of four slots
		for v := range 5 {
			require.False(t, shared(tab, v))
		}
		assert.Equal(t, want, share.SlotsOf(tab), "New(%d)", slots)
	}

	tab := share.NewColliding(4) // one bucket, full
	for v := range 4 {
		shared(tab, 100+v)
	}
	hits := 0
	for i := range 100 {
		if shared(tab, i%2) {
			hits++
		}
	}
	assert.Positive(t, hits, "two values coming back in turn to a full bucket")
}

// Kinds of parts that differ in most objects are looked up once in 16
// only; the parts inside them are shared all the same.
func TestShareSkipsKindsThatRarelyRepeat(t *testing.T) {
	tab := share.New(0)
	var pods []*corev1.Pod
	for i := range 3000 {
		p := pod("web", i)
		p.Spec.Containers[0].Name = fmt.Sprint("c-", i) // every container differs
		share.Share(tab, p)
		pods = append(pods, p)
	}
	shared := 0
	for i := 2048; i < len(pods); i++ {
		if sameSlice(pods[i].Spec.Containers[0].Ports, pods[i-1].Spec.Containers[0].Ports) {
			shared++
		}
	}
	assert.Greater(t, shared, (len(pods)-2048)*9/10, "ports inside the containers are shared")
	assert.True(t, share.Skipping(tab, pods[0].Spec.Containers), "containers are looked up")
	assert.False(t, share.Skipping(tab, pods[0].Spec.Containers[0].Ports))
	for i, p := range pods {
		want := pod("web", i)
		want.Spec.Containers[0].Name = fmt.Sprint("c-", i)
		require.Equal(t, want, p)
	}
}

// FuzzShare builds trees from the fuzzer's bytes (each tree from a seed
// read from them), shares them all through a small table, some twice, and
// checks each still equals the tree built again from its seed.
func FuzzShare(f *testing.F) {
	f.Add([]byte{1, 2, 3, 1, 2, 3}, uint8(8), false)
	f.Add([]byte{0, 0, 0, 0, 7, 7, 7, 7}, uint8(2), true)
	f.Fuzz(func(t *testing.T, seeds []byte, slots uint8, collide bool) {
		if len(seeds) > 64 {
			seeds = seeds[:64]
		}
		tab := share.New(int(slots))
		if collide {
			tab = share.NewColliding(int(slots))
		}
		build := func(seed byte) tree { return randomTree(rand.New(rand.NewPCG(uint64(seed), 2)), 2) }
		trees := make([]*tree, len(seeds))
		for i, seed := range seeds {
			tr := build(seed)
			trees[i] = &tr
			share.Share(tab, trees[i])
			if seed%3 == 0 { // again, when its parts are already the table's own
				share.Share(tab, trees[i])
			}
		}
		for i, seed := range seeds {
			require.Equal(t, build(seed), *trees[i], "tree %d (seed %d)", i, seed)
		}
	})
}

// schemaNode leads back to itself, as apiextensions' JSONSchemaProps does.
type schemaNode struct {
	Name       string
	Properties map[string]schemaNode
	Items      *schemaNode
	AllOf      []schemaNode
}

func schemaTree(depth int) *schemaNode {
	n := &schemaNode{Name: "n"}
	if depth > 0 {
		n.Items = schemaTree(depth - 1)
		n.Properties = map[string]schemaNode{"a": *schemaTree(depth - 1)}
		n.AllOf = []schemaNode{*schemaTree(depth - 1)}
	}
	return n
}

// Goroutines that meet a type that leads back to itself for the first time
// together share correctly. (A layout used to be published before the plan
// of its self-reference had its element; the window was too narrow for this
// test to catch under -race in three runs, so it guards the concurrent first
// use in general, not that bug.)
func TestShareFirstUseOfARecursiveTypeFromManyGoroutines(t *testing.T) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			tab := share.New(0)
			<-start
			a, b := schemaTree(3), schemaTree(3)
			share.Share(tab, a)
			share.Share(tab, b)
			assert.Equal(t, schemaTree(3), a)
			assert.Equal(t, schemaTree(3), b)
		})
	}
	close(start)
	wg.Wait()
}

// A part that holds a resource.Quantity in place is never shared:
// String() fills a cache inside the Quantity, so two goroutines reading
// each its own pod raced on one memory. Parts beside it, and resource
// lists (maps, whose reads copy their Quantities), are shared all the same.
func TestQuantityHeldInPlaceIsNeverShared(t *testing.T) {
	tab := share.New(0)
	mk := func(name string) *corev1.Pod {
		q := resource.MustParse("64Mi")
		mode := int32(0o644)
		p := &corev1.Pod{Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &q}}},
				{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: &mode}}},
			},
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
			}}},
		}}
		p.Name = name
		return p
	}
	a, b := mk("a"), mk("b")
	share.Share(tab, a)
	share.Share(tab, b)
	require.NotSame(t, a.Spec.Volumes[0].EmptyDir.SizeLimit, b.Spec.Volumes[0].EmptyDir.SizeLimit)
	require.NotSame(t, a.Spec.Volumes[0].EmptyDir, b.Spec.Volumes[0].EmptyDir)
	assert.Same(t, a.Spec.Volumes[1].Projected, b.Spec.Volumes[1].Projected, "a part holding no Quantity")
	assert.Equal(t, reflect.ValueOf(a.Spec.Containers[0].Resources.Limits).Pointer(),
		reflect.ValueOf(b.Spec.Containers[0].Resources.Limits).Pointer(), "a resource list")
	var wg sync.WaitGroup
	for _, p := range []*corev1.Pod{a, b} {
		wg.Go(func() { _ = p.Spec.Volumes[0].EmptyDir.SizeLimit.String() }) // -race: no race
	}
	wg.Wait()
}

// Where a Quantity is held in place, and where reads copy it.
func TestQuantityPlan(t *testing.T) {
	type chain struct {
		Next *chain
		Q    *resource.Quantity
		M    map[string]resource.Quantity
	}
	q := resource.MustParse("1")
	for _, c := range []struct {
		name string
		v    any // a pointer to the value
		want bool
	}{
		{"resource list", &corev1.ResourceList{corev1.ResourceCPU: q}, false},
		{"map of pointers", &map[string]*resource.Quantity{"a": &q}, true},
		{"map of nil pointers", &map[string]*resource.Quantity{"a": nil}, false},
		{"array", &[2]resource.Quantity{}, true},
		{"empty slice", &[]resource.Quantity{}, false},
		{"map of slices", &map[string][]resource.Quantity{"a": {q}}, true},
		{"recursive, deep", &chain{Next: &chain{Next: &chain{Q: &q}}}, true},
		{"recursive, none", &chain{Next: &chain{M: map[string]resource.Quantity{"a": q}}}, false},
		{"no quantity at all", &corev1.ObjectReference{Name: "x"}, false},
	} {
		v := reflect.ValueOf(c.v)
		got := share.QuantityPlanOf(v.Type().Elem()).In(v.UnsafePointer())
		assert.Equal(t, c.want, got, c.name)
	}
}

// configMapLike holds one map, as a ConfigMap's data does.
type configMapLike struct{ Data map[string]string }

// What a Table keeps alive is bounded in bytes, not only in values: it
// remembered 16,384 values however large, so a stream of distinct 60 KB
// maps (ConfigMaps' data) kept 16,384 × 60 KB alive after every object
// holding them had left the cache. Now the values remembered stay under
// MaxBytes, and the sum kept as values come and go matches the slots.
func TestTableBoundsTheBytesItRemembers(t *testing.T) {
	tab := share.New(0)
	const n = 1000
	value := strings.Repeat("x", 60<<10-10)
	for i := range n {
		obj := &configMapLike{Data: map[string]string{"config": fmt.Sprintf("%10d", i) + value}}
		share.Share(tab, obj)
		summed, kept := share.RememberedBytesOf(tab)
		require.Equal(t, summed, kept, "after object %d", i)
		require.LessOrEqual(t, kept, share.MaxBytes, "after object %d", i)
	}
	// And it goes on sharing after it forgot.
	a := &configMapLike{Data: map[string]string{"k": "v"}}
	b := &configMapLike{Data: map[string]string{"k": "v"}}
	share.Share(tab, a)
	share.Share(tab, b)
	assert.True(t, sameMap(a.Data, b.Data), "equal small maps are shared after the Table forgot")
}

// A value larger than MaxValueBytes is never remembered, so never shared;
// smaller ones still are.
func TestTableDoesNotRememberHugeValues(t *testing.T) {
	tab := share.New(0)
	huge := strings.Repeat("x", share.MaxValueBytes+1)
	a := &configMapLike{Data: map[string]string{"config": huge}}
	b := &configMapLike{Data: map[string]string{"config": huge}}
	share.Share(tab, a)
	share.Share(tab, b)
	assert.False(t, sameMap(a.Data, b.Data), "a map of more than MaxValueBytes was shared")
	assert.Zero(t, share.RememberedOf(tab))

	small := strings.Repeat("x", share.MaxValueBytes-100)
	c := &configMapLike{Data: map[string]string{"config": small}}
	d := &configMapLike{Data: map[string]string{"config": small}}
	share.Share(tab, c)
	share.Share(tab, d)
	assert.True(t, sameMap(c.Data, d.Data), "a map under MaxValueBytes was not shared")
}

// heapInUse is the live heap, after two collections.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// The bytes a Table counts are what it keeps alive: maps of many small
// entries, distinct each (a label map per object), kept 9 to 14 times what
// it counted when a size was the bytes hashed (the strings' contents, not
// the map's own memory): 313 MiB alive under a bound of 32 for maps of
// 4,000 entries. Now the heap they keep stays within twice MaxBytes.
func TestTableBytesBoundTheHeapItKeeps(t *testing.T) {
	for _, c := range []struct{ entries, maps int }{{100, 16000}, {600, 3000}} {
		entries := c.entries
		t.Run(fmt.Sprint(entries, " entries"), func(t *testing.T) {
			keys := make([]string, entries)
			for i := range keys {
				keys[i] = fmt.Sprintf("k%04d", i)
			}
			tab := share.New(0)
			before := heapInUse()
			for i := range c.maps {
				m := make(map[string]string, len(keys)+1)
				for _, k := range keys {
					m[k] = fmt.Sprint(i % 10)
				}
				m["id"] = fmt.Sprint(i)
				share.Share(tab, &configMapLike{Data: m})
			}
			held := int64(heapInUse()) - int64(before)
			_, counted := share.RememberedBytesOf(tab)
			t.Logf("%d values remembered, %.1f MiB counted, %.1f MiB of heap kept", share.RememberedOf(tab), float64(counted)/(1<<20), float64(held)/(1<<20))
			assert.LessOrEqual(t, held, int64(2*share.MaxBytes), "heap kept by the Table")
			runtime.KeepAlive(tab)
		})
	}
}

// A Secret's data (map[string][]byte) is never remembered: its values are
// not shared, so two decodes' maps never match, and a remembered one kept
// them alive uncounted: 1,500 Secrets of a 60 KB value each kept 67 MiB
// alive, counted as 0.11.
func TestTableDoesNotKeepWhatItCannotShare(t *testing.T) {
	tab := share.New(0)
	before := heapInUse()
	for i := range 1500 {
		v := make([]byte, 60<<10)
		v[0] = byte(i)
		share.Share(tab, &corev1.Secret{Data: map[string][]byte{"tls.key": v, "id": []byte(fmt.Sprint(i))}})
	}
	held := int64(heapInUse()) - int64(before)
	_, counted := share.RememberedBytesOf(tab)
	t.Logf("%d values remembered, %.2f MiB counted, %.1f MiB of heap kept", share.RememberedOf(tab), float64(counted)/(1<<20), float64(held)/(1<<20))
	assert.LessOrEqual(t, held, int64(share.MaxBytes), "heap kept by the Table after the objects are gone")
}

// A value that holds one the Table did not remember (too large, or of a
// kind it no longer looks up) is not remembered either: it could equal no
// other, and it kept the one inside alive uncounted (1,000 pods whose
// []Container held a 100 KB Env each: 99 MiB alive, 0.39 counted).
func TestTableDoesNotKeepAValueThroughItsHolder(t *testing.T) {
	tab := share.New(0)
	before := heapInUse()
	for i := range 1000 {
		env := make([]corev1.EnvVar, 0, 1800)
		for j := range 1800 {
			env = append(env, corev1.EnvVar{Name: fmt.Sprintf("E%03d_%d", j, i), Value: "v"})
		}
		share.Share(tab, &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: fmt.Sprint("c", i), Env: env}}}})
	}
	held := int64(heapInUse()) - int64(before)
	_, counted := share.RememberedBytesOf(tab)
	t.Logf("%d values remembered, %.2f MiB counted, %.1f MiB of heap kept", share.RememberedOf(tab), float64(counted)/(1<<20), float64(held)/(1<<20))
	assert.LessOrEqual(t, held, 4*int64(counted)+1<<20, "heap kept against bytes counted")
}

// The bytes a Table counts stay the sum of its slots' sizes, under its
// bound, through growth, eviction, a Forget in the middle of a lookup and
// Forget, for random objects with values of every size.
func TestTableBytesInvariant(t *testing.T) {
	type inner struct {
		L []string
		M map[string]string
	}
	type obj struct {
		A, B map[string]string
		P    *inner
		S    []inner
	}
	r := rand.New(rand.NewPCG(1, 2))
	str := func() string {
		if r.IntN(4) == 0 {
			return strings.Repeat("y", 20<<10+r.IntN(50<<10)) // some over 64 KiB
		}
		return fmt.Sprint(r.IntN(30))
	}
	m := func() map[string]string {
		out := map[string]string{}
		for range r.IntN(4) {
			out[fmt.Sprint(r.IntN(5))] = str()
		}
		return out
	}
	in := func() inner {
		l := make([]string, 0, 8)
		for range r.IntN(5) {
			l = append(l, str())
		}
		return inner{L: l, M: m()}
	}
	for name, tab := range map[string]*share.Table{"small": share.New(8), "colliding": share.NewColliding(64), "default": share.New(0)} {
		for i := range 5000 {
			p := in()
			o := &obj{A: m(), B: m(), P: &p}
			for range r.IntN(3) {
				o.S = append(o.S, in())
			}
			share.Share(tab, o)
			summed, kept := share.RememberedBytesOf(tab)
			require.Equal(t, summed, kept, "%s: after object %d", name, i)
			require.LessOrEqual(t, kept, share.MaxBytes, "%s: after object %d", name, i)
			if i%1000 == 999 && r.IntN(2) == 0 {
				tab.Forget()
			}
		}
	}
}
