package reliability

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/apisim"
	"github.com/listwatch/listwatch/internal/rest"
	"github.com/listwatch/listwatch/reflector"
)

// Rows 10 to 15 of the fault matrix: what the server answers, and what it
// forgets.

// Row 10a: a watch resumed from a resourceVersion the server no longer has
// gets 410 Gone: the Reflector lists again, from a state at least as new as
// its cache, then watches again.
func TestRow10GoneOnResume(t *testing.T) {
	t.Parallel()
	t.Run("ERROR event", func(t *testing.T) {
		t.Parallel()
		s := newServer(t)
		wr := newWriter(t, s)
		wr.createN("default", 5)
		s.Inject(onWatch, apisim.ErrorEvent(http.StatusGone, metav1.StatusReasonExpired).After(2), 1)
		w := startWatcher(t, s, "pods", setup{})
		for i := range 5 {
			wr.touch("default", fmt.Sprint("p", i))
		}
		converge(t, s, convergeBound, w)
		if got := lists(s); got != 2 {
			t.Errorf("LIST requests = %d, want 2: one relist", got)
		}
	})
	for _, mode := range []listMode{listThenWatch, autoMode} {
		name := map[listMode]string{listThenWatch: "compacted while away/list-watch", autoMode: "compacted while away/streaming"}[mode]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t)
			log := logRequests(s)
			wr := newWriter(t, s)
			wr.createN("default", 5)
			w := startWatcher(t, s, "pods", setup{mode: mode})
			synced := w.rv()
			// The watch must be open before the hold is set: one that
			// reached the server just after the restart was neither
			// ended nor held, and the test waited for ever.
			eventually(t, convergeBound, "the watch", func() bool { return s.Watchers(apisim.Pods()) == 1 })
			gate := apisim.NewGate()
			s.Inject(onWatch, apisim.Hold(gate), 1)
			s.Restart() // ends the watch; its resumption is held
			waitEntered(t, gate)
			wr.remove("default", "p0")
			wr.touch("default", "p1")
			wr.create("default", "p9")
			s.Compact()
			gate.Release()
			converge(t, s, convergeBound, w)
			relists := fills(log.all())
			if len(relists) != 2 {
				t.Fatalf("the cache was filled %d times, want 2: %v", len(relists), relists)
			}
			q := relists[1].query
			if got := parseRV(q.Get("resourceVersion")); got < synced || q.Get("resourceVersionMatch") != "NotOlderThan" {
				t.Errorf("relisted with resourceVersion=%q resourceVersionMatch=%q; want NotOlderThan the cache's %d",
					q.Get("resourceVersion"), q.Get("resourceVersionMatch"), synced)
			}
			_, _, deletes, unknown := w.recs[0].counts()
			if deletes != 1 || unknown != 1 {
				t.Errorf("deletes = %d (final state unknown: %d), want 1 inferred from the relist", deletes, unknown)
			}
		})
	}
}

// fills returns the requests that (re)filled a cache: LISTs without a
// continue token, and streaming-list WATCHes.
func fills(reqs []loggedRequest) []loggedRequest {
	var out []loggedRequest
	for _, r := range reqs {
		if (r.verb == apisim.VerbList && r.query.Get("continue") == "") || r.query.Get("sendInitialEvents") == "true" {
			out = append(out, r)
		}
	}
	return out
}

// Row 10b: the continue token of a paged LIST expires between two pages:
// as client-go's pager does, the list is made again in one answer without
// pages, which needs no token (not from a page of a newer state glued to
// older pages).
func TestRow10ContinueExpiredMidList(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	log := logRequests(s)
	wr := newWriter(t, s)
	wr.createN("default", 20)
	gate := apisim.NewGate()
	s.Inject(apisim.Match{Verb: apisim.VerbList, Request: func(r *http.Request) bool {
		return r.URL.Query().Get("continue") != ""
	}}, apisim.Hold(gate), 1)
	w := startWatcher(t, s, "pods", setup{noWait: true, refl: []reflector.Option[*corev1.Pod]{reflector.WithPageSize[*corev1.Pod](5)}})
	waitEntered(t, gate) // the second page is held
	wr.remove("default", "p3")
	wr.create("default", "p20")
	s.Compact() // the first page's snapshot is gone
	gate.Release()
	w.waitSynced()
	converge(t, s, convergeBound, w)
	var pages []string
	for _, r := range log.all() {
		if r.verb == apisim.VerbList {
			pages = append(pages, fmt.Sprintf("limit=%s continue=%t", r.query.Get("limit"), r.query.Get("continue") != ""))
		}
	}
	// Page 1, page 2 (410), then the new state in one answer.
	if want := []string{"limit=5 continue=false", "limit=5 continue=true", "limit= continue=false"}; !slices.Equal(pages, want) {
		t.Errorf("LIST requests %q, want %q: page 1, the expired page 2, then one unpaged list", pages, want)
	}
	if adds, _, deletes, _ := w.recs[0].counts(); adds != 20 || deletes != 0 {
		t.Errorf("handler got %d adds and %d deletes, want 20 adds of one consistent state", adds, deletes)
	}
}

// tooLargeShapes are the three forms kube-apiserver has used to say "you
// asked for a resourceVersion I have not reached yet".
func tooLargeShapes() map[string]metav1.Status {
	withType := apierrors.NewTimeoutError("Too large resource version: 1000, current: 9", 1).ErrStatus
	withType.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	messageOnly := apierrors.NewTimeoutError("Too large resource version: 1000, current: 9", 1).ErrStatus
	messageOnly.Details.Causes = []metav1.StatusCause{{Message: "Too large resource version"}}
	timeoutOnly := apierrors.NewTimeoutError("Too large resource version: 1000, current: 9", 0).ErrStatus
	timeoutOnly.Details = nil
	return map[string]metav1.Status{
		"cause type":           withType,
		"cause message only":   messageOnly,
		"Timeout message only": timeoutOnly,
	}
}

// Row 11: "too large resource version", in each of its three forms, as an
// HTTP answer and as an ERROR event: the Reflector waits at least a second
// before asking again (no tight loop), then lists at least as new as its
// cache before it watches again, as client-go does (a server restored from
// a backup may never reach the resourceVersion it was asked for; see
// reflector's TestRestoredServerIsFollowedBack). The fault is on watches
// only, so every such list succeeds.
func TestRow11TooLargeResourceVersion(t *testing.T) {
	t.Parallel()
	for shape, st := range tooLargeShapes() {
		for _, delivery := range []string{"answer", "ERROR event"} {
			t.Run(shape+"/"+delivery, func(t *testing.T) {
				t.Parallel()
				s := newServer(t)
				log := logRequests(s)
				wr := newWriter(t, s)
				wr.createN("default", 3)
				fault := apisim.StatusResponse(st)
				if delivery == "ERROR event" {
					fault = apisim.ErrorEventStatus(st)
				}
				inj := s.Inject(onWatch, fault, 0)
				w := startWatcher(t, s, "pods", setup{})
				const period = 2500 * time.Millisecond
				time.Sleep(period) // the fault's duration: the thing measured
				inj.Remove()
				wr.touch("default", "p1")
				converge(t, s, convergeBound, w)
				// The last list may bring the touch itself, and converge
				// return before the watch after it is asked for: wait for
				// it, or the count below misses it.
				eventually(t, convergeBound, "the watch", func() bool { return s.Watchers(apisim.Pods()) == 1 })

				var at []time.Time
				for _, r := range log.all() {
					if r.verb == apisim.VerbWatch {
						at = append(at, r.at)
					}
				}
				for i := 1; i < len(at)-1; i++ {
					if gap := at[i].Sub(at[i-1]); gap < 900*time.Millisecond {
						t.Errorf("watch %d came %s after a too-large answer; want at least 1s", i+1, gap)
					}
				}
				if len(at) > 5 {
					t.Errorf("%d WATCH requests in %s of too-large answers, want at most 5", len(at), period)
				}
				if got := lists(s); got < 2 || got > len(at) {
					t.Errorf("LIST requests = %d, want one, then at most one per too-large answer (%d watches)", got, len(at))
				}
				if len(w.errs.matching(isTooLarge)) == 0 {
					t.Errorf("too-large answers not reported: %v", w.errs)
				}
			})
		}
	}
}

func isTooLarge(err error) bool { return rest.IsTooLargeResourceVersion(err) }

// Row 12: events the server loses silently (stored, but never sent to the
// open watch) are repaired by the periodic relist (WithRelistInterval),
// which costs one LIST (and one new WATCH) per interval and delivers only
// the real changes. Without it the cache stays wrong until the objects
// change again.
func TestRow12LostEventsRepairedByPeriodicRelist(t *testing.T) {
	t.Parallel()
	const interval = 500 * time.Millisecond
	s := newServer(t)
	wr := newWriter(t, s)
	wr.createN("default", 5)
	w := startWatcher(t, s, "relisting", setup{refl: []reflector.Option[*corev1.Pod]{reflector.WithRelistInterval[*corev1.Pod](interval)}})
	plain := startWatcher(t, s, "plain", setup{})
	wr.touch("default", "p0") // once both have it, both watches are open
	converge(t, s, convergeBound, w, plain)
	start, listsBefore := time.Now(), lists(s)

	if err := s.DropEvents(apisim.Pods(), 3); err != nil {
		t.Fatal(err)
	}
	wr.create("default", "lost-add")
	wr.touch("default", "p1")
	wr.remove("default", "p2")
	wr.create("default", "seen") // delivered: the watches are alive
	took := converge(t, s, 2*interval+convergeBound, w)
	if took > 2*interval+2*time.Second {
		t.Errorf("repaired after %s, want within about one interval (%s)", took, interval)
	}
	if plain.mismatch(s) == "" {
		t.Errorf("the informer without periodic relist repaired the lost events too: the fault did not apply")
	}
	// Once converged, relists keep finding no change: nothing is delivered.
	adds, updates, deletes, _ := w.recs[0].counts()
	time.Sleep(3 * interval)
	if a, u, d, _ := w.recs[0].counts(); a != adds || u != updates || d != deletes {
		t.Errorf("relists of an unchanged state delivered notifications: %d/%d/%d -> %d/%d/%d", adds, updates, deletes, a, u, d)
	}
	converge(t, s, convergeBound, w)
	elapsed, n := time.Since(start), lists(s)-listsBefore
	if want := int(elapsed/interval) + 2; n > want {
		t.Errorf("%d LISTs in %s with a relist every %s, want at most %d", n, elapsed, interval, want)
	}
	t.Logf("lost events repaired after %s; cost: %d LISTs in %s (one per %s)", took, n, elapsed.Round(time.Millisecond), interval)
}

// Row 12b: the periodic relist is due one interval after the last list,
// even when every watch ends sooner than that (here the watch timeout is
// 1-2s and the interval 2.5s).
func TestRow12PeriodicRelistWithShortWatches(t *testing.T) {
	t.Parallel()
	const interval = 2500 * time.Millisecond
	s := newServer(t)
	wr := newWriter(t, s)
	wr.createN("default", 5)
	w := startWatcher(t, s, "relisting", setup{refl: []reflector.Option[*corev1.Pod]{
		reflector.WithRelistInterval[*corev1.Pod](interval),
		reflector.WithMinWatchTimeout[*corev1.Pod](time.Second)}})
	wr.touch("default", "p0")
	converge(t, s, convergeBound, w)
	if err := s.DropEvents(apisim.Pods(), 1); err != nil {
		t.Fatal(err)
	}
	wr.touch("default", "p1")
	took := converge(t, s, interval+convergeBound, w)
	if took > interval+time.Second {
		t.Errorf("repaired after %s, want within the interval (%s)", took, interval)
	}
	t.Logf("repaired after %s with watches of 1-2s; %d LISTs, %d WATCHes", took.Round(time.Millisecond), lists(s), watches(s))
}

// Row 13: an object deleted and created again under the same name while
// the informer is disconnected reaches the handlers as Delete then Add
// (new uid), never as an Update: from the resumed watch's events, or, when
// the server forgot them, from the relist.
func TestRow13DeleteAndRecreateWhileDisconnected(t *testing.T) {
	t.Parallel()
	for _, compact := range []bool{false, true} {
		name := map[bool]string{false: "resumed watch", true: "relist"}[compact]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t)
			p := newProxy(t, s.URL()[len("http://"):])
			wr := newWriter(t, s)
			wr.createN("default", 3)
			w := startWatcher(t, s, "pods", setup{host: "http://" + p.addr()})
			oldUID := w.cacheUID("default/p1")
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
			if got := w.cacheUID("default/p1"); got != string(recreated.UID) || got == oldUID {
				t.Errorf("cached uid %s, want the new %s", got, recreated.UID)
			}
			_, updates, deletes, unknown := w.recs[0].counts()
			if updates != 0 || deletes != 1 {
				t.Errorf("handler got %d updates and %d deletes, want Delete then Add", updates, deletes)
			}
			wantLists, wantUnknown := 1, 0
			if compact {
				wantLists, wantUnknown = 2, 1
			}
			if got := lists(s); got != wantLists {
				t.Errorf("LIST requests = %d, want %d", got, wantLists)
			}
			if unknown != wantUnknown {
				t.Errorf("deletes with the final state unknown = %d, want %d", unknown, wantUnknown)
			}
		})
	}
}

// cacheUID returns the uid of the cached object under key, or "".
func (w *watcher) cacheUID(key string) string {
	p, ok := w.inf.Indexer().GetByKey(key)
	if !ok {
		return ""
	}
	return string(p.UID)
}

// Row 14: sustained 429 TooManyRequests, with and without Retry-After. The
// Reflector waits what the server asks (else backs off), never relists,
// reports the error while it lasts, and catches up once it ends: the cache
// is stale for at most the fault plus one wait.
func TestRow14SustainedTooManyRequests(t *testing.T) {
	t.Parallel()
	for _, f := range []struct {
		name        string
		fault       apisim.Fault
		maxRequests int
	}{
		// Retry-After: 1 → one request a second: 3 or 4 in the 3s, the
		// one that ends it, and one of slack for timers late under load
		// (6 was seen under -race on 2 CPUs); backing off instead would
		// make about 10.
		{"Retry-After 1s", apisim.TooManyRequests(1), 6},
		// The same as API Priority and Fairness answers it: plain text,
		// the Retry-After header only.
		{"Retry-After 1s, plain text", apisim.TooManyRequestsPlain(1), 6},
		// Backoff from 10ms doubling to 2s: about 10 requests in 3s.
		{"no Retry-After", apisim.TooManyRequestsWithoutRetryAfter(), 14},
	} {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t)
			p := newProxy(t, s.URL()[len("http://"):])
			wr := newWriter(t, s)
			wr.createN("default", 5)
			w := startWatcher(t, s, "pods", setup{host: "http://" + p.addr(),
				refl: []reflector.Option[*corev1.Pod]{reflector.WithBackoff[*corev1.Pod](backoffMin, 2*time.Second)}})
			listInj, watchInj := s.Inject(onList, f.fault, 0), s.Inject(onWatch, f.fault, 0)
			before := watches(s)
			p.cut()
			const period = 3 * time.Second
			deadline := time.Now().Add(period)
			for i := 0; time.Now().Before(deadline); i++ {
				wr.touch("default", fmt.Sprint("p", i%5))
				time.Sleep(50 * time.Millisecond)
			}
			if err := w.inf.LastError(); err == nil || !strings.Contains(err.Error(), "429") {
				t.Errorf("LastError() = %v while throttled, want the 429", err)
			}
			listInj.Remove()
			watchInj.Remove()
			ended := time.Now()
			converge(t, s, convergeBound, w)
			stale := time.Since(ended)
			n := watches(s) - before
			if n > f.maxRequests {
				t.Errorf("%d WATCH requests in %s of 429s, want at most %d", n, period, f.maxRequests)
			}
			if got := lists(s); got != 1 {
				t.Errorf("LIST requests = %d, want 1: throttling is no reason to relist", got)
			}
			if stale > 2*time.Second+time.Second {
				t.Errorf("caught up %s after the throttling ended, want within one wait (2s)", stale)
			}
			if w.inf.LastError() != nil {
				t.Errorf("LastError() = %v after recovery, want nil", w.inf.LastError())
			}
			t.Logf("%d WATCH requests in %s of 429s; caught up %s after", n, period, stale.Round(time.Millisecond))
		})
	}
}

// Row 15: bursts of 500 and 503 answers on LIST and WATCH, and an ERROR 500
// inside a watch stream: retried with backoff, the watch resumed, nothing
// listed again once listed (but for one list of one object after the
// first 503 to a watch, which may be a server restarting: the Reflector's
// probe that it has not come back behind the cache).
func TestRow15ServerErrorBursts(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	wr := newWriter(t, s)
	wr.createN("default", 5)
	s.Inject(onList, apisim.ServerError(http.StatusInternalServerError), 3)
	s.Inject(onList, apisim.ServerError(http.StatusServiceUnavailable), 3)
	s.Inject(onWatch, apisim.ServerError(http.StatusServiceUnavailable), 3)
	s.Inject(onWatch, apisim.ServerError(http.StatusInternalServerError), 2)
	s.Inject(onWatch, apisim.ErrorEvent(http.StatusInternalServerError, metav1.StatusReasonInternalError).After(2), 1)
	w := startWatcher(t, s, "pods", setup{})
	for i := range 6 {
		wr.touch("default", fmt.Sprint("p", i%5))
	}
	converge(t, s, convergeBound, w)
	if got := lists(s); got != 8 {
		t.Errorf("LIST requests = %d, want 8: six failures, one success, one probe", got)
	}
	if got := watches(s); got != 7 {
		t.Errorf("WATCH requests = %d, want 7: five failures, one ended by ERROR 500, one that stays", got)
	}
	if w.inf.LastError() != nil {
		t.Errorf("LastError() = %v after recovery, want nil", w.inf.LastError())
	}
}

// Row 10, every watch gone: a server that answers every watch with 410
// gets a bounded number of LISTs, backing off, not a LIST/WATCH loop (a
// successful list reset the backoff, so the loop ran at the initial delay:
// 216 LISTs in 2 s with the tests' backoff).
func TestRow10EveryWatchGone(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	wr := newWriter(t, s)
	wr.createN("default", 3)
	w := startWatcher(t, s, "pods", setup{})
	eventually(t, convergeBound, "the watch", func() bool { return s.Watchers(apisim.Pods()) == 1 })
	inj := s.Inject(onWatch, apisim.ErrorEvent(http.StatusGone, metav1.StatusReasonExpired), 0)
	s.Restart()
	const period = 2 * time.Second
	time.Sleep(period) // the fault's duration: the thing measured
	inj.Remove()
	if n := lists(s); n > 20 {
		t.Errorf("%d LISTs in %s of 410s, want at most 20 (one per backed-off retry)", n, period)
	}
	wr.touch("default", "p1")
	converge(t, s, convergeBound, w)
}

// Row 27: a proxy answers a LIST in the server's place with a 2xx body that
// is no list: {} from a health-check backend, a list without "items". Taken
// as an empty list, it would empty the cache, tell every handler that every
// object was deleted, and sync a first list on nothing (client-go reads {}
// so). It is refused and reported; the list is made again after the
// backoff; the handlers see no delete. An empty list without a
// resourceVersion is refused too where the cache has one, as older than
// the cache; as a first list it is a resource without resourceVersions
// (informer's TestUnversionedRelistDeliversOnlyRealChanges), so it is
// tried on a relist only.
func TestRow27ProxyAnswersAListWithNoList(t *testing.T) {
	t.Parallel()
	noItems := func(err error) bool {
		return errors.Is(err, reflector.ErrMalformed) && strings.Contains(err.Error(), `no "items"`)
	}
	for _, a := range []struct {
		name, body string
		refused    func(error) bool
		relistOnly bool
	}{
		{"{}", `{}`, noItems, false},
		{"without items", `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"999999"}}`, noItems, false},
		{"empty without resourceVersion", `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}`, func(err error) bool {
			return strings.Contains(err.Error(), "listed no resourceVersion, cache already at")
		}, true},
	} {
		answer := apisim.Answer(http.StatusOK, "application/json", []byte(a.body))
		if !a.relistOnly {
			t.Run("first list/"+a.name, func(t *testing.T) {
				t.Parallel()
				s := newServer(t)
				newWriter(t, s).createN("default", 5)
				s.Inject(onList, answer, 1)
				w := startWatcher(t, s, "pods", setup{})
				if got := w.inf.Indexer().Len(); got != 5 {
					t.Errorf("synced with %d pods in the cache, want 5: the refused answer is no list", got)
				}
				if len(w.errs.matching(a.refused)) != 1 {
					t.Errorf("the refused answer was not reported once; reported: %v", w.errs)
				}
				converge(t, s, convergeBound, w)
				if got := lists(s); got != 2 {
					t.Errorf("LIST requests = %d, want 2", got)
				}
			})
		}
		t.Run("relist/"+a.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t)
			wr := newWriter(t, s)
			wr.createN("default", 5)
			w := startWatcher(t, s, "pods", setup{})
			eventually(t, convergeBound, "the watch", func() bool { return s.Watchers(apisim.Pods()) == 1 })
			s.Inject(onList, answer, 1)
			s.Inject(onWatch, apisim.ErrorEvent(http.StatusGone, metav1.StatusReasonExpired), 1)
			s.Restart() // ends the watch; its resumption is told 410, so the Reflector lists
			eventually(t, convergeBound, "the relist after the refused answer", func() bool { return lists(s) == 3 })
			wr.touch("default", "p1")
			converge(t, s, convergeBound, w)
			if _, _, deletes, _ := w.recs[0].counts(); deletes != 0 {
				t.Errorf("the handler saw %d deletes, want none: nothing was deleted", deletes)
			}
			if len(w.errs.matching(a.refused)) != 1 {
				t.Errorf("the refused answer was not reported once; reported: %v", w.errs)
			}
		})
	}
}
