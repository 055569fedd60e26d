package reflector_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/deltafifo"
	"github.com/listwatch/listwatch/internal/fakelw"
	"github.com/listwatch/listwatch/reflector"
)

// filler is a recorder that is also a FillingStore, and logs the fill.
type filler struct {
	*recorder
	refuse bool // StartFill refuses, as a populated FIFO does
}

func (f *filler) StartFill() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, "start fill")
	if f.refuse {
		return errors.New("populated")
	}
	return nil
}

func (f *filler) Fill(p *corev1.Pod) error { return f.put("fill", p) }

func (f *filler) EndFill(keep []*corev1.Pod, rv string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, fmt.Sprintf("end fill keep=%d@%s", len(keep), rv))
	return nil
}

// The first list goes to a FillingStore object by object; a relist, which
// may have to be refused as older than the Store, goes to Replace.
func TestFirstListFillsTheStore(t *testing.T) {
	for _, mode := range []reflector.Mode{reflector.ListWatch, reflector.WatchList} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := newSource()
				src.Create(pod("a"))
				src.Create(pod("b"))
				store := &filler{recorder: newRecorder()}
				stop := run(t, reflector.New(src, reflector.Store[*corev1.Pod](store), reflector.WithMode[*corev1.Pod](mode)))
				defer stop()
				synctest.Wait()
				src.FailWatch(fakelw.Status(http.StatusGone, metav1.StatusReasonExpired, "too old resource version"))
				src.CloseWatches()      // the watch is resumed, 410 Gone: a relist
				time.Sleep(time.Minute) // past the backoff
				synctest.Wait()
				assert.Equal(t, []string{"start fill", "fill a@1", "fill b@2", "end fill keep=0@2", "replace 2@2"}, store.calls())
			})
		})
	}
}

func TestRefusedFillFallsBackToReplace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("a"))
		store := &filler{recorder: newRecorder(), refuse: true}
		defer run(t, reflector.New(src, reflector.Store[*corev1.Pod](store)))()
		synctest.Wait()
		assert.Equal(t, []string{"start fill", "replace 1@1"}, store.calls())
	})
}

// pausedList is a streaming list that sends its first object, then waits
// for release before it sends the rest and the initial-events-end bookmark.
type pausedList struct {
	release chan struct{}
}

func (p *pausedList) List(context.Context, reflector.ListOptions, func(*corev1.Pod) error) (reflector.ListMeta, error) {
	return reflector.ListMeta{}, errors.New("streaming only")
}

func (p *pausedList) Watch(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	bookmark := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "2",
		Annotations: map[string]string{reflector.InitialEventsEndAnnotation: "true"}}}
	return &pausedWatcher{ctx: ctx, release: p.release, events: []reflector.Event[*corev1.Pod]{
		{Type: reflector.Added, Object: withRV(pod("a"), "1")},
		{}, // the pause
		{Type: reflector.Added, Object: withRV(pod("b"), "2")},
		{Type: reflector.Bookmark, Object: bookmark},
	}}, nil
}

type pausedWatcher struct {
	ctx     context.Context
	release chan struct{}
	events  []reflector.Event[*corev1.Pod]
	once    sync.Once
	closed  chan struct{}
}

func (w *pausedWatcher) Next() (reflector.Event[*corev1.Pod], error) {
	for len(w.events) > 0 {
		ev := w.events[0]
		w.events = w.events[1:]
		if ev.Type != "" {
			return ev, nil
		}
		select {
		case <-w.release:
		case <-w.ctx.Done():
			return ev, w.ctx.Err()
		}
	}
	<-w.ctx.Done()
	return reflector.Event[*corev1.Pod]{}, w.ctx.Err()
}

func (w *pausedWatcher) Close() error { return nil }

// A FIFO's consumer gets the first list's objects while the list is still
// arriving, and HasSynced waits for its end.
func TestTheFirstListReachesTheConsumerWhileItArrives(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &pausedList{release: make(chan struct{})}
		fifo := deltafifo.New[*corev1.Pod]()
		defer run(t, reflector.New(lw, reflector.Store[*corev1.Pod](fifo), reflector.WithMode[*corev1.Pod](reflector.WatchList)))()
		synctest.Wait() // the list is paused after a

		var got []string
		pop := func() {
			require.NoError(t, fifo.Pop(t.Context(), func(key string, deltas []deltafifo.Delta[*corev1.Pod], initial bool) error {
				got = append(got, fmt.Sprintf("%s %v initial=%t", key, deltas[0].Type, initial))
				return nil
			}))
		}
		pop()
		assert.False(t, fifo.HasSynced(), "the list has not ended")
		close(lw.release)
		pop()
		synctest.Wait()
		assert.True(t, fifo.HasSynced())
		assert.Equal(t, []string{"ns/a Replaced initial=true", "ns/b Replaced initial=true"}, got)
	})
}
