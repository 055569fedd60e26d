package objkey

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8stypes "k8s.io/apimachinery/pkg/types"
)

type wrapped struct {
	*corev1.Pod
	note string
}

type twice struct{ wrapped }

type extra struct{ Note string }

type withExtra struct {
	corev1.Pod
	*extra
}

type outer struct{ *twice }

type deeper struct{ *wrapped }

// shadowed takes its metadata methods from its own ObjectMeta, embedded
// less deeply than the Pod's.
type shadowed struct {
	metav1.ObjectMeta
	*corev1.Pod
}

// ownName has metadata methods of its own over a nil Pod's.
type ownName struct{ *corev1.Pod }

func (ownName) GetNamespace() string               { return "ns" }
func (ownName) GetName() string                    { return "n" }
func (ownName) GetResourceVersion() string         { return "1" }
func (ownName) GetUID() k8stypes.UID               { return "" }
func (ownName) GetLabels() map[string]string       { return nil }
func (ownName) GetAnnotations() map[string]string  { return nil }
func (ownName) GetDeletionTimestamp() *metav1.Time { return nil }

type iface struct{ metav1.Object }

func TestIsNil(t *testing.T) {
	var nilPod *corev1.Pod
	for name, tc := range map[string]struct {
		obj  any
		want bool
	}{
		"nil":                        {nil, true},
		"nil pointer":                {nilPod, true},
		"pod":                        {&corev1.Pod{}, false},
		"embedded pod":               {&wrapped{Pod: &corev1.Pod{}}, false},
		"embedded nil pod":           {&wrapped{note: "x"}, true},
		"embedded nil pod, by value": {wrapped{}, true},
		"nested nil pod":             {&twice{}, true},
		"nested pod":                 {&twice{wrapped{Pod: &corev1.Pod{}}}, false},
		"nil part without metadata":  {&withExtra{}, false},
		"nil outer pointer":          {&outer{}, true},
		"through an outer pointer":   {&outer{&twice{wrapped{Pod: &corev1.Pod{}}}}, false},
		"nil pod under a wrapper":    {&deeper{&wrapped{}}, true},
		"shadowed by its own meta":   {&shadowed{}, false},
		"methods of its own":         {&ownName{}, false},
		"nil embedded interface":     {&iface{}, true},
		"not an object":              {new(int), false},
	} {
		assert.Equal(t, tc.want, IsNil(tc.obj), name)
	}
}

// IsNil calls no getter of a type that embeds no pointer or interface:
// those of an Unstructured copy its labels and parse its times.
func TestIsNilOfUnstructuredCallsNoGetter(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{
		"name": "a", "labels": map[string]any{"a": "b"}, "deletionTimestamp": "2026-01-01T00:00:00Z"}}}
	assert.False(t, IsNil(u))
	assert.Zero(t, testing.AllocsPerRun(100, func() { IsNil(u) }))
	assert.False(t, IsNil(&metav1.PartialObjectMetadata{}))
}

func BenchmarkIsNil(b *testing.B) {
	for name, obj := range map[string]any{
		"pod":          &corev1.Pod{},
		"unstructured": &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "a", "labels": map[string]any{"a": "b"}}}},
		"wrapped":      &wrapped{Pod: &corev1.Pod{}},
	} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if IsNil(obj) {
					b.Fatal("nil")
				}
			}
		})
	}
}
