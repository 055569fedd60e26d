package reliability

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/deltafifo"
	"github.com/listwatch/listwatch/indexer"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/internal/apisim"
	"github.com/listwatch/listwatch/processor"
	"github.com/listwatch/listwatch/reflector"
)

// Rows 23 to 25 of the fault matrix: handlers, streaming lists, and what
// selectors and relists do to the objects in flight.

// blocking is a recording handler that waits for release before handling
// anything.
type blocking struct {
	*recorder
	release chan struct{}
	handled atomic.Int64
}

func (h *blocking) OnAdd(p *corev1.Pod, initial bool) {
	<-h.release
	h.handled.Add(1)
	h.recorder.OnAdd(p, initial)
}

func (h *blocking) OnUpdate(old, p *corev1.Pod) {
	<-h.release
	h.handled.Add(1)
	h.recorder.OnUpdate(old, p)
}

func (h *blocking) OnDelete(p *corev1.Pod, unknown bool) {
	<-h.release
	h.handled.Add(1)
	h.recorder.OnDelete(p, unknown)
}

// panicking is a recording handler that panics after every third
// notification it recorded.
type panicking struct {
	*recorder
	n atomic.Int64
}

func (h *panicking) OnAdd(p *corev1.Pod, initial bool) { h.recorder.OnAdd(p, initial); h.maybe() }
func (h *panicking) OnUpdate(old, p *corev1.Pod)       { h.recorder.OnUpdate(old, p); h.maybe() }
func (h *panicking) OnDelete(p *corev1.Pod, u bool)    { h.recorder.OnDelete(p, u); h.maybe() }

func (h *panicking) maybe() {
	if h.n.Add(1)%3 == 0 {
		panic("handler bug")
	}
}

// Row 23: a blocked handler and a panicking handler on the same informer
// as a well-behaved one. The well-behaved handler and the cache keep up
// while the blocked one waits; panics are recovered and reported, and the
// panicking handler goes on. Memory: a blocked handler's backlog grows with
// every notification by default; with WithMaxPending(n), updates of one
// object are merged once n are pending, so 300 updates of one pod cost a
// handful of notifications, the last state always delivered.
func TestRow23BlockedAndPanickingHandlers(t *testing.T) {
	t.Parallel()
	for _, maxPending := range []int{0, 1} {
		t.Run(fmt.Sprintf("MaxPending=%d", maxPending), func(t *testing.T) {
			t.Parallel()
			s := newServer(t)
			wr := newWriter(t, s)
			wr.createN("default", 5)
			w := startWatcher(t, s, "pods", setup{})
			blocked := &blocking{recorder: newRecorder("blocked"), release: make(chan struct{})}
			var once sync.Once
			unblock := func() { once.Do(func() { close(blocked.release) }) }
			t.Cleanup(unblock) // before the informer stops, which waits for its handlers
			w.inf.AddEventHandler(blocked, informer.WithMaxPending(maxPending))
			bad := &panicking{recorder: newRecorder("panicking")}
			w.inf.AddEventHandler(bad)
			w.recs = append(w.recs, bad.recorder)

			const updates = 300
			for i := range updates {
				wr.touch("default", "p0")
				if i%50 == 0 {
					wr.create("default", fmt.Sprint("new", i))
					wr.remove("default", fmt.Sprint("p", 1+i/50%4))
					wr.create("default", fmt.Sprint("p", 1+i/50%4))
				}
			}
			took := converge(t, s, convergeBound, w) // the blocked handler does not hold anyone up
			panics := w.errs.matching(func(err error) bool {
				var pe *processor.HandlerPanicError
				return errors.As(err, &pe)
			})
			if len(panics) == 0 {
				t.Error("the panics were not reported")
			}
			if blocked.handled.Load() != 0 {
				t.Fatal("the blocked handler ran")
			}

			unblock()
			w.recs = append(w.recs, blocked.recorder)
			converge(t, s, convergeBound, w)
			n := blocked.handled.Load()
			if maxPending > 0 && n > updates/10 {
				t.Errorf("blocked handler with MaxPending=%d got %d notifications for %d updates of one pod, want them merged", maxPending, n, updates)
			}
			if maxPending == 0 && n < updates {
				t.Errorf("blocked handler without MaxPending got %d notifications, want every one of the %d updates", n, updates)
			}
			t.Logf("others converged in %s while one handler was blocked; %d panics reported; the blocked handler then handled %d notifications",
				took.Round(time.Millisecond), len(panics), n)
		})
	}
}

// Row 24: streaming lists that do not end properly. The informer falls back
// to LIST then WATCH, and never reports synced on a partial state: it syncs
// only after the LIST that follows the fallback.
func TestRow24StreamingListWithoutItsEnd(t *testing.T) {
	t.Parallel()
	noBookmarks := func(q map[string][]string) { delete(q, "allowWatchBookmarks") }
	for _, c := range []struct {
		name          string
		rewrite       func(q map[string][]string)
		idle, timeout time.Duration
	}{
		// The initial events come, but no bookmark closes them (and no
		// periodic bookmark arrives either): the stream ends at its
		// timeout...
		{"end bookmark missing, stream ends", noBookmarks, idleTimeout, time.Second},
		// ... or goes quiet until the watchdog gives up on it.
		{"end bookmark missing, stream goes quiet", noBookmarks, reflector.MinWatchIdleTimeout, time.Minute},
		// The server ignores sendInitialEvents: no initial events, just
		// live ones and periodic plain bookmarks.
		{"server ignores sendInitialEvents", func(q map[string][]string) {
			q["sendInitialEvents"] = []string{"false"}
		}, idleTimeout, time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t)
			log := logRequests(s)
			wr := newWriter(t, s)
			wr.createN("default", 20)
			s.Inject(apisim.Match{Verb: apisim.VerbWatch, Request: func(r *http.Request) bool {
				q := r.URL.Query()
				if q.Get("sendInitialEvents") == "true" {
					c.rewrite(q)
					r.URL.RawQuery = q.Encode()
				}
				return false
			}}, apisim.Fault{}, 0)
			start := time.Now()
			w := startWatcher(t, s, "pods", setup{mode: autoMode,
				http: []reflector.HTTPOption{reflector.WithWatchIdleTimeout(c.idle)},
				refl: []reflector.Option[*corev1.Pod]{reflector.WithMinWatchTimeout[*corev1.Pod](c.timeout)}})
			syncedAfter := time.Since(start)
			if got := w.inf.Indexer().Len(); got != 20 {
				t.Errorf("synced with %d pods, want all 20", got)
			}
			var firstList time.Time
			for _, r := range log.all() {
				if r.verb == apisim.VerbList {
					firstList = r.at
					break
				}
			}
			if firstList.IsZero() {
				t.Fatal("synced without falling back to LIST")
			}
			wr.touch("default", "p3")
			wr.remove("default", "p4")
			converge(t, s, convergeBound, w)
			if adds, _, _, _ := w.recs[0].counts(); adds != 20 {
				t.Errorf("handler got %d adds, want 20: the streamed objects must not be delivered before the fallback", adds)
			}
			t.Logf("fell back to LIST after %s and synced after %s", firstList.Sub(start).Round(time.Millisecond), syncedAfter.Round(time.Millisecond))
		})
	}

	t.Run("WatchList mode never falls back", func(t *testing.T) {
		t.Parallel()
		s := newServer(t)
		newWriter(t, s).createN("default", 5)
		s.Inject(apisim.Match{Verb: apisim.VerbWatch, Request: func(r *http.Request) bool {
			q := r.URL.Query()
			q.Set("sendInitialEvents", "false")
			r.URL.RawQuery = q.Encode()
			return false
		}}, apisim.Fault{}, 0)
		start := time.Now()
		w := startWatcher(t, s, "pods", setup{mode: watchListMode, noWait: true})
		const period = 2 * time.Second
		// It tries, and after the first stream fails it streams again
		// (an informer that gave up would pass the checks below).
		eventually(t, convergeBound, "a second streaming attempt", func() bool { return watches(s) >= 2 })
		time.Sleep(time.Until(start.Add(period))) // the fault's duration: the thing measured
		if w.inf.HasSynced() {
			t.Error("synced on a streaming list that never ended")
		}
		if got := lists(s); got != 0 {
			t.Errorf("LIST requests = %d in WatchList mode, want 0", got)
		}
		if n := watches(s); n > 30 {
			t.Errorf("%d streaming attempts in %s, want at most 30", n, period)
		}
		t.Logf("%d streaming attempts in %s; last error: %v", watches(s), period, w.inf.LastError())
	})
}

// Row 25a: objects leaving and entering a label selector reach the handlers
// of a selecting informer as Delete and Add, whether the watch says so or a
// relist finds out.
func TestRow25LabelSelector(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	p := newProxy(t, hostPort(s.URL()))
	wr := newWriter(t, s)
	wr.createN("default", 6)
	w := startWatcher(t, s, "web", setup{host: "http://" + p.addr(), target: reflector.Target{LabelSelector: "app=web"}})
	all := startWatcher(t, s, "all", setup{host: "http://" + p.addr()})

	wr.relabel("default", "p0", map[string]string{"app": "db"}) // leaves
	wr.relabel("default", "p1", map[string]string{"app": "db"})
	wr.relabel("default", "p1", map[string]string{"app": "web"}) // leaves and comes back
	converge(t, s, convergeBound, w, all)

	// While disconnected, with the history gone: the relist finds out.
	gate := apisim.NewGate()
	s.Inject(onWatch, apisim.Hold(gate), 2)
	p.cut()
	waitEntered(t, gate)
	waitEntered(t, gate)
	wr.relabel("default", "p2", map[string]string{"app": "db"})
	wr.relabel("default", "p0", map[string]string{"app": "web"})
	s.Compact()
	gate.Release()
	converge(t, s, convergeBound, w, all)
	adds, updates, deletes, unknown := w.recs[0].counts()
	if deletes != 3 || unknown != 1 {
		t.Errorf("selecting handler got %d deletes (%d inferred), want 3 (1 inferred by the relist)", deletes, unknown)
	}
	t.Logf("selecting handler: %d adds, %d updates, %d deletes (%d inferred)", adds, updates, deletes, unknown)
}

// Row 25b: an object created and then deleted while it sat in the queue
// only (the consumer had not popped it) and a relist happened in between:
// the relist must queue its delete, so the consumer sees it come and go
// instead of keeping it forever. Built from a Reflector and a FIFO with a
// consumer the test pops by hand.
func TestRow25DeletedWhileOnlyInTheQueue(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	p := newProxy(t, hostPort(s.URL()))
	wr := newWriter(t, s)
	wr.createN("default", 3)

	client, err := reflector.NewClient(&reflector.Config{Host: "http://" + p.addr()})
	if err != nil {
		t.Fatal(err)
	}
	lw, err := reflector.NewListerWatcher[*corev1.Pod](client, reflector.Target{})
	if err != nil {
		t.Fatal(err)
	}
	cache := indexer.New[*corev1.Pod](nil)
	fifo := deltafifo.New(deltafifo.WithKnownObjects[*corev1.Pod](cache))
	refl := reflector.New[*corev1.Pod](lw, fifo, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
		reflector.WithBackoff[*corev1.Pod](backoffMin, backoffMax))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		refl.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	rec := newRecorder("consumer")
	pop := func() {
		t.Helper()
		popCtx, stop := context.WithTimeout(ctx, convergeBound)
		defer stop()
		err := fifo.Pop(popCtx, func(key string, deltas []deltafifo.Delta[*corev1.Pod], initial bool) error {
			for _, d := range deltas {
				applyDelta(cache, rec, key, d, initial)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("pop: %v", err)
		}
	}
	for !fifo.HasSynced() {
		pop()
	}

	wr.create("default", "fleeting")
	eventually(t, convergeBound, "fleeting to be queued", func() bool { return slices.Contains(fifo.ListKeys(), "default/fleeting") })
	gate := apisim.NewGate()
	s.Inject(onWatch, apisim.Hold(gate), 1)
	p.cut()
	waitEntered(t, gate)
	wr.remove("default", "fleeting")
	s.Compact()
	gate.Release()
	eventually(t, convergeBound, "the relist", func() bool { return lists(s) == 2 && refl.LastSyncResourceVersion() == s.ResourceVersion() })
	for fifo.Len() > 0 {
		pop()
	}
	want, _, _ := podsOf(s).List("")
	if got := stateOf(cache.List()); !slices.Equal(stateOf(want), got) {
		t.Errorf("cache: %s", diff(stateOf(want), got))
	}
	if got := rec.state(); !slices.Equal(stateOf(want), got) {
		t.Errorf("consumer view: %s", diff(stateOf(want), got))
	}
	for _, v := range rec.problems() {
		t.Error(v)
	}
	if adds, _, deletes, unknown := rec.counts(); adds != 4 || deletes != 1 || unknown != 1 {
		t.Errorf("consumer got %d adds, %d deletes (%d inferred); want fleeting added, then deleted as inferred by the relist", adds, deletes, unknown)
	}
}

// applyDelta does what the informer does with one delta: update the cache,
// the old state coming from it, and tell the handler.
func applyDelta(cache *indexer.Indexer[*corev1.Pod], h processor.Handler[*corev1.Pod], key string, d deltafifo.Delta[*corev1.Pod], initial bool) {
	if d.Type == deltafifo.Deleted {
		_ = cache.Delete(d.Object)
		h.OnDelete(d.Object, d.FinalStateUnknown)
		return
	}
	old, ok := cache.GetByKey(key)
	switch {
	case ok && old.UID != d.Object.UID:
		_ = cache.Delete(old)
		h.OnDelete(old, true)
		_ = cache.Add(d.Object)
		h.OnAdd(d.Object, initial)
	case ok:
		_ = cache.Update(d.Object)
		if old.ResourceVersion != d.Object.ResourceVersion {
			h.OnUpdate(old, d.Object)
		}
	default:
		_ = cache.Add(d.Object)
		h.OnAdd(d.Object, initial)
	}
}
