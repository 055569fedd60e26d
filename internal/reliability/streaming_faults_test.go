package reliability

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/apisim"
	"github.com/listwatch/listwatch/reflector"
)

// The fault matrix with streaming lists (Auto and WatchList modes): every
// apisim fault in the initial events of the first streaming list, of a
// streaming relist, and in the watch after sync; and the rows whose
// recovery involves a relist. What LIST mode does with a fault is the
// reference: an object no list can cache (no name, no resourceVersion) is
// changed once more, as in rows 6 and 7.

type streamingFault struct {
	name        string
	fault       apisim.Fault
	uncacheable bool // the object cannot be cached (as in LIST mode): changed once more
	stale       bool // cached with the resourceVersion sent (as in LIST mode): changed once more
	watchSkips  bool // skipped in a watch after sync (as in LIST mode, row 6): changed once more
	stream      bool // acts on the stream (After applies), not before the request
	http        []reflector.HTTPOption
}

func streamingFaults() []streamingFault {
	const limit, size = 64 << 10, 256 << 10
	big := []reflector.HTTPOption{reflector.WithMaxFrameBytes(limit), reflector.WithMaxItemBytes(limit)}
	fs := []streamingFault{
		{name: "drop", fault: apisim.DropConnection(), stream: true},
		{name: "truncate", fault: apisim.TruncateFrame(), stream: true},
		{name: "malformed", fault: apisim.MalformedFrame(), stream: true},
		{name: "unknown-type", fault: apisim.UnknownEventType(), stream: true},
		{name: "wrong-kind", fault: apisim.WrongKind(), stream: true, watchSkips: true},
		{name: "no-name", fault: apisim.MissingName(), stream: true, uncacheable: true},
		{name: "no-metadata", fault: apisim.MissingMetadata(), stream: true, uncacheable: true},
		{name: "no-rv", fault: apisim.EmptyResourceVersion(), stream: true, uncacheable: true},
		{name: "decreasing-rv", fault: apisim.DecreasingResourceVersion(), stream: true, stale: true},
		{name: "large", fault: apisim.LargeObject(size), stream: true, http: big},
		{name: "end-stream", fault: apisim.EndStream(), stream: true},
		{name: "silent", fault: apisim.SilentAfterHeaders(), stream: true,
			http: []reflector.HTTPOption{reflector.WithWatchIdleTimeout(time.Second)}},
		{name: "error-event-410", fault: apisim.ErrorEvent(410, metav1.StatusReasonExpired), stream: true},
		{name: "error-event-500", fault: apisim.ErrorEvent(500, metav1.StatusReasonInternalError), stream: true},
		{name: "error-event-429", fault: apisim.ErrorEvent(429, metav1.StatusReasonTooManyRequests), stream: true},
		{name: "429", fault: apisim.TooManyRequests(1)},
		{name: "429-plain", fault: apisim.TooManyRequestsPlain(1)},
		{name: "429-no-retry-after", fault: apisim.TooManyRequestsWithoutRetryAfter()},
		{name: "500", fault: apisim.ServerError(http.StatusInternalServerError)},
		{name: "503", fault: apisim.ServerError(http.StatusServiceUnavailable)},
		{name: "504", fault: apisim.ServerError(http.StatusGatewayTimeout)},
		{name: "403", fault: apisim.StatusResponse(metav1.Status{Code: 403, Reason: metav1.StatusReasonForbidden, Status: metav1.StatusFailure})},
		{name: "404", fault: apisim.StatusResponse(metav1.Status{Code: 404, Reason: metav1.StatusReasonNotFound, Status: metav1.StatusFailure})},
		{name: "410", fault: apisim.StatusResponse(metav1.Status{Code: 410, Reason: metav1.StatusReasonExpired, Status: metav1.StatusFailure})},
		{name: "400", fault: apisim.StatusResponse(metav1.Status{Code: 400, Reason: metav1.StatusReasonBadRequest, Status: metav1.StatusFailure})},
	}
	for shape, st := range tooLargeShapes() {
		fs = append(fs,
			streamingFault{name: "too-large-answer-" + shape, fault: apisim.StatusResponse(st)},
			streamingFault{name: "too-large-event-" + shape, fault: apisim.ErrorEventStatus(st), stream: true})
	}
	return fs
}

var streamingModes = []struct {
	name string
	mode listMode
}{{"auto", autoMode}, {"watchlist", watchListMode}}

var streamingEncodings = []struct {
	name string
	ct   encoding
}{{"json", encoding{reflector.JSON, 1}}, {"protobuf", encoding{reflector.Protobuf, 1}}, {"protobuf-parallel", encoding{reflector.Protobuf, 3}}}

// checkRequests fails on a tight retry loop.
func checkRequests(t *testing.T, s *apisim.Server, w *watcher) {
	t.Helper()
	if l, wa := lists(s), watches(s); l+wa > 12 {
		t.Errorf("%d LISTs and %d WATCHes for one fault: a retry loop? errors: %v", l, wa, w.errs)
	}
}

// The fault hits the second initial event of
// the first streaming list (or the streaming list's request).
func TestStreamingInitial(t *testing.T) {
	t.Parallel()
	for _, m := range streamingModes {
		for _, e := range streamingEncodings {
			for _, f := range streamingFaults() {
				t.Run(m.name+"/"+e.name+"/"+f.name, func(t *testing.T) {
					t.Parallel()
					s := newServer(t)
					wr := newWriter(t, s)
					wr.createN("default", 3)
					// A resourceVersion one below p0's would be "0" (any).
					after, target := 1, "p1"
					if f.stale {
						after, target = 2, "p2"
					}
					s.Inject(onWatch, f.fault.After(after), 1)
					w := startWatcher(t, s, "pods", setup{mode: m.mode, noWait: true,
						http: append(withContentType(e.ct), f.http...)})
					w.monitorRV()
					w.waitSynced()
					if f.uncacheable {
						if got := w.inf.Indexer().Len(); got != 2 {
							t.Errorf("cache holds %d pods once synced, want 2 (as LIST)", got)
						}
						wr.touch("default", "p1")
					} else if got := w.inf.Indexer().Len(); got != 3 {
						t.Errorf("cache holds %d pods once synced, want 3", got)
					}
					if f.stale {
						wr.touch("default", target)
					}
					converge(t, s, convergeBound, w)
					checkRequests(t, s, w)
				})
			}
		}
	}
}

// The fault hits the streaming list's stream
// after its initial-events-end bookmark (After(4): the second live event),
// or, for faults before the request, the next watch after a restart.
func TestStreamingAfterSync(t *testing.T) {
	t.Parallel()
	for _, m := range streamingModes {
		for _, e := range streamingEncodings {
			for _, f := range streamingFaults() {
				t.Run(m.name+"/"+e.name+"/"+f.name, func(t *testing.T) {
					t.Parallel()
					s := newServer(t)
					wr := newWriter(t, s)
					wr.createN("default", 3)
					if f.stream {
						s.Inject(onWatch, f.fault.After(4), 1)
					}
					w := startWatcher(t, s, "pods", setup{mode: m.mode,
						http: append(withContentType(e.ct), f.http...)})
					w.monitorRV()
					if !f.stream {
						s.Inject(onWatch, f.fault, 1)
						s.Restart()
					}
					for i := range 4 {
						wr.create("default", fmt.Sprint("n", i))
					}
					wr.touch("default", "p0")
					wr.remove("default", "p2")
					if f.uncacheable || f.watchSkips {
						eventually(t, convergeBound, "the fault", func() bool { return len(w.errs.all()) > 0 })
						for i := range 4 {
							wr.touch("default", fmt.Sprint("n", i))
						}
					}
					converge(t, s, convergeBound, w)
					checkRequests(t, s, w)
				})
			}
		}
	}
}

// streamingListOnly matches streaming lists only.
var streamingListOnly = apisim.Match{Verb: apisim.VerbWatch, Resource: "pods", Request: func(r *http.Request) bool {
	return r.URL.Query().Get("sendInitialEvents") == "true"
}}

// The fault hits the second initial event
// of a streaming RELIST (the cache synced, its resourceVersion compacted).
func TestStreamingRelistInitial(t *testing.T) {
	t.Parallel()
	for _, m := range streamingModes {
		for _, e := range streamingEncodings {
			for _, f := range streamingFaults() {
				t.Run(m.name+"/"+e.name+"/"+f.name, func(t *testing.T) {
					t.Parallel()
					s := newServer(t)
					wr := newWriter(t, s)
					wr.createN("default", 3)
					w := startWatcher(t, s, "pods", setup{mode: m.mode, http: append(withContentType(e.ct), f.http...)})
					w.monitorRV()
					eventually(t, convergeBound, "the watch", func() bool { return s.Watchers(apisim.Pods()) == 1 })
					gate := apisim.NewGate()
					s.Inject(onWatch, apisim.Hold(gate), 1)
					s.Inject(streamingListOnly, f.fault.After(1), 1)
					s.Restart()
					waitEntered(t, gate)
					wr.touch("default", "p0")
					wr.touch("default", "p1")
					wr.touch("default", "p2")
					wr.create("default", "p3")
					s.Compact()
					gate.Release()
					if f.uncacheable {
						eventually(t, convergeBound, "the fault", func() bool {
							return len(w.errs.matching(func(err error) bool { return errors.Is(err, reflector.ErrRejected) })) > 0
						})
						wr.touch("default", "p1")
					}
					if f.stale {
						eventually(t, convergeBound, "the relist", func() bool { return w.rv() >= parseRV(s.ResourceVersion()) })
						wr.touch("default", "p1")
					}
					converge(t, s, convergeBound, w)
					checkRequests(t, s, w)
				})
			}
		}
	}
}

// during runs f every few milliseconds for d (the fault's duration).
func during(t *testing.T, d time.Duration, f func()) {
	start := time.Now()
	eventually(t, d+convergeBound, "the fault's duration", func() bool {
		if f != nil {
			f()
		}
		return time.Since(start) >= d
	})
}

// persistently answers every watch with fault for d, from a restart of s
// on, and fails if more than most requests came meanwhile.
func persistently(t *testing.T, s *apisim.Server, fault apisim.Fault, d time.Duration, most int) {
	t.Helper()
	inj := s.Inject(onWatch, fault, 0)
	s.Restart()
	l0, w0 := lists(s), watches(s)
	during(t, d, nil)
	inj.Remove()
	if n := lists(s) - l0 + watches(s) - w0; n > most {
		t.Errorf("%d requests in %s of a fault on every watch, want at most %d", n, d, most)
	}
}

// Row 2 with streaming lists: every watch ends at once.
func TestStreamingRow02EmptyWatches(t *testing.T) {
	t.Parallel()
	for _, m := range streamingModes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t)
			wr := newWriter(t, s)
			wr.createN("default", 3)
			w := startWatcher(t, s, "pods", setup{mode: m.mode})
			w.monitorRV()
			persistently(t, s, apisim.EndStream(), 2*time.Second, 40)
			wr.touch("default", "p1")
			wr.remove("default", "p2")
			converge(t, s, convergeBound, w)
		})
	}
}

// Row 10 with streaming lists: every watch, streaming lists included, 410.
func TestStreamingRow10EveryWatchGone(t *testing.T) {
	t.Parallel()
	for _, m := range streamingModes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t)
			wr := newWriter(t, s)
			wr.createN("default", 3)
			w := startWatcher(t, s, "pods", setup{mode: m.mode})
			w.monitorRV()
			eventually(t, convergeBound, "the watch", func() bool { return s.Watchers(apisim.Pods()) == 1 })
			persistently(t, s, apisim.ErrorEvent(http.StatusGone, metav1.StatusReasonExpired), 2*time.Second, 40)
			wr.touch("default", "p1")
			converge(t, s, convergeBound, w)
		})
	}
}

// Row 11 with streaming lists: every watch "too large" for 2.5s.
func TestStreamingRow11TooLarge(t *testing.T) {
	t.Parallel()
	for _, m := range streamingModes {
		for shape, st := range tooLargeShapes() {
			for _, delivery := range []string{"answer", "ERROR event"} {
				t.Run(m.name+"/"+shape+"/"+delivery, func(t *testing.T) {
					t.Parallel()
					s := newServer(t)
					wr := newWriter(t, s)
					wr.createN("default", 3)
					w := startWatcher(t, s, "pods", setup{mode: m.mode})
					w.monitorRV()
					eventually(t, convergeBound, "the watch", func() bool { return s.Watchers(apisim.Pods()) == 1 })
					fault := apisim.StatusResponse(st)
					if delivery == "ERROR event" {
						fault = apisim.ErrorEventStatus(st)
					}
					persistently(t, s, fault, 2500*time.Millisecond, 10)
					wr.touch("default", "p1")
					converge(t, s, convergeBound, w)
				})
			}
		}
	}
}

// Row 12 with streaming lists: lost events repaired by the periodic relist.
func TestStreamingRow12PeriodicRelist(t *testing.T) {
	t.Parallel()
	for _, m := range streamingModes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			const interval = 500 * time.Millisecond
			s := newServer(t)
			wr := newWriter(t, s)
			wr.createN("default", 5)
			w := startWatcher(t, s, "relisting", setup{mode: m.mode, refl: []reflector.Option[*corev1.Pod]{reflector.WithRelistInterval[*corev1.Pod](interval)}})
			w.monitorRV()
			wr.touch("default", "p0")
			converge(t, s, convergeBound, w)
			if err := s.DropEvents(apisim.Pods(), 3); err != nil {
				t.Fatal(err)
			}
			wr.create("default", "lost-add")
			wr.touch("default", "p1")
			wr.remove("default", "p2")
			wr.create("default", "seen")
			converge(t, s, 2*interval+convergeBound, w)
		})
	}
}

// Row 13 with streaming lists: deleted and recreated while disconnected.
func TestStreamingRow13DeleteRecreate(t *testing.T) {
	t.Parallel()
	for _, m := range streamingModes {
		for _, compact := range []bool{false, true} {
			t.Run(fmt.Sprint(m.name, "/compact=", compact), func(t *testing.T) {
				t.Parallel()
				s := newServer(t)
				p := newProxy(t, s.URL()[len("http://"):])
				wr := newWriter(t, s)
				wr.createN("default", 3)
				w := startWatcher(t, s, "pods", setup{mode: m.mode, host: "http://" + p.addr()})
				w.monitorRV()
				eventually(t, convergeBound, "the watch", func() bool { return s.Watchers(apisim.Pods()) == 1 })
				gate := apisim.NewGate()
				s.Inject(onWatch, apisim.Hold(gate), 1)
				p.cut()
				waitEntered(t, gate)
				wr.remove("default", "p1")
				recreated := wr.create("default", "p1")
				if compact {
					s.Compact()
				}
				gate.Release()
				converge(t, s, convergeBound, w)
				if got := w.cacheUID("default/p1"); got != string(recreated.UID) {
					t.Errorf("cached uid %s, want %s", got, recreated.UID)
				}
				if _, updates, deletes, _ := w.recs[0].counts(); updates != 0 || deletes != 1 {
					t.Errorf("handler got %d updates and %d deletes, want Delete then Add", updates, deletes)
				}
				checkRequests(t, s, w)
			})
		}
	}
}

// Row 14/15 with streaming lists: 429s, 5xx on every request for a while.
func TestStreamingRow14And15(t *testing.T) {
	t.Parallel()
	for _, m := range streamingModes {
		for _, f := range []struct {
			name  string
			fault apisim.Fault
			max   int
		}{
			{"429", apisim.TooManyRequests(1), 8},
			{"429-plain", apisim.TooManyRequestsPlain(1), 8},
			{"429-none", apisim.TooManyRequestsWithoutRetryAfter(), 30},
			{"500", apisim.ServerError(500), 30},
			{"503", apisim.ServerError(503), 30},
		} {
			t.Run(m.name+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				s := newServer(t)
				p := newProxy(t, s.URL()[len("http://"):])
				wr := newWriter(t, s)
				wr.createN("default", 5)
				w := startWatcher(t, s, "pods", setup{mode: m.mode, host: "http://" + p.addr(),
					refl: []reflector.Option[*corev1.Pod]{reflector.WithBackoff[*corev1.Pod](backoffMin, 2*time.Second)}})
				w.monitorRV()
				li, wi := s.Inject(onList, f.fault, 0), s.Inject(onWatch, f.fault, 0)
				l0, w0 := lists(s), watches(s)
				p.cut()
				i := 0
				during(t, 3*time.Second, func() {
					if i%10 == 0 {
						wr.touch("default", fmt.Sprint("p", i/10%5))
					}
					i++
				})
				li.Remove()
				wi.Remove()
				if n := lists(s) - l0 + watches(s) - w0; n > f.max {
					t.Errorf("%d requests in 3s of %s", n, f.name)
				}
				converge(t, s, convergeBound, w)
			})
		}
	}
}

// Row 22 with streaming lists: a lagging server.
func TestStreamingRow22Lagging(t *testing.T) {
	t.Parallel()
	for _, m := range streamingModes {
		for _, c := range []struct {
			name string
			opts []apisim.Option
			gone bool
		}{
			{"waits", nil, false},
			{"refuses", []apisim.Option{apisim.WithFutureWatchError()}, false},
			{"gone", nil, true},
		} {
			t.Run(m.name+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				opts := append([]apisim.Option{apisim.WithDerivedUIDs(), apisim.WithTooLargeWait(300 * time.Millisecond)}, c.opts...)
				a, b := newServer(t, opts...), newServer(t, opts...)
				ops := script(rand.New(rand.NewPCG(22, 0)), 120)
				wa, wb := newWriter(t, a), newWriter(t, b)
				for _, op := range ops[:100] {
					op(wa)
				}
				for _, op := range ops[:60] {
					op(wb)
				}
				p := newProxy(t, hostPort(a.URL()))
				w := startWatcher(t, a, "pods", setup{mode: m.mode, host: "http://" + p.addr()})
				w.monitorRV()
				converge(t, a, convergeBound, w)
				onA := w.rv()
				if c.gone {
					b.Inject(onWatch, apisim.ErrorEvent(410, "Expired"), 1)
				}
				p.retarget(hostPort(b.URL()))
				p.cut()
				eventually(t, convergeBound, "requests to B", func() bool { return lists(b)+watches(b) >= 1 })
				if got := w.rv(); got < onA {
					t.Errorf("resourceVersion went from %d back to %d", onA, got)
				}
				for _, op := range ops[60:] {
					op(wb)
				}
				converge(t, b, convergeBound, w)
				if l, wa := lists(b), watches(b); l+wa > 30 {
					t.Errorf("B: %d LISTs, %d WATCHes", l, wa)
				}
			})
		}
	}
}

// Row 25a with streaming lists: a label selector, relist while away.
func TestStreamingRow25LabelSelector(t *testing.T) {
	t.Parallel()
	for _, m := range streamingModes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t)
			p := newProxy(t, hostPort(s.URL()))
			wr := newWriter(t, s)
			wr.createN("default", 6)
			w := startWatcher(t, s, "web", setup{mode: m.mode, host: "http://" + p.addr(), target: reflector.Target{LabelSelector: "app=web"}})
			w.monitorRV()
			wr.relabel("default", "p0", map[string]string{"app": "db"})
			wr.relabel("default", "p1", map[string]string{"app": "db"})
			wr.relabel("default", "p1", map[string]string{"app": "web"})
			converge(t, s, convergeBound, w)
			gate := apisim.NewGate()
			s.Inject(onWatch, apisim.Hold(gate), 1)
			p.cut()
			waitEntered(t, gate)
			wr.relabel("default", "p2", map[string]string{"app": "db"})
			wr.relabel("default", "p0", map[string]string{"app": "web"})
			s.Compact()
			gate.Release()
			converge(t, s, convergeBound, w)
		})
	}
}

// Rows 17b and 18 with streaming lists: a streaming list held without an
// answer (given up after the idle timeout), and one held then released.
func TestStreamingHold(t *testing.T) {
	t.Parallel()
	for _, m := range streamingModes {
		for _, release := range []bool{false, true} {
			t.Run(fmt.Sprint(m.name, "/release=", release), func(t *testing.T) {
				t.Parallel()
				s := newServer(t)
				wr := newWriter(t, s)
				wr.createN("default", 3)
				gate := apisim.NewGate()
				t.Cleanup(gate.Release)
				s.Inject(onWatch, apisim.Hold(gate), 1)
				w := startWatcher(t, s, "pods", setup{mode: m.mode, noWait: true,
					http: []reflector.HTTPOption{reflector.WithWatchIdleTimeout(reflector.MinWatchIdleTimeout)}})
				w.monitorRV()
				waitEntered(t, gate)
				wr.touch("default", "p1")
				if release {
					gate.Release()
				}
				w.waitSynced()
				converge(t, s, convergeBound, w)
				checkRequests(t, s, w)
			})
		}
	}
}

// Auto mode with every watch failing while LIST works syncs, as LIST mode
// does (rows 11, 14 and 15), since a failed streaming list is followed by
// a LIST, as client-go falls back. Without it the informer stayed unsynced
// for as long as the watch cache refused streaming lists (lagging: "too
// large resource version") or a proxy broke watches. With "too large", the
// cache then follows the server through lists, as in row 11.
func TestAutoSyncsWhenEveryWatchFails(t *testing.T) {
	t.Parallel()
	type failure struct {
		name     string
		fault    apisim.Fault
		tooLarge bool
	}
	failures := []failure{
		{name: "503", fault: apisim.ServerError(http.StatusServiceUnavailable)},
		{name: "500", fault: apisim.ServerError(http.StatusInternalServerError)},
		{name: "429", fault: apisim.TooManyRequests(1)},
		{name: "404", fault: apisim.StatusResponse(metav1.Status{Code: 404, Reason: metav1.StatusReasonNotFound, Status: metav1.StatusFailure})},
		{name: "drop", fault: apisim.DropConnection().After(1)},
		{name: "truncate", fault: apisim.TruncateFrame().After(1)},
		{name: "malformed", fault: apisim.MalformedFrame().After(1)},
		{name: "error-event-500", fault: apisim.ErrorEvent(500, metav1.StatusReasonInternalError).After(1)},
		{name: "error-event-410", fault: apisim.ErrorEvent(410, metav1.StatusReasonExpired).After(1)},
	}
	for shape, st := range tooLargeShapes() {
		failures = append(failures,
			failure{name: "too-large-answer-" + shape, fault: apisim.StatusResponse(st), tooLarge: true},
			failure{name: "too-large-event-" + shape, fault: apisim.ErrorEventStatus(st), tooLarge: true})
	}
	for _, f := range failures {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t)
			wr := newWriter(t, s)
			wr.createN("default", 3)
			inj := s.Inject(onWatch, f.fault, 0)
			defer inj.Remove()
			w := startWatcher(t, s, "pods", setup{mode: autoMode, noWait: true})
			w.monitorRV()
			select {
			case <-w.inf.Synced():
			case <-time.After(convergeBound):
				t.Fatalf("not synced after %s of failed watches (LIST works); %d LISTs, %d WATCHes; last error: %v",
					convergeBound, lists(s), watches(s), w.inf.LastError())
			}
			if f.tooLarge {
				wr.touch("default", "p1")
				converge(t, s, convergeBound, w)
				checkRequests(t, s, w)
			}
		})
	}
}
