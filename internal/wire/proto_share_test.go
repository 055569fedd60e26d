package wire

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// marshal encodes pods one after the other: a message written in pieces,
// which decodes to the pieces merged.
func marshal(t *testing.T, pods ...*corev1.Pod) []byte {
	t.Helper()
	var out []byte
	for _, p := range pods {
		b, err := p.Marshal()
		require.NoError(t, err)
		out = append(out, b...)
	}
	return out
}

// Two pods of one ReplicaSet, decoded sharing parts: what they have in
// common is one value, what differs is not, and each equals what the
// generated Unmarshal gives.
func TestSharedParts(t *testing.T) {
	typ, table, parts := reflect.TypeFor[corev1.Pod](), newInternTable(), newPartTable()
	var pods []*corev1.Pod
	for i := range 2 {
		want, got, wantErr, gotErr := decodeBoth(typ, marshal(t, realisticPod(i)), table, parts)
		require.NoError(t, wantErr)
		require.NoError(t, gotErr)
		require.Equal(t, want, got)
		pods = append(pods, got.(*corev1.Pod))
	}
	a, b := pods[0], pods[1]
	same := func(x, y any) bool { return reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer() }
	require.True(t, same(a.Labels, b.Labels), "labels")
	require.True(t, same(a.Spec.Tolerations, b.Spec.Tolerations), "tolerations")
	require.True(t, same(a.Spec.SecurityContext, b.Spec.SecurityContext), "security context")
	require.True(t, same(a.Spec.Containers[0].Resources.Limits, b.Spec.Containers[0].Resources.Limits), "limits")
	require.True(t, same(a.Spec.Containers[0].Ports, b.Spec.Containers[0].Ports), "ports")
	require.False(t, same(a.ManagedFields, b.ManagedFields), "managed fields differ in every pod")
	require.False(t, same(a.Status.Conditions, b.Status.Conditions), "conditions differ in every pod")
	require.NotEqual(t, a.Name, b.Name)
}

// A field met again later in its message (a message written in pieces)
// merges into what the field holds, which may be shared with an object
// decoded before: that object stays as it was.
func TestSharedPartsMergedIntoACopy(t *testing.T) {
	typ, parts := reflect.TypeFor[corev1.Pod](), newPartTable()
	uid := int64(1000)
	first := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "1", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: &uid},
			Tolerations:     []corev1.Toleration{{Key: "one"}},
			Containers:      []corev1.Container{{Name: "c", Args: []string{"-v"}}},
		},
	}
	more := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"tier": "db"}},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{FSGroup: &uid},
			Tolerations:     []corev1.Toleration{{Key: "two"}},
			Containers:      []corev1.Container{{Name: "d"}},
		},
	}
	kept := []decoded{{typ, marshal(t, first), nil}}
	_, got, _, err := decodeBoth(typ, kept[0].data, nil, parts)
	require.NoError(t, err)
	kept[0].obj = got

	data := marshal(t, first, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, more)
	want, got, wantErr, gotErr := decodeBoth(typ, data, nil, parts)
	require.NoError(t, wantErr)
	require.NoError(t, gotErr)
	require.Equal(t, want, got)
	pod := got.(*corev1.Pod)
	require.Equal(t, map[string]string{"app": "web", "tier": "db"}, pod.Labels)
	require.NotNil(t, pod.Spec.SecurityContext.FSGroup)
	require.Len(t, pod.Spec.Tolerations, 2)
	checkUnchanged(t, kept)
}

// A field whose parts differ in most objects stops being looked up (but
// for a probe now and then); the others go on being shared.
func TestSharedPartsSkipsFieldsThatRarelyRepeat(t *testing.T) {
	typ, parts := reflect.TypeFor[corev1.Pod](), newPartTable()
	containers := protoMessageFor(typ).fields[2].msg.fields[2] // PodSpec.Containers
	require.Equal(t, "PodSpec.Containers", containers.name)
	var pods []*corev1.Pod
	for i := range 3 * shareWindow {
		p := realisticPod(i)
		p.Spec.Containers[0].Image = fmt.Sprintf("app:%d", i) // unique containers, same labels
		data := marshal(t, p)
		_, got, _, err := decodeBoth(typ, data, nil, parts)
		require.NoError(t, err)
		pods = append(pods, got.(*corev1.Pod))
		if i < 10 {
			require.Equal(t, p.Spec, got.(*corev1.Pod).Spec)
		}
	}
	require.True(t, parts.stats[containers.id%statSlots].skipping.Load(), "containers are looked up")
	labels := protoMessageFor(typ).fields[1].msg.fields[11] // ObjectMeta.Labels
	require.Equal(t, "ObjectMeta.Labels", labels.name)
	require.False(t, parts.stats[labels.id%statSlots].skipping.Load())
	a, b := pods[len(pods)-2], pods[len(pods)-1]
	require.Equal(t, reflect.ValueOf(a.Labels).UnsafePointer(), reflect.ValueOf(b.Labels).UnsafePointer(), "labels are shared")
}

func varintField(num int, v uint64) []byte {
	b := binary.AppendUvarint(nil, uint64(num<<3|wireVarint))
	return binary.AppendUvarint(b, v)
}

// A shared PodSecurityContext whose supplementalGroups has spare capacity
// (elements interleaved with other fields: growSlice doubles) is merged into
// by a second securityContext field: the copy the merge goes into must not
// append in place to the []int64 it shares (the next object doing the same
// overwrote the element the first one got).
func TestSharedPartMergedIntoAppendsToACopy(t *testing.T) {
	typ, parts := reflect.TypeFor[corev1.Pod](), newPartTable()
	var sc []byte // supplementalGroups 1, 2, 3 interleaved with runAsUser
	for i := uint64(1); i <= 3; i++ {
		sc = append(sc, varintField(4, i)...)
		sc = append(sc, varintField(2, 0)...)
	}
	pod := func(extra uint64) []byte {
		spec := append(append(tagged(14, sc), tagged(3, []byte("Always"))...), tagged(14, varintField(4, extra))...)
		return tagged(2, spec)
	}
	var kept []decoded
	for _, extra := range []uint64{9, 7} {
		data := pod(extra)
		want, got, wantErr, gotErr := decodeBoth(typ, data, nil, parts)
		require.NoError(t, wantErr)
		require.NoError(t, gotErr)
		require.Equal(t, want, got)
		kept = append(kept, decoded{typ, data, got})
	}
	require.Equal(t, []int64{1, 2, 3, 9}, kept[0].obj.(*corev1.Pod).Spec.SecurityContext.SupplementalGroups)
	checkUnchanged(t, kept)
}

// A part that holds a resource.Quantity in place (an emptyDir's sizeLimit)
// is never shared: String() fills a cache inside the Quantity, so two
// goroutines reading each its own pod raced on one memory. The parts around
// it that hold none (a projected volume source) are shared all the same;
// so are resource lists, maps whose reads copy their Quantities.
func TestQuantityHeldInPlaceIsNeverShared(t *testing.T) {
	q := resource.MustParse("64Mi")
	mode := int32(0o644)
	src := &corev1.Pod{Spec: corev1.PodSpec{
		Volumes: []corev1.Volume{
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &q}}},
			{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: &mode}}},
		},
		Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
		}}},
	}}
	decoders := map[string]func(name string) *corev1.Pod{}
	{
		typ, parts := reflect.TypeFor[corev1.Pod](), newPartTable()
		decoders["protobuf"] = func(name string) *corev1.Pod {
			src.Name = name
			_, got, _, err := decodeBoth(typ, marshal(t, src), newInternTable(), parts)
			require.NoError(t, err)
			return got.(*corev1.Pod)
		}
	}
	{
		api := jsonAPIFor(newPartTable())
		decoders["JSON"] = func(name string) *corev1.Pod {
			src.Name = name
			data, err := json.Marshal(src)
			require.NoError(t, err)
			var p corev1.Pod
			require.NoError(t, api.Unmarshal(data, &p))
			return &p
		}
	}
	for name, decode := range decoders {
		t.Run(name, func(t *testing.T) {
			a, b := decode("a"), decode("b")
			require.NotSame(t, a.Spec.Volumes[0].EmptyDir.SizeLimit, b.Spec.Volumes[0].EmptyDir.SizeLimit)
			assert.Same(t, a.Spec.Volumes[1].Projected, b.Spec.Volumes[1].Projected, "a part holding no Quantity")
			assert.Equal(t, reflect.ValueOf(a.Spec.Containers[0].Resources.Limits).Pointer(),
				reflect.ValueOf(b.Spec.Containers[0].Resources.Limits).Pointer(), "a resource list")
			var wg sync.WaitGroup
			for _, p := range []*corev1.Pod{a, b} {
				wg.Go(func() { _ = p.Spec.Volumes[0].EmptyDir.SizeLimit.String() }) // -race: no race
			}
			wg.Wait()
		})
	}
}
