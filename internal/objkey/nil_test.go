package objkey

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

func BenchmarkIsNil(b *testing.B) {
	p := &corev1.Pod{}
	for b.Loop() {
		if IsNil(p) {
			b.Fatal("nil")
		}
	}
}
