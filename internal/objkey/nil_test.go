package objkey

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
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

type list struct{ *twice }

func TestIsNil(t *testing.T) {
	var nilPod *corev1.Pod
	for name, tc := range map[string]struct {
		obj  any
		want bool
	}{
		"nil":                         {nil, true},
		"nil pointer":                 {nilPod, true},
		"pod":                         {&corev1.Pod{}, false},
		"embedded pod":                {&wrapped{Pod: &corev1.Pod{}}, false},
		"embedded nil pod":            {&wrapped{note: "x"}, true},
		"embedded nil pod, by value":  {wrapped{}, true},
		"nested nil pod":              {&twice{}, true},
		"nested pod":                  {&twice{wrapped{Pod: &corev1.Pod{}}}, false},
		"nil part without metadata":   {&withExtra{}, false},
		"through a nil outer pointer": {&list{}, true},
		"through an outer pointer":    {&list{&twice{wrapped{Pod: &corev1.Pod{}}}}, false},
		"not a struct":                {new(int), false},
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
