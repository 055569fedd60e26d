package processor_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/processor"
)

// callLog is a Handler that writes down each call.
type callLog struct{ calls []string }

func (r *callLog) OnAdd(obj *corev1.Pod, isInInitialList bool) {
	r.calls = append(r.calls, fmt.Sprintf("add %s@%s initial=%t", obj.Name, obj.ResourceVersion, isInInitialList))
}

func (r *callLog) OnUpdate(oldObj, newObj *corev1.Pod) {
	r.calls = append(r.calls, fmt.Sprintf("update %s@%s->%s", newObj.Name, oldObj.ResourceVersion, newObj.ResourceVersion))
}

func (r *callLog) OnDelete(obj *corev1.Pod, finalStateUnknown bool) {
	r.calls = append(r.calls, fmt.Sprintf("delete %s@%s unknown=%t", obj.Name, obj.ResourceVersion, finalStateUnknown))
}

func labelled(name, rv, app string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, ResourceVersion: rv, Labels: map[string]string{"app": app}}}
}

func TestFilteringHandler(t *testing.T) {
	web := func(p *corev1.Pod) bool { return p.Labels["app"] == "web" }
	a1, a2, a3, a4 := labelled("a", "1", "web"), labelled("a", "2", "web"), labelled("a", "3", "db"), labelled("a", "4", "web")
	b1, b2 := labelled("b", "1", "db"), labelled("b", "2", "db")

	r := &callLog{}
	h := processor.FilteringHandler[*corev1.Pod]{Filter: web, Handler: r}
	h.OnAdd(a1, true)
	h.OnAdd(b1, true)
	h.OnUpdate(a1, a2) // matches before and after
	h.OnUpdate(b1, b2) // matches neither
	h.OnUpdate(a2, a3) // stops matching
	h.OnUpdate(a3, a4) // starts matching
	h.OnUpdate(a4, a4) // a resync
	h.OnDelete(b2, false)
	h.OnDelete(a4, true)
	assert.Equal(t, []string{
		"add a@1 initial=true",
		"update a@1->2",
		"delete a@2 unknown=false",
		"add a@4 initial=false",
		"update a@4->4",
		"delete a@4 unknown=true",
	}, r.calls)

	r = &callLog{}
	all := processor.FilteringHandler[*corev1.Pod]{Handler: r}
	all.OnAdd(b1, false)
	all.OnUpdate(b1, b2)
	all.OnDelete(b2, false)
	assert.Equal(t, []string{"add b@1 initial=false", "update b@1->2", "delete b@2 unknown=false"}, r.calls, "a nil Filter accepts everything")

	none := processor.FilteringHandler[*corev1.Pod]{Filter: web}
	assert.NotPanics(t, func() {
		none.OnAdd(a1, false)
		none.OnUpdate(a1, a3)
		none.OnUpdate(a3, a4)
		none.OnDelete(a4, false)
	}, "a nil Handler is told nothing")
}
