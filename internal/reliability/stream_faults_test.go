package reliability

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/internal/apisim"
	"github.com/listwatch/listwatch/internal/wire"
	"github.com/listwatch/listwatch/reflector"
)

// Rows 1 to 9 of the fault matrix: what the server does to one stream.

var (
	onWatch = apisim.Match{Verb: apisim.VerbWatch, Resource: "pods"}
	onList  = apisim.Match{Verb: apisim.VerbList, Resource: "pods"}
)

// contentTypes runs f once per wire format.
func contentTypes(t *testing.T, f func(t *testing.T, ct encoding)) {
	for _, c := range []struct {
		name string
		ct   encoding
	}{
		{"json", encoding{reflector.JSON, 1}},
		{"protobuf", encoding{reflector.Protobuf, 1}},
		{"json-parallel", encoding{reflector.JSON, 3}},
		{"protobuf-parallel", encoding{reflector.Protobuf, 3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f(t, c.ct)
		})
	}
}

// encoding is how a stream-fault row's informer reads the server: the
// content type, and how many goroutines decode a watch stream.
type encoding struct {
	reflector.ContentType
	workers int
}

func withContentType(ct encoding) []reflector.HTTPOption {
	return []reflector.HTTPOption{reflector.WithContentType(ct.ContentType), reflector.WithDecodeWorkers(ct.workers)}
}

// Row 1: a watch that ends cleanly after events is reopened from the last
// resourceVersion seen; nothing is listed again.
func TestRow01CleanWatchEndResumesWithoutList(t *testing.T) {
	t.Parallel()
	t.Run("ended by the server after events", func(t *testing.T) {
		t.Parallel()
		s := newServer(t)
		wr := newWriter(t, s)
		wr.createN("default", 5)
		s.Inject(onWatch, apisim.EndStream().After(3), 3)
		w := startWatcher(t, s, "pods", setup{})
		for i := range 12 {
			wr.create("default", fmt.Sprint("new", i))
		}
		took := converge(t, s, convergeBound, w)
		if got := lists(s); got != 1 {
			t.Errorf("LIST requests = %d, want 1: a clean end must not relist", got)
		}
		if got := watches(s); got != 4 {
			t.Errorf("WATCH requests = %d, want 4 (three ended after 3 events each, then one that stays)", got)
		}
		t.Logf("converged in %s", took)
	})
	t.Run("timeoutSeconds", func(t *testing.T) {
		t.Parallel()
		s := newServer(t)
		wr := newWriter(t, s)
		wr.createN("default", 5)
		w := startWatcher(t, s, "pods", setup{refl: []reflector.Option[*corev1.Pod]{
			reflector.WithMinWatchTimeout[*corev1.Pod](time.Second)}})
		i := 0
		eventually(t, convergeBound, "three WATCH requests: watches ended by timeoutSeconds (1s) and resumed", func() bool {
			if i%4 == 0 { // a write every 20ms or so
				wr.touch("default", fmt.Sprint("p", i/4%5))
			}
			i++
			return watches(s) >= 3
		})
		converge(t, s, convergeBound, w)
		if got := lists(s); got != 1 {
			t.Errorf("LIST requests = %d, want 1", got)
		}
	})
	t.Run("slow watcher terminated by the server", func(t *testing.T) {
		t.Parallel()
		s := newServer(t, apisim.WithWatchBuffer(2))
		wr := newWriter(t, s)
		wr.createN("default", 5)
		w := startWatcher(t, s, "pods", setup{})
		for i := range 300 {
			wr.touch("default", fmt.Sprint("p", i%5))
		}
		converge(t, s, convergeBound, w)
		if got := lists(s); got != 1 {
			t.Errorf("LIST requests = %d, want 1", got)
		}
		t.Logf("WATCH requests: %d", watches(s))
	})
}

// Row 2: a server that answers every watch with 200 and closes it at once,
// without an event, is asked again with a growing backoff, not in a loop.
func TestRow02EmptyWatchesBackOff(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	wr := newWriter(t, s)
	wr.createN("default", 3)
	inj := s.Inject(onWatch, apisim.EndStream(), 0)
	w := startWatcher(t, s, "pods", setup{})
	const period = 2 * time.Second
	time.Sleep(period) // the fault's duration: the thing measured
	inj.Remove()
	n := watches(s)
	// Waits double from 10ms to 200ms: about 18 requests in 2s; a tight
	// loop would make thousands.
	if n > 40 {
		t.Errorf("%d WATCH requests in %s of empty watches; want at most 40", n, period)
	}
	if len(w.errs.matching(func(err error) bool { return strings.Contains(err.Error(), "without progress") })) == 0 {
		t.Errorf("empty watches were not reported; errors: %v", w.errs)
	}
	wr.touch("default", "p1")
	wr.remove("default", "p2")
	took := converge(t, s, convergeBound, w)
	if got := lists(s); got != 1 {
		t.Errorf("LIST requests = %d, want 1", got)
	}
	t.Logf("%d WATCH requests in %s of empty watches; converged %s after the fault ended", n, period, took)
}

// Row 3: a frame cut in half, then the connection dropped. On a watch the
// Reflector resumes from the last resourceVersion; on a LIST it lists
// again.
func TestRow03TruncatedFrameThenDrop(t *testing.T) {
	t.Parallel()
	contentTypes(t, func(t *testing.T, ct encoding) {
		s := newServer(t)
		wr := newWriter(t, s)
		wr.createN("default", 5)
		s.Inject(onList, apisim.TruncateFrame().After(2), 1)
		s.Inject(onWatch, apisim.TruncateFrame().After(2), 1)
		w := startWatcher(t, s, "pods", setup{http: withContentType(ct)})
		for i := range 6 {
			wr.touch("default", fmt.Sprint("p", i%5))
		}
		converge(t, s, convergeBound, w)
		if got := lists(s); got != 2 {
			t.Errorf("LIST requests = %d, want 2 (the cut one and its retry)", got)
		}
		if got := watches(s); got != 2 {
			t.Errorf("WATCH requests = %d, want 2 (the cut one and its resumption)", got)
		}
	})
}

// Row 4: a frame that does not decode.
func TestRow04MalformedFrame(t *testing.T) {
	t.Parallel()
	contentTypes(t, func(t *testing.T, ct encoding) {
		s := newServer(t)
		wr := newWriter(t, s)
		wr.createN("default", 5)
		s.Inject(onList, apisim.MalformedFrame().After(1), 1)
		s.Inject(onWatch, apisim.MalformedFrame().After(1), 1)
		w := startWatcher(t, s, "pods", setup{http: withContentType(ct)})
		for i := range 6 {
			wr.touch("default", fmt.Sprint("p", i%5))
		}
		converge(t, s, convergeBound, w)
		if got := lists(s); got != 2 {
			t.Errorf("LIST requests = %d, want 2 (the malformed one and its retry)", got)
		}
		if got := watches(s); got > 2 {
			t.Errorf("WATCH requests = %d, want at most 2", got)
		}
		for _, e := range w.errs.all() {
			t.Logf("reported: %v", e.err)
		}
	})
}

// Row 5: an event of a type the client does not know. The decoder cannot
// vouch for the rest of the stream, so the watch fails and is resumed from
// the last resourceVersion: no relist, and the event, sent again by the
// server, is not lost. A server that keeps sending it is retried with
// backoff, not in a loop, and after the second watch spoiled at the same
// resourceVersion the client lists, which moves it past the event (resumed
// for ever, the cache stopped there).
func TestRow05UnknownEventType(t *testing.T) {
	t.Parallel()
	contentTypes(t, func(t *testing.T, ct encoding) {
		s := newServer(t)
		wr := newWriter(t, s)
		wr.createN("default", 3)
		s.Inject(onWatch, apisim.UnknownEventType(), 1)
		w := startWatcher(t, s, "pods", setup{http: withContentType(ct)})
		wr.create("default", "spoiled")
		took := converge(t, s, convergeBound, w)
		if got := lists(s); got != 1 {
			t.Errorf("LIST requests = %d, want 1", got)
		}
		if got := watches(s); got != 2 {
			t.Errorf("WATCH requests = %d, want 2: the spoiled one, then its resumption", got)
		}
		if len(w.errs.matching(func(err error) bool { return strings.Contains(err.Error(), "UNKNOWN") })) == 0 {
			t.Errorf("the unknown event type was not reported: %v", w.errs)
		}

		// Every watch spoiled, for a while: end the current one so that
		// the next is spoiled too.
		inj := s.Inject(onWatch, apisim.UnknownEventType(), 0)
		before := watches(s)
		s.Restart()
		wr.create("default", "spoiled-again")
		time.Sleep(time.Second) // the fault's duration: the thing measured
		inj.Remove()
		if n := watches(s) - before; n < 2 || n > 25 {
			t.Errorf("%d WATCH requests in 1s of spoiled watches; want between 2 and 25", n)
		}
		took2 := converge(t, s, convergeBound, w)
		if got := lists(s); got != 2 {
			t.Errorf("LIST requests = %d, want 2: one more after the second watch spoiled at the same resourceVersion", got)
		}
		t.Logf("converged in %s once, %s after 1s of spoiled watches (%d watches)", took, took2, watches(s)-before)
	})
}

// Row 6: an object of the wrong kind in a watch is skipped and reported;
// the stream goes on and nothing is listed again. In a LIST it fails the
// page, which is fetched again; in a streaming list's initial events, the
// list, which is tried again: synced without the object, the cache would
// lack it until it changed.
func TestRow06WrongKind(t *testing.T) {
	t.Parallel()
	contentTypes(t, func(t *testing.T, ct encoding) {
		t.Run("watch", func(t *testing.T) {
			spoiledEvent(t, ct, apisim.WrongKind(), func(err error) bool {
				return errors.Is(err, reflector.ErrSkipped) && strings.Contains(err.Error(), "ConfigMap")
			})
		})
		t.Run("list", func(t *testing.T) {
			s := newServer(t)
			newWriter(t, s).createN("default", 3)
			s.Inject(onList, apisim.WrongKind().After(1), 1)
			w := startWatcher(t, s, "pods", setup{http: withContentType(ct)})
			converge(t, s, convergeBound, w)
			// Protobuf list items carry no kind of their own: the
			// fault cannot show there.
			want := map[reflector.ContentType]int{reflector.JSON: 2, reflector.Protobuf: 1}[ct.ContentType]
			if got := lists(s); got != want {
				t.Errorf("LIST requests = %d, want %d", got, want)
			}
		})
		t.Run("streaming list", func(t *testing.T) {
			s := newServer(t)
			newWriter(t, s).createN("default", 3)
			s.Inject(onWatch, apisim.WrongKind().After(1), 1)
			w := startWatcher(t, s, "pods", setup{mode: watchListMode, http: withContentType(ct)})
			if got := w.inf.Indexer().Len(); got != 3 {
				t.Errorf("cache holds %d pods once synced, want 3", got)
			}
			// Reported as the list's failure (logged as one), not as an
			// event skipped.
			failed := w.errs.matching(func(err error) bool {
				return errors.Is(err, wire.ErrWrongKind) && !errors.Is(err, reflector.ErrSkipped)
			})
			if len(failed) == 0 {
				t.Errorf("the failed list was not reported; reported: %v", w.errs.matching(func(error) bool { return true }))
			} else {
				t.Logf("reported: %v", failed[0].err)
			}
			if got := watches(s); got != 2 {
				t.Errorf("WATCH requests = %d, want 2: the streaming list tried again", got)
			}
			converge(t, s, convergeBound, w)
		})
	})
}

// Row 7: an object without a name, without metadata, or without a
// resourceVersion cannot be cached: it is rejected and reported, and the
// resourceVersion does not advance past it. In a LIST, the item is skipped
// and the rest of the list kept; in a relist, the cache keeps what it held
// for an item that has a name but no resourceVersion, rather than take it
// for deleted.
func TestRow07ObjectsThatCannotBeCached(t *testing.T) {
	t.Parallel()
	for _, f := range []struct {
		name  string
		fault apisim.Fault
		kept  bool // a relist keeps what the cache held for it
	}{
		{"no name", apisim.MissingName(), false},
		{"no metadata", apisim.MissingMetadata(), false},
		{"no resourceVersion", apisim.EmptyResourceVersion(), true},
	} {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			contentTypes(t, func(t *testing.T, ct encoding) {
				t.Run("watch", func(t *testing.T) {
					spoiledEvent(t, ct, f.fault, func(err error) bool { return errors.Is(err, reflector.ErrRejected) })
				})
				t.Run("list", func(t *testing.T) {
					s := newServer(t)
					wr := newWriter(t, s)
					wr.createN("default", 3)
					s.Inject(onList, f.fault.After(1), 1)
					w := startWatcher(t, s, "pods", setup{http: withContentType(ct)})
					if got := w.inf.Indexer().Len(); got != 2 {
						t.Errorf("cache holds %d pods after the first list, want 2: the rejected one skipped", got)
					}
					wr.touch("default", "p1")
					converge(t, s, convergeBound, w)
					if got := lists(s); got != 1 {
						t.Errorf("LIST requests = %d, want 1", got)
					}
				})
				t.Run("relist", func(t *testing.T) {
					s := newServer(t)
					wr := newWriter(t, s)
					wr.createN("default", 3)
					w := startWatcher(t, s, "pods", setup{http: withContentType(ct)})
					wr.touch("default", "p2")
					converge(t, s, convergeBound, w) // the watch is open: the faults below are for the next
					s.Inject(onList, f.fault.After(1), 1)
					s.Inject(onWatch, apisim.ErrorEvent(410, "Expired"), 1)
					s.Restart() // the watch ends; the next gets 410: a relist
					// The watch after the relist: the relist is in the FIFO.
					eventually(t, convergeBound, "a relist", func() bool { return lists(s) == 2 && watches(s) == 3 })
					want, deletes := 2, 1 // p1, spoiled, is taken for deleted
					if f.kept {
						want, deletes = 3, 0
					}
					eventually(t, convergeBound, "the relist applied", func() bool {
						_, _, told, _ := w.recs[0].counts()
						return w.inf.Indexer().Len() == want && told == deletes
					})
					wr.touch("default", "p1")
					converge(t, s, convergeBound, w)
					if _, _, told, _ := w.recs[0].counts(); told != deletes {
						t.Errorf("%d deletes told to the handler, want %d", told, deletes)
					}
				})
			})
		})
	}
}

// Row 8: a resourceVersion that goes back is a server fault: the Reflector
// relists (once) rather than apply the event.
func TestRow08DecreasingResourceVersion(t *testing.T) {
	t.Parallel()
	contentTypes(t, func(t *testing.T, ct encoding) {
		s := newServer(t)
		wr := newWriter(t, s)
		wr.createN("default", 3)
		s.Inject(onWatch, apisim.DecreasingResourceVersion().After(1), 1)
		w := startWatcher(t, s, "pods", setup{http: withContentType(ct)})
		wr.touch("default", "p0")
		wr.touch("default", "p1")
		wr.create("default", "p3")
		converge(t, s, convergeBound, w)
		// The relist alone may bring the cache up to date.
		eventually(t, convergeBound, "the watch after the relist", func() bool { return watches(s) >= 2 })
		if got := lists(s); got != 2 {
			t.Errorf("LIST requests = %d, want 2: one relist", got)
		}
		if got := watches(s); got != 2 {
			t.Errorf("WATCH requests = %d, want 2", got)
		}
	})
}

// Row 8, continued: one that repeats is no fault. etcd deletes the keys of
// an expired lease in one transaction, and kube-apiserver puts the Events
// created within a minute on one lease: a watch gets their DELETED events
// all at one resourceVersion. They are applied, with no relist.
func TestRow08DeletionsAtOneResourceVersion(t *testing.T) {
	t.Parallel()
	contentTypes(t, func(t *testing.T, ct encoding) {
		s := newServer(t)
		wr := newWriter(t, s)
		wr.createN("default", 4)
		w := startWatcher(t, s, "pods", setup{http: withContentType(ct)})
		if _, err := apisim.Of[*corev1.Pod](s, apisim.Pods()).Expire("default", "p0", "p1", "p2"); err != nil {
			t.Fatal(err)
		}
		wr.touch("default", "p3")
		converge(t, s, convergeBound, w)
		if got := lists(s); got != 1 {
			t.Errorf("LIST requests = %d, want 1: no relist", got)
		}
		if got := watches(s); got != 1 {
			t.Errorf("WATCH requests = %d, want 1", got)
		}
	})
}

// Row 8, continued: an event whose resourceVersion is not a number (from a
// broken server or proxy), the last its watch sends. kube-apiserver
// refuses a watch from it (500) and a list at least as new as it (400),
// so resuming, or relisting from where the cache is, would never succeed:
// the client lists the server's latest state and watches from there,
// reporting the refusal once.
func TestRow08ResourceVersionThatIsNotANumber(t *testing.T) {
	t.Parallel()
	const timeout, relist = time.Second, 1500 * time.Millisecond
	for _, c := range []struct {
		name    string
		mode    listMode
		refl    reflector.Option[*corev1.Pod]
		first   bool   // the first stream breaks (after a streaming list's three initial events), not the next watch
		refusal string // the status the refused request got
		lists   int    // LIST requests after the broken event; -1: not counted
	}{
		// The watch ends by its timeout; the next, from the broken
		// resourceVersion, is refused.
		{"list-watch", listThenWatch, reflector.WithMinWatchTimeout[*corev1.Pod](timeout), false, "500", 1},
		{"auto", autoMode, reflector.WithMinWatchTimeout[*corev1.Pod](timeout), false, "500", 0},
		{"watch-list", watchListMode, reflector.WithMinWatchTimeout[*corev1.Pod](timeout), false, "500", 0},
		// A relist falls due first: the LIST, or the streaming list, at
		// least as new as the broken resourceVersion is refused. Auto
		// mode follows a failed streaming list with a LIST, and then
		// streams again.
		{"relist-list-watch", listThenWatch, reflector.WithRelistInterval[*corev1.Pod](relist), false, "400", -1},
		{"relist-auto", autoMode, reflector.WithRelistInterval[*corev1.Pod](relist), true, "500", 1},
		{"relist-watch-list", watchListMode, reflector.WithRelistInterval[*corev1.Pod](relist), true, "500", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			refused := func(err error) bool {
				return strings.Contains(err.Error(), c.refusal) && strings.Contains(err.Error(), `resourceVersion: Invalid value: "not-a-number"`)
			}
			// The faulty stream lives 1–2 s (its timeout, or the relist):
			// a machine that stalls the test longer sends "broken" on the
			// next, whole. Such an attempt is told by "broken" cached with
			// its real resourceVersion and no refusal (a refusal comes
			// before the list that would cache it so), and made again.
			var s *apisim.Server
			var wr *writer
			var w *watcher
			var listed int
			for attempt := 1; ; attempt++ {
				// Without bookmarks, nothing but the next event moves the
				// resourceVersion past the broken one.
				s = newServer(t, apisim.WithBookmarkInterval(0))
				wr = newWriter(t, s)
				wr.createN("default", 3)
				if c.first {
					s.Inject(onWatch, apisim.InvalidResourceVersion().After(3), 1)
				}
				w = startWatcher(t, s, "pods", setup{mode: c.mode, refl: []reflector.Option[*corev1.Pod]{c.refl}})
				if !c.first {
					s.Inject(onWatch, apisim.InvalidResourceVersion(), 1)
					opened := watches(s)
					eventually(t, convergeBound, "the next watch, which breaks its first event", func() bool { return watches(s) > opened })
				}
				listed = lists(s)
				wr.create("default", "broken")
				var cached *corev1.Pod
				eventually(t, convergeBound, "the broken pod in the cache", func() bool {
					cached, _ = w.inf.Indexer().GetByKey("default/broken")
					return cached != nil
				})
				if cached.ResourceVersion == "not-a-number" || len(w.errs.matching(refused)) > 0 {
					break
				}
				if attempt == 5 {
					t.Fatalf("%d attempts: the broken pod came each time after the faulty stream had ended", attempt)
				}
				t.Logf("attempt %d: the broken pod came after the faulty stream had ended (a stalled machine); again", attempt)
			}
			eventually(t, convergeBound, "a request from the broken resourceVersion to be refused", func() bool {
				return len(w.errs.matching(refused)) > 0
			})
			wr.create("default", "after")
			wr.touch("default", "broken")
			converge(t, s, convergeBound, w)
			if got := lists(s) - listed; c.lists >= 0 && got != c.lists {
				t.Errorf("LIST requests after the broken event = %d, want %d", got, c.lists)
			}
			if got := w.errs.all(); len(got) != 1 {
				t.Errorf("want the refused request reported once, and nothing else; got %v", w.errs)
			}
		})
	}
}

// Row 9a: a watch event or a list item over the size limit fails that
// stream without reading past the limit; the watch is resumed, the list
// fetched again.
func TestRow09FrameOverLimit(t *testing.T) {
	t.Parallel()
	const limit, size = 64 << 10, 256 << 10
	contentTypes(t, func(t *testing.T, ct encoding) {
		s := newServer(t)
		wr := newWriter(t, s)
		wr.createN("default", 3)
		s.Inject(onList, apisim.LargeObject(size).After(1), 1)
		s.Inject(onWatch, apisim.LargeObject(size), 1)
		w := startWatcher(t, s, "pods", setup{http: append(withContentType(ct),
			reflector.WithMaxFrameBytes(limit), reflector.WithMaxItemBytes(limit))})
		wr.touch("default", "p0")
		wr.touch("default", "p1")
		converge(t, s, convergeBound, w)
		if got := lists(s); got != 2 {
			t.Errorf("LIST requests = %d, want 2", got)
		}
		if got := watches(s); got != 2 {
			t.Errorf("WATCH requests = %d, want 2", got)
		}
		tooLarge := w.errs.matching(func(err error) bool { return strings.Contains(err.Error(), "larger than the limit") })
		if len(tooLarge) != 2 {
			t.Errorf("want the list and the watch reported as too large; got %v", w.errs)
		}
		// Each says which limit to raise, and errors.Is tells which.
		items := w.errs.matching(func(err error) bool {
			return errors.Is(err, reflector.ErrItemTooLarge) && strings.Contains(err.Error(), "WithMaxItemBytes")
		})
		events := w.errs.matching(func(err error) bool {
			return errors.Is(err, reflector.ErrEventTooLarge) && strings.Contains(err.Error(), "WithMaxFrameBytes")
		})
		if len(items) != 1 || len(events) != 1 {
			t.Errorf("want one item and one event too large, each naming its option; got %v", w.errs)
		}
	})
}

// spoiledEvent checks a fault that spoils one watch event which the client
// must skip: the first event of the first watch, the creation of pod
// "spoiled". It waits for the error report matching match, checks that the
// resourceVersion did not advance past the spoiled event and that the
// stream went on, then changes the pod again and checks (C), (O), (D) and
// (R): one LIST, one WATCH.
func spoiledEvent(t *testing.T, ct encoding, fault apisim.Fault, match func(error) bool) {
	t.Helper()
	// Without periodic bookmarks, the resourceVersion moves only with events.
	s := newServer(t, apisim.WithBookmarkInterval(0))
	wr := newWriter(t, s)
	wr.createN("default", 3)
	s.Inject(onWatch, fault, 1)
	w := startWatcher(t, s, "pods", setup{http: withContentType(ct)})
	// HasSynced may come a moment before the list's resourceVersion is
	// recorded.
	before := parseRV(s.ResourceVersion())
	eventually(t, convergeBound, "the list's resourceVersion", func() bool { return w.rv() == before })
	spoiled := wr.create("default", "spoiled")

	eventually(t, convergeBound, "the spoiled event to be reported", func() bool { return len(w.errs.matching(match)) > 0 })
	if got := w.rv(); got != before {
		t.Errorf("resourceVersion moved from %d to %d on a skipped event (at %s)", before, got, spoiled.ResourceVersion)
	}
	wr.create("default", "after")
	wr.touch("default", "spoiled")
	took := converge(t, s, convergeBound, w)
	if got := lists(s); got != 1 {
		t.Errorf("LIST requests = %d, want 1: a skipped event is no reason to relist", got)
	}
	if got := watches(s); got != 1 {
		t.Errorf("WATCH requests = %d, want 1: the stream goes on after a skipped event", got)
	}
	t.Logf("reported: %v; converged in %s", w.errs.matching(match)[0].err, took)
}

// Row 9b: a LIST answered with a gzip bomb: a body of a few hundred
// kilobytes that inflates to a gigabyte, one huge item. The item limit
// applies after decompression, so the decoder stops at the limit: memory
// stays bounded, the list fails and is fetched again. Not parallel: it
// measures allocations.
func TestRow09GzipBombList(t *testing.T) {
	s := newServer(t)
	newWriter(t, s).createN("default", 3)
	var bombs atomic.Int32
	bombs.Store(1)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") == "" && strings.HasSuffix(r.URL.Path, "/pods") && bombs.Add(-1) >= 0 {
			serveGzipBomb(w)
			return
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)

	const limit = 1 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	w := startWatcher(t, s, "pods", setup{host: front.URL, noWait: true,
		http: append(withContentType(encoding{reflector.JSON, 1}), reflector.WithMaxItemBytes(limit))})
	w.waitSynced()
	runtime.ReadMemStats(&after)
	converge(t, s, convergeBound, w)

	allocated := after.TotalAlloc - before.TotalAlloc
	if allocated > 64<<20 {
		t.Errorf("allocated %d MiB while decoding a bomb with a 1 MiB item limit; want under 64 MiB", allocated>>20)
	}
	if got := lists(s); got != 1 {
		t.Errorf("LIST requests that reached the simulator = %d, want 1 (after the bomb)", got)
	}
	bombErrs := w.errs.matching(func(err error) bool { return strings.Contains(err.Error(), "larger than the limit") })
	if len(bombErrs) != 1 {
		t.Errorf("want the bomb reported as too large; got %v", w.errs)
	}
	for _, e := range bombErrs {
		t.Logf("allocated %.1f MiB in all until synced; the bomb reported as: %v", float64(allocated)/(1<<20), e.err)
	}
}

// serveGzipBomb answers a LIST with a gzip body that inflates to 1 GiB:
// one pod whose annotation never ends. It is written as concatenated gzip
// members (which HTTP clients inflate as one stream), the big one made
// once, so that the server spends almost nothing.
func serveGzipBomb(w http.ResponseWriter) {
	member := func(data []byte, repeat int) []byte {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		for range repeat {
			_, _ = zw.Write(data)
		}
		_ = zw.Close()
		return b.Bytes()
	}
	head := member([]byte(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[`+
		`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"bomb","namespace":"default","resourceVersion":"1","annotations":{"a":"`), 1)
	chunk := member(bytes.Repeat([]byte("a"), 1<<20), 1) // 1 MiB inflated, about 1 KiB sent
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Encoding", "gzip")
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(head); err != nil {
		return
	}
	for range 1024 { // 1 GiB inflated
		if _, err := w.Write(chunk); err != nil {
			return // the client went away
		}
	}
}
