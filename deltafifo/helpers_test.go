package deltafifo_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/deltafifo"
)

type fifo = deltafifo.FIFO[*corev1.Pod]

// pod returns a pod named name in namespace "ns" at resource version rv.
func pod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

// known is a KnownObjects backed by a map; ListKeys is sorted so tests are
// deterministic.
type known struct {
	mu   sync.Mutex
	objs map[string]*corev1.Pod
}

func newKnown(pods ...*corev1.Pod) *known {
	k := &known{objs: map[string]*corev1.Pod{}}
	for _, p := range pods {
		k.set(p)
	}
	return k
}

func (k *known) set(p *corev1.Pod) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.objs[p.Namespace+"/"+p.Name] = p
}

func (k *known) GetByKey(key string) (*corev1.Pod, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	p, ok := k.objs[key]
	return p, ok
}

func (k *known) ListKeys() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	keys := make([]string, 0, len(k.objs))
	for key := range k.objs {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	return keys
}

// describe renders deltas as "Added@1 Deleted!@2": type, "!" for final
// state unknown, and the object's resource version.
func describe(deltas []deltafifo.Delta[*corev1.Pod]) string {
	s := make([]string, len(deltas))
	for i, d := range deltas {
		mark := ""
		if d.FinalStateUnknown {
			mark = "!"
		}
		s[i] = fmt.Sprintf("%v%s@%s", d.Type, mark, d.Object.ResourceVersion)
	}
	return strings.Join(s, " ")
}

// snapshot renders the queue as "key: deltas" lines in pop order.
func snapshot(f *fifo) []string {
	var out []string
	for _, key := range f.ListKeys() {
		deltas, _ := f.GetByKey(key)
		out = append(out, key+": "+describe(deltas))
	}
	return out
}

type popped struct {
	key     string
	deltas  string
	initial bool
}

// pop pops one key from a non-empty FIFO.
func pop(t *testing.T, f *fifo) popped {
	t.Helper()
	require.Positive(t, f.Len(), "pop from an empty FIFO would block")
	var got popped
	err := f.Pop(context.Background(), func(key string, deltas []deltafifo.Delta[*corev1.Pod], initial bool) error {
		got = popped{key, describe(deltas), initial}
		return nil
	})
	require.NoError(t, err)
	return got
}

// drain pops every queued key and renders them like snapshot.
func drain(t *testing.T, f *fifo) []string {
	t.Helper()
	var out []string
	for f.Len() > 0 {
		p := pop(t, f)
		out = append(out, p.key+": "+p.deltas)
	}
	return out
}
