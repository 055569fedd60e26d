package indexer_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/listwatch/listwatch/indexer"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// An indexer emptied of a large burst gives the room of its maps back: Go
// maps keep the room of their largest size, and the informer never
// replaces its indexer's maps, so 50k pods created and deleted (a burst of
// Jobs) left 5.4 MB held for the informer's life.
func TestIndexerGivesBackRoomAfterShrinking(t *testing.T) {
	byUID := func(p *corev1.Pod) ([]string, error) { return []string{string(p.UID)}, nil }
	const n = 50_000
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: fmt.Sprint("ns", i%100), Name: fmt.Sprint("p", i), UID: uidOf(i),
		}}
	}
	x := indexer.New(indexer.Indexers[*corev1.Pod]{indexer.NamespaceIndex: indexer.NamespaceIndexFunc[*corev1.Pod], "uid": byUID})
	before := heap()
	for _, p := range pods {
		if err := x.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	full := heap()
	for _, p := range pods {
		if err := x.Delete(p); err != nil {
			t.Fatal(err)
		}
	}
	after := heap()
	runtime.KeepAlive(pods)
	runtime.KeepAlive(x)
	t.Logf("indexer of %d pods: %.1f MB; emptied: %.1f MB", n, float64(full-before)/1e6, float64(after-before)/1e6)
	if after-before > (full-before)/50 {
		t.Errorf("an emptied indexer still holds %.1f MB of the %.1f MB it took for %d pods", float64(after-before)/1e6, float64(full-before)/1e6, n)
	}
}

func uidOf(i int) types.UID { return types.UID(fmt.Sprintf("uid-%d", i)) }

func heap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// Indexes added one AddIndexers at a time cost each entry what their
// values take, not a copy of all its values at every call: the copies made
// adding I indexes one by one to n objects O(n·I²). client-go indexes the
// new ones only.
func TestAddIndexersOneByOneIsLinear(t *testing.T) {
	const n = 2000
	added := func(indexes int) uint64 {
		x := indexer.New[*corev1.Pod](nil)
		for i := range n {
			if err := x.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("p", i)}}); err != nil {
				t.Fatal(err)
			}
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for j := range indexes {
			if err := x.AddIndexers(indexer.Indexers[*corev1.Pod]{fmt.Sprint("i", j): func(*corev1.Pod) ([]string, error) { return nil, nil }}); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	few, many := added(16), added(128)
	// 8 times the indexes: about 8 times the bytes; copying every entry's
	// values at each call made it about 64 times.
	if many > 20*few {
		t.Errorf("adding 16 indexes one by one allocated %d bytes, 128 %d: %.0f times as much", few, many, float64(many)/float64(few))
	}
}
