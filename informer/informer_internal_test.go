package informer

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/deltafifo"
	"github.com/listwatch/listwatch/processor"
)

// namedPod is a Pod that calls *onName, when set, each time its name is
// read: AddEventHandler reads the name of each cached object it hands to a
// late handler.
type namedPod struct {
	corev1.Pod
	onName *func()
}

func (p *namedPod) GetName() string {
	if f := *p.onName; f != nil {
		f()
	}
	return p.Name
}

// A change applied while AddEventHandler hands a late handler the cache
// reaches the handler, after the cache. Whether the informer's goroutine
// can apply one in that window cannot be arranged with channels: it would
// be waiting for a mutex, which synctest cannot wait for (not durably
// blocked). So the test plays that goroutine: in the window, if a change
// can be applied (blockDeltas is free), it applies one there; else after
// AddEventHandler has returned.
func TestChangeAppliedWhileAHandlerIsAddedReachesIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var onName func()
		state := func(rv string) *namedPod {
			return &namedPod{Pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: rv}}, onName: &onName}
		}
		s := New[*namedPod](nil) // never run: the test applies the changes
		apply := func(p *namedPod) {
			if err := s.handleDeltas("ns/a", []deltafifo.Delta[*namedPod]{{Type: deltafifo.Updated, Object: p}}, false); err != nil {
				t.Fatal(err)
			}
		}
		apply(state("1"))

		updated := false
		onName = func() {
			onName = nil // once
			if s.blockDeltas.TryLock() {
				s.blockDeltas.Unlock()
				apply(state("2"))
				updated = true
			}
		}
		var mu sync.Mutex
		var got []string
		s.AddEventHandler(processor.HandlerFuncs[*namedPod]{
			AddFunc: func(p *namedPod, initial bool) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, fmt.Sprintf("add %s initial=%v", p.ResourceVersion, initial))
			},
			UpdateFunc: func(old, cur *namedPod) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, fmt.Sprintf("update %s->%s", old.ResourceVersion, cur.ResourceVersion))
			},
		})
		onName = nil
		if !updated {
			apply(state("2"))
		}

		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.processor.Run(ctx)
		}()
		synctest.Wait()
		cancel()
		<-done
		if want := []string{"add 1 initial=true", "update 1->2"}; !slices.Equal(got, want) {
			t.Errorf("the handler added got %q, want %q (the cache holds the state 2)", got, want)
		}
	})
}
