package semantic

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// withCache is a type of one's own: a Pod with an unexported field.
type withCache struct {
	corev1.Pod
	cache string
}

// outer holds, in an exported field, a struct with an unexported field:
// one level further down than withCache.
type outer struct {
	In withCache
}

func TestEqual(t *testing.T) {
	quantity := func(s string) *withCache {
		p := &withCache{cache: "c"}
		p.Spec.Containers = []corev1.Container{{Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(s)}}}}
		return p
	}
	read := quantity("1")
	_ = read.Spec.Containers[0].Resources.Limits.Cpu().String() // fills the Quantity's string cache
	for _, c := range []struct {
		name string
		a, b any
		want bool
	}{
		{"the same", &withCache{cache: "c"}, &withCache{cache: "c"}, true},
		{"an unexported field differs", &withCache{cache: "c"}, &withCache{cache: "d"}, false},
		{"an exported field differs", &withCache{Pod: corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}}}, &withCache{}, false},
		{"nil and empty maps", &withCache{Pod: corev1.Pod{Spec: corev1.PodSpec{NodeSelector: map[string]string{}}}}, &withCache{}, true},
		{"a Quantity by its value", quantity("1"), quantity("1000m"), true},
		{"a Quantity whose string was read", read, quantity("1"), true},
		{"a Quantity of another value", quantity("1"), quantity("2"), false},
		{"nil and a value", (*withCache)(nil), &withCache{}, false},
		{"two nils", (*withCache)(nil), (*withCache)(nil), true},
		{"other types", &withCache{}, &corev1.Pod{}, false},
		{"API types (no fallback)", &corev1.Pod{}, &corev1.Pod{}, true},
		{"structs, not pointers", withCache{cache: "c"}, withCache{cache: "c"}, true},
		{"structs whose unexported fields differ", withCache{cache: "c"}, withCache{cache: "d"}, false},
		// A struct with unexported fields in an exported field of another
		// was compared as a copy, with reflect.DeepEqual: a Quantity by its
		// form, not its value.
		{"a Quantity a level down", &outer{In: *quantity("1")}, &outer{In: *quantity("1000m")}, true},
		{"a Quantity a level down, another value", &outer{In: *quantity("1")}, &outer{In: *quantity("2")}, false},
		{"an unexported field a level down", &outer{In: withCache{cache: "c"}}, &outer{In: withCache{cache: "d"}}, false},
		{"a Quantity a level down, structs", outer{In: *quantity("1")}, outer{In: *quantity("1000m")}, true},
	} {
		if got := Equal(c.a, c.b); got != c.want {
			t.Errorf("%s: Equal = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestFieldEqual(t *testing.T) {
	a, b := &withCache{cache: "c"}, &withCache{cache: "c"}
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	field := func(name string) (reflect.Value, reflect.Value, reflect.StructField) {
		f, _ := va.Type().FieldByName(name)
		return va.FieldByIndex(f.Index), vb.FieldByIndex(f.Index), f
	}
	if !FieldEqual(field("cache")) || !FieldEqual(field("Pod")) {
		t.Error("equal fields differ")
	}
	b.cache, b.Spec.NodeName = "d", "n"
	if FieldEqual(field("cache")) || FieldEqual(field("Pod")) {
		t.Error("fields that differ are equal")
	}
}
