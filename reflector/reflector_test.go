package reflector_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/fakelw"
	"github.com/listwatch/listwatch/internal/objkey"
	"github.com/listwatch/listwatch/internal/rest"
	"github.com/listwatch/listwatch/internal/wire"
	"github.com/listwatch/listwatch/reflector"
)

// recorder is a Store that keeps the state it was given and a log of calls.
type recorder struct {
	mu    sync.Mutex
	state map[string]*corev1.Pod
	log   []string
}

func newRecorder() *recorder { return &recorder{state: map[string]*corev1.Pod{}} }

func (r *recorder) Add(p *corev1.Pod) error    { return r.put("add", p) }
func (r *recorder) Update(p *corev1.Pod) error { return r.put("update", p) }
func (r *recorder) put(op string, p *corev1.Pod) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.state[objkey.Key(p)] = p
	r.log = append(r.log, op+" "+p.Name+"@"+p.ResourceVersion)
	return nil
}
func (r *recorder) Delete(p *corev1.Pod) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.state, objkey.Key(p))
	r.log = append(r.log, "delete "+p.Name+"@"+p.ResourceVersion)
	return nil
}
func (r *recorder) Replace(list []*corev1.Pod, rv string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.state = map[string]*corev1.Pod{}
	for _, p := range list {
		r.state[objkey.Key(p)] = p
	}
	r.log = append(r.log, fmt.Sprintf("replace %d@%s", len(list), rv))
	return nil
}

func (r *recorder) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.log...)
}

// keys returns "name@rv" of the state, sorted.
func (r *recorder) keys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, p := range r.state {
		out = append(out, p.Name+"@"+p.ResourceVersion)
	}
	sort.Strings(out)
	return out
}

func sourceKeys(src *fakelw.Source[*corev1.Pod]) []string {
	var out []string
	for _, p := range src.Objects() {
		out = append(out, p.Name+"@"+p.ResourceVersion)
	}
	sort.Strings(out)
	return out
}

func newSource() *fakelw.Source[*corev1.Pod] {
	return fakelw.New(func() *corev1.Pod { return &corev1.Pod{} })
}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
}

// run starts a Reflector (in the bubble, if there is one) and returns a
// function that stops it and waits for Run to return.
func run(t *testing.T, r *reflector.Reflector[*corev1.Pod]) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

func TestListThenWatch(t *testing.T) {
	for _, mode := range []reflector.Mode{reflector.ListWatch, reflector.WatchList} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src, store := newSource(), newRecorder()
				src.Create(pod("a"))
				src.Create(pod("b"))
				r := reflector.New(src, store, reflector.WithMode[*corev1.Pod](mode))
				stop := run(t, r)
				defer stop()
				synctest.Wait()
				assert.Equal(t, []string{"replace 2@2"}, store.calls())
				assert.Equal(t, "2", r.LastSyncResourceVersion())

				src.Create(pod("c"))
				b := pod("b")
				src.Update(b)
				src.Delete("ns/a")
				synctest.Wait()
				assert.Equal(t, []string{"replace 2@2", "add c@3", "update b@4", "delete a@5"}, store.calls())
				assert.Equal(t, sourceKeys(src), store.keys())
				assert.Equal(t, "5", r.LastSyncResourceVersion())
			})
		})
	}
}

// An error handler that panics is logged, and the Reflector recovers from
// the error as it would have: the panic does not take its goroutine down.
func TestPanickingErrorHandlerIsLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		src.Create(pod("a"))
		src.FailList(apierrors.NewTooManyRequests("busy", 1))
		var buf bytes.Buffer // written by the Reflector's goroutine only, read after Run returned
		r := reflector.New(src, store,
			reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithLogger[*corev1.Pod](slog.New(slog.NewTextHandler(&buf, nil))),
			reflector.WithErrorHandler[*corev1.Pod](func(err error) { panic("handler: " + err.Error()) }))
		stop := run(t, r)
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, sourceKeys(src), store.keys())
		stop()
		assert.Contains(t, buf.String(), "the error handler panicked")
		assert.Contains(t, buf.String(), "handler: ")
	})
}

func TestCleanWatchEndResumesWithoutRelist(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		src.Create(pod("a"))
		r := reflector.New(src, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch))
		defer run(t, r)()
		synctest.Wait()
		src.Create(pod("b"))
		synctest.Wait()
		src.CloseWatches()
		src.Create(pod("c")) // written while no watch is open
		synctest.Wait()
		assert.EqualValues(t, 1, src.Lists.Load(), "a clean end must not relist")
		assert.EqualValues(t, 2, src.Watches.Load())
		assert.Equal(t, sourceKeys(src), store.keys())
	})
}

func TestGoneRelists(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		src.Create(pod("a"))
		r := reflector.New(src, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch))
		defer run(t, r)()
		synctest.Wait()
		src.CloseWatches()
		// While the reflector is away: writes, then compaction.
		src.Delete("ns/a")
		src.Create(pod("b"))
		src.Compact()
		time.Sleep(time.Minute)
		synctest.Wait()
		// The watch ended at once (no time passes in the bubble), so the
		// reflector waited out a backoff and resumed after the
		// compaction: one 410, one relist.
		assert.EqualValues(t, 2, src.Lists.Load())
		assert.Equal(t, sourceKeys(src), store.keys())
	})
}

func TestGoneOnResumeRelists(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		src.Create(pod("a"))
		src.FailWatch(fakelw.Status(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "down"))
		r := reflector.New(src, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithErrorHandler[*corev1.Pod](func(err error) { t.Log(err) }))
		defer run(t, r)()
		synctest.Wait()
		// The first watch fails; during the backoff, the server moves on
		// and compacts, so the resumed watch meets 410 and relists. (A
		// 503 may be a server restarting: before the watch, a list of
		// one object checks it is not behind the cache.)
		src.Delete("ns/a")
		src.Create(pod("b"))
		src.Compact()
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.EqualValues(t, 3, src.Lists.Load()) // list, probe, relist
		assert.Equal(t, sourceKeys(src), store.keys())
		assert.Contains(t, store.calls(), "replace 1@3")
	})
}

func TestBookmarkAdvancesResourceVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &scripted{events: []reflector.Event[*corev1.Pod]{
			{Type: reflector.Bookmark, Object: withRV(&corev1.Pod{}, "42")},
		}}
		store := newRecorder()
		r := reflector.New[*corev1.Pod](lw, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch))
		defer run(t, r)()
		synctest.Wait()
		assert.Equal(t, "42", r.LastSyncResourceVersion())
		assert.Equal(t, []string{"replace 0@10"}, store.calls(), "a bookmark changes no object")
	})
}

// watchThenResume is an ownLW whose first watch sends events and ends
// cleanly; the watches after it stay open. froms returns the
// resourceVersion each watch was asked from.
func watchThenResume(events ...reflector.Event[*corev1.Pod]) (lw *ownLW, froms func() []string) {
	var mu sync.Mutex
	var asked []string
	lw = &ownLW{watch: func(_ context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, opts.ResourceVersion)
		if len(asked) > 1 {
			return newCloseOnly(), nil
		}
		return &eventsThen{events: events, err: errEOF}, nil
	}}
	return lw, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(asked)
	}
}

// A BOOKMARK older than the event before it does not take the Reflector
// back: the next watch resumes after the event, not from the bookmark,
// which would bring again what the Store has.
func TestOlderBookmarkDoesNotMoveTheResourceVersionBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw, froms := watchThenResume(
			reflector.Event[*corev1.Pod]{Type: reflector.Added, Object: withRV(pod("b"), "42")},
			reflector.Event[*corev1.Pod]{Type: reflector.Bookmark, Object: withRV(&corev1.Pod{}, "7")},
		)
		var errs errorLog
		r, store := ownReflector(lw, &errs, reflector.ListWatch)
		defer run(t, r)()
		synctest.Wait()
		assert.Equal(t, "42", r.LastSyncResourceVersion())
		assert.Equal(t, []string{"1", "42"}, froms(), "the watch after the bookmark resumes after the event")
		assert.Equal(t, []string{"a@1", "b@42"}, store.keys())
		assert.Empty(t, errs.all())
	})
}

// Events may share a resourceVersion: etcd deletes the keys of an expired
// lease in one transaction, and kube-apiserver puts the Events created
// within a minute on one lease, so they are DELETED at one revision (seen
// with kube-apiserver v1.37 and --event-ttl). Before, the second was taken
// for a server going backwards, and the Reflector relisted, about once a
// minute for an informer of Events on a busy cluster.
func TestEventsAtOneResourceVersionAreApplied(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &scripted{events: []reflector.Event[*corev1.Pod]{
			{Type: reflector.Added, Object: withRV(pod("a"), "11")},
			{Type: reflector.Added, Object: withRV(pod("b"), "12")},
			{Type: reflector.Added, Object: withRV(pod("c"), "13")},
			{Type: reflector.Deleted, Object: withRV(pod("a"), "20")},
			{Type: reflector.Deleted, Object: withRV(pod("b"), "20")},
			{Type: reflector.Deleted, Object: withRV(pod("c"), "20")},
		}}
		store := newRecorder()
		var errs []error
		r := reflector.New[*corev1.Pod](lw, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithErrorHandler[*corev1.Pod](func(err error) { errs = append(errs, err) }))
		defer run(t, r)()
		synctest.Wait()
		assert.Empty(t, errs)
		assert.Empty(t, store.keys())
		assert.Equal(t, "20", r.LastSyncResourceVersion())
		lw.mu.Lock()
		defer lw.mu.Unlock()
		assert.Equal(t, 1, lw.lists, "no relist")
	})
}

func TestContinueExpiredListsEverythingAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		for i := range 5 {
			src.Create(pod(fmt.Sprint("p", i)))
		}
		// Page 1 succeeds, page 2's token has expired: as client-go's
		// pager does, one list without pages follows.
		lw := &pageFaults{Source: src, faults: []pageFault{
			{err: fakelw.Status(http.StatusGone, metav1.StatusReasonExpired, "The provided continue parameter is too old")},
		}}
		r := reflector.New[*corev1.Pod](lw, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithPageSize[*corev1.Pod](2))
		defer run(t, r)()
		synctest.Wait()
		assert.Equal(t, "replace 5@5", store.calls()[0], "the pages before the expiry must not be kept twice")
		assert.Equal(t, []reflector.ListOptions{{Limit: 2}, {Limit: 2, Continue: "1/ns/p1"}, {}}, lw.asked,
			"page 1, expired page 2, then everything in one answer")
	})
}

// A page that fails for a while (the server busy, the connection cut part
// way through it) is asked for again with the same continue token; the
// pages before it are kept, and the items the failed attempt delivered are
// not kept twice.
func TestFailedPageIsAskedForAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		for i := range 5 {
			src.Create(pod(fmt.Sprint("p", i)))
		}
		busy := apierrors.NewTooManyRequests("slow down", 3)
		lw := &pageFaults{Source: src, faults: []pageFault{
			{err: busy},
			{items: 1, err: fmt.Errorf("reading the list: %w", io.ErrUnexpectedEOF)},
		}}
		var errs []error
		r := reflector.New[*corev1.Pod](lw, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithPageSize[*corev1.Pod](2), reflector.WithErrorHandler[*corev1.Pod](func(err error) { errs = append(errs, err) }))
		defer run(t, r)()
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		require.NotEmpty(t, store.calls())
		assert.Equal(t, "replace 5@5", store.calls()[0])
		p2 := reflector.ListOptions{Limit: 2, Continue: "1/ns/p1"}
		assert.Equal(t, []reflector.ListOptions{{Limit: 2}, p2, p2, p2, {Limit: 2, Continue: "1/ns/p3"}}, lw.asked)
		assert.GreaterOrEqual(t, lw.at[2].Sub(lw.at[1]), 3*time.Second, "Retry-After is honoured")
		require.Len(t, errs, 2, "each failed page is reported")
		assert.ErrorContains(t, errs[0], "asking for the page again")
	})
}

// A last page cut part way is asked for again too: its continue token is
// still good, and the list need not start over.
func TestFailedLastPageIsAskedForAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		for i := range 3 {
			src.Create(pod(fmt.Sprint("p", i)))
		}
		lw := &pageFaults{Source: src, faults: []pageFault{{items: 1, err: fmt.Errorf("reading the list: %w", io.ErrUnexpectedEOF)}}}
		r := reflector.New[*corev1.Pod](lw, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithPageSize[*corev1.Pod](2))
		defer run(t, r)()
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		require.NotEmpty(t, store.calls())
		assert.Equal(t, "replace 3@3", store.calls()[0])
		p2 := reflector.ListOptions{Limit: 2, Continue: "1/ns/p1"}
		assert.Equal(t, []reflector.ListOptions{{Limit: 2}, p2, p2}, lw.asked)
	})
}

// A server that pages even the answer asked for without pages, and expires
// its continue tokens again, fails the list after that one fallback: the
// reflector backs off, and does not list in a loop.
func TestContinueExpiredFallsBackOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		for i := range 3 {
			src.Create(pod(fmt.Sprint("p", i)))
		}
		lw := &alwaysPages{Source: src}
		var errs []error
		r := reflector.New[*corev1.Pod](lw, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithErrorHandler[*corev1.Pod](func(err error) { errs = append(errs, err) }))
		defer run(t, r)()
		synctest.Wait()
		assert.Equal(t, int64(4), lw.calls.Load(), "page 1, expired page 2, the answer without pages paged anyway, its page 2 expired")
		require.Len(t, errs, 1)
		assert.ErrorContains(t, errs[0], "too old")
		assert.Empty(t, store.calls())
	})
}

// alwaysPages serves pages of one object whatever the limit, and answers
// every continue token with 410 Expired.
type alwaysPages struct {
	*fakelw.Source[*corev1.Pod]
	calls atomic.Int64
}

func (a *alwaysPages) List(ctx context.Context, opts reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
	a.calls.Add(1)
	if opts.Continue != "" {
		return reflector.ListMeta{}, fakelw.Status(http.StatusGone, metav1.StatusReasonExpired, "The provided continue parameter is too old")
	}
	opts.Limit = 1
	return a.Source.List(ctx, opts, add)
}

// A page that keeps failing fails the list after maxPageRetries more tries;
// one that fails for good (403) fails it at once. Either way the next list
// starts from the first page.
func TestPageRetriesAreBounded(t *testing.T) {
	for name, tc := range map[string]struct {
		err   error
		tries int
	}{
		"unavailable": {fakelw.Status(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "down"), 6},
		"forbidden":   {fakelw.Status(http.StatusForbidden, metav1.StatusReasonForbidden, "no"), 1},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src, store := newSource(), newRecorder()
				for i := range 3 {
					src.Create(pod(fmt.Sprint("p", i)))
				}
				lw := &pageFaults{Source: src}
				for range tc.tries {
					lw.faults = append(lw.faults, pageFault{err: tc.err})
				}
				r := reflector.New[*corev1.Pod](lw, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
					reflector.WithPageSize[*corev1.Pod](2))
				defer run(t, r)()
				synctest.Wait()
				time.Sleep(time.Minute)
				synctest.Wait()
				assert.Equal(t, []string{"replace 3@3"}, store.calls())
				want := []reflector.ListOptions{{Limit: 2}}
				for range tc.tries {
					want = append(want, reflector.ListOptions{Limit: 2, Continue: "1/ns/p1"})
				}
				// The list again, a second snapshot of the source's.
				want = append(want, reflector.ListOptions{Limit: 2}, reflector.ListOptions{Limit: 2, Continue: "2/ns/p1"})
				assert.Equal(t, want, lw.asked)
			})
		})
	}
}

// pageFaults fails the requests that carry a continue token with its
// faults, in order, each after delivering its first items of the page.
// It records what every List call asked for.
type pageFaults struct {
	*fakelw.Source[*corev1.Pod]
	faults []pageFault
	asked  []reflector.ListOptions
	at     []time.Time
}

type pageFault struct {
	items int // delivered before the failure
	err   error
}

func (f *pageFaults) List(ctx context.Context, opts reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
	f.asked, f.at = append(f.asked, opts), append(f.at, time.Now())
	if opts.Continue == "" || len(f.faults) == 0 {
		return f.Source.List(ctx, opts, add)
	}
	fault := f.faults[0]
	f.faults = f.faults[1:]
	n := 0
	f.Source.List(ctx, opts, func(p *corev1.Pod) error {
		if n++; n <= fault.items {
			return add(p)
		}
		return nil
	})
	return reflector.ListMeta{}, fault.err
}

func TestRejectedObjectsAreSkipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var errs []error
		lw := &scripted{events: []reflector.Event[*corev1.Pod]{
			{Type: reflector.Added, Object: withRV(pod(""), "11")},    // no name
			{Type: reflector.Added, Object: pod("norv")},              // no RV
			{Type: reflector.Added, Object: withRV(pod("a/b"), "12")}, // a slash: the key of b in namespace ns/a
			{Type: reflector.Added, Object: withRV(pod("ok"), "13")},  // fine
		}}
		store := newRecorder()
		r := reflector.New[*corev1.Pod](lw, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithErrorHandler[*corev1.Pod](func(err error) { errs = append(errs, err) }))
		defer run(t, r)()
		synctest.Wait()
		assert.Equal(t, []string{"replace 0@10", "add ok@13"}, store.calls())
		require.Len(t, errs, 3)
		for _, err := range errs {
			assert.ErrorIs(t, err, reflector.ErrRejected)
		}
		assert.Equal(t, "13", r.LastSyncResourceVersion())
	})
}

func TestResourceVersionGoingBackwardsRelists(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &scripted{listRVs: []string{"10", "20"}, events: []reflector.Event[*corev1.Pod]{
			{Type: reflector.Added, Object: withRV(pod("a"), "12")},
			{Type: reflector.Modified, Object: withRV(pod("a"), "11")}, // backwards
		}}
		store := newRecorder()
		r := reflector.New[*corev1.Pod](lw, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch))
		defer run(t, r)()
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, []string{"replace 0@10", "add a@12", "replace 0@20"}, store.calls(),
			"a server going backwards must be relisted, not applied")
	})
}

func TestRelistNeverGoesBackInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &scripted{listRVs: []string{"10", "7", "20"}, events: []reflector.Event[*corev1.Pod]{
			{Type: reflector.Added, Object: withRV(pod("a"), "12")},
			{Type: reflector.Error, Status: &metav1.Status{Code: http.StatusGone, Reason: metav1.StatusReasonExpired}},
		}}
		store := newRecorder()
		r := reflector.New[*corev1.Pod](lw, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch))
		defer run(t, r)()
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		calls := store.calls()
		assert.NotContains(t, calls, "replace 0@7", "a list older than the cache must not be applied")
		assert.Contains(t, calls, "replace 0@20")
		assert.Equal(t, "12", lw.listOpts[1].ResourceVersion, "a relist asks for a state at least as new as the cache")
		assert.Equal(t, metav1.ResourceVersionMatchNotOlderThan, lw.listOpts[1].ResourceVersionMatch)
	})
}

// The same with streaming lists: a relist whose initial events end at a
// resourceVersion older than the cache's is not stored, and the Reflector
// streams again, from the cache's.
func TestStreamingRelistNeverGoesBackInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var froms []string
		ends := []string{"10", "7", "20"} // of each streaming list; the later ones are refused
		lw := &ownLW{watch: func(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
			mu.Lock()
			defer mu.Unlock()
			froms = append(froms, opts.ResourceVersion)
			if len(froms) > len(ends) {
				return nil, fakelw.Status(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "no more")
			}
			end := withRV(&corev1.Pod{}, ends[len(froms)-1])
			end.Annotations = map[string]string{reflector.InitialEventsEndAnnotation: "true"}
			events := []reflector.Event[*corev1.Pod]{{Type: reflector.Bookmark, Object: end}}
			if len(froms) == 1 {
				events = append(events,
					reflector.Event[*corev1.Pod]{Type: reflector.Added, Object: withRV(pod("a"), "12")},
					reflector.Event[*corev1.Pod]{Type: reflector.Error, Status: &metav1.Status{Code: http.StatusGone, Reason: metav1.StatusReasonExpired}})
			}
			return &chanWatcher{ctx: ctx, events: events, stop: make(chan struct{})}, nil
		}}
		var errs errorLog
		r, store := ownReflector(lw, &errs, reflector.WatchList)
		defer run(t, r)()
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, []string{"replace 0@10", "add a@12", "replace 0@20"}, store.calls(),
			"a streaming list older than the cache must not be applied")
		assert.Equal(t, "20", r.LastSyncResourceVersion())
		mu.Lock()
		assert.Equal(t, []string{"", "12", "12"}, froms, "each relist asks for a state at least as new as the cache")
		mu.Unlock()
		assert.Equal(t, 1, errorsContaining(errs.all(), "initial events end at 7, cache already at 12"), "%v", errs.all())
	})
}

// runPastABackup fills src with pods a and b, takes a backup of it there
// (resourceVersion 2), runs r (made on src, or on a ListerWatcher over it,
// with store) and moves src on to a@4, b@2, c@3, which the cache follows:
// restoring the backup then puts the server behind the cache.
func runPastABackup(t *testing.T, src *fakelw.Source[*corev1.Pod], store *recorder, r *reflector.Reflector[*corev1.Pod]) (backup fakelw.Snapshot[*corev1.Pod], stop func()) {
	t.Helper()
	src.Create(pod("a"))
	src.Create(pod("b"))
	backup = src.Snapshot()
	stop = run(t, r)
	synctest.Wait()
	src.Create(pod("c"))
	src.Update(pod("a"))
	synctest.Wait()
	require.Equal(t, []string{"a@4", "b@2", "c@3"}, store.keys())
	return backup, stop
}

// TestRestoredServerIsFollowedBack: a server whose storage is restored
// from a backup goes back to an older state and resourceVersion. The
// reflector's watch is refused ("too large resource version": the server
// has not reached it), and so is a list at least as new as the cache; the
// cache does not go back in time within two minutes, so it waits. Once the server's
// resourceVersion passes the cache's, the list it then takes is the
// server's state, changes made before that included; resuming the watch
// there instead would have skipped them.
func TestRestoredServerIsFollowedBack(t *testing.T) {
	for _, mode := range []reflector.Mode{reflector.ListWatch, reflector.WatchList} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src, store := newSource(), newRecorder()
				r := reflector.New(src, store, reflector.WithMode[*corev1.Pod](mode))
				backup, stop := runPastABackup(t, src, store, r)
				defer stop()

				src.Restore(backup) // back to resourceVersion 2; the watch ends
				src.Create(pod("d"))
				time.Sleep(time.Minute)
				synctest.Wait()
				assert.Equal(t, []string{"a@4", "b@2", "c@3"}, store.keys(), "never back in time")
				assert.Equal(t, "4", r.LastSyncResourceVersion())

				src.Create(pod("e"))
				src.Create(pod("f")) // the server passes the cache's resourceVersion
				time.Sleep(time.Minute)
				synctest.Wait()
				assert.Equal(t, []string{"a@1", "b@2", "d@3", "e@4", "f@5"}, sourceKeys(src))
				assert.Equal(t, sourceKeys(src), store.keys())
			})
		})
	}
}

// TestRestoredServerBehindAWatchCacheIsProbed: the server is out of reach
// (refused connections) while its storage is restored from a backup, and
// comes back behind the cache. Like kube-apiserver's watch cache, it
// accepts a watch from a resourceVersion it has not reached and sends only
// the events past it: resumed there, the watch would never deliver the
// restored state, nor what the server changes until it passes the cache's
// resourceVersion. The Reflector's probe after the outage (a list of one
// object) finds the server behind and takes its state at once, and says so.
func TestRestoredServerBehindAWatchCacheIsProbed(t *testing.T) {
	refused := fmt.Errorf("dial tcp 127.0.0.1:6443: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
	for _, mode := range []reflector.Mode{reflector.ListWatch, reflector.WatchList} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src, store := newSource(), newRecorder()
				src.AcceptFutureWatches()
				var errs []error
				var mu sync.Mutex
				r := reflector.New(src, store, reflector.WithMode[*corev1.Pod](mode),
					reflector.WithErrorHandler[*corev1.Pod](func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }))
				backup, stop := runPastABackup(t, src, store, r)
				defer stop()

				src.FailWatch(refused, refused) // the apiserver is down meanwhile
				src.Restore(backup)             // back to resourceVersion 2; the watch ends
				src.Create(pod("d"))            // 3: still behind the cache's 4
				time.Sleep(time.Minute)
				synctest.Wait()
				assert.Equal(t, []string{"a@1", "b@2", "d@3"}, store.keys(), "the server's state, taken at once")

				src.Create(pod("e"))
				src.Create(pod("f"))
				synctest.Wait()
				assert.Equal(t, sourceKeys(src), store.keys())
				mu.Lock()
				defer mu.Unlock()
				var back error
				for _, err := range errs {
					if errors.Is(err, reflector.ErrBackInTime) {
						back = err
					}
				}
				if assert.Error(t, back, "the step back in time is reported") {
					assert.Contains(t, back.Error(), "out of reach")
				}
			})
		})
	}
}

// TestRestoredServerThatWentAwayIsProbed: the server shuts down (its
// watches end with an HTTP/2 GOAWAY) and is back, restored from a backup,
// before the Reflector's next attempt: no refused connection tells it the
// server was away, the GOAWAY does. The probe finds it behind.
func TestRestoredServerThatWentAwayIsProbed(t *testing.T) {
	goaway := errors.New(`http2: server sent GOAWAY and closed the connection; LastStreamID=3, ErrCode=NO_ERROR, debug=""`)
	for _, mode := range []reflector.Mode{reflector.ListWatch, reflector.WatchList} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src, store := newSource(), newRecorder()
				src.AcceptFutureWatches()
				r := reflector.New(src, store, reflector.WithMode[*corev1.Pod](mode))
				backup, stop := runPastABackup(t, src, store, r)
				defer stop()

				src.BreakWatches(goaway)
				src.Restore(backup)
				src.Create(pod("d"))
				time.Sleep(time.Minute)
				synctest.Wait()
				assert.Equal(t, sourceKeys(src), store.keys())
			})
		})
	}
}

// TestRestartedServerCostsOneSmallList: a server out of reach for a while
// (refused connections, then 503s from a proxy in front of it) that comes
// back where it was costs one list of one object, whose object is dropped,
// and no relist: the watch resumes.
func TestRestartedServerCostsOneSmallList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		src, store := newSource(), newRecorder()
		src.Create(pod("a"))
		src.Create(pod("b"))
		r := reflector.New(src, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch))
		defer run(t, r)()
		synctest.Wait()
		src.FailWatch(refused, refused, fakelw.Status(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "no endpoints"))
		src.CloseWatches()
		src.Create(pod("c"))
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.EqualValues(t, 2, src.Lists.Load(), "the list, and one probe")
		replaces := 0
		for _, c := range store.calls() {
			if strings.HasPrefix(c, "replace") {
				replaces++
			}
		}
		assert.Equal(t, 1, replaces, "no relist: %v", store.calls())
		assert.Equal(t, sourceKeys(src), store.keys())
	})
}

// TestServerBehindForMinutesIsTaken: a server restored from a backup that
// stays behind the cache (no writes pass its resourceVersion), or that sent
// a resourceVersion it never had, is waited for; after two minutes the
// reflector takes its latest state, older as it is, and says so, so that the
// cache converges to what the server holds. Then it watches on from there.
func TestServerBehindForMinutesIsTaken(t *testing.T) {
	for _, mode := range []reflector.Mode{reflector.ListWatch, reflector.WatchList} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src, store := newSource(), newRecorder()
				var log errorLog
				r := reflector.New(src, store, reflector.WithMode[*corev1.Pod](mode),
					reflector.WithErrorHandler[*corev1.Pod](log.add))
				backup, stop := runPastABackup(t, src, store, r)
				defer stop()

				src.Restore(backup) // back to resourceVersion 2, and no further
				time.Sleep(time.Minute)
				synctest.Wait()
				assert.Equal(t, []string{"a@4", "b@2", "c@3"}, store.keys(), "a server behind for a minute is waited for")
				for _, err := range log.all() {
					assert.NotErrorIs(t, err, reflector.ErrBackInTime)
				}

				time.Sleep(2 * time.Minute)
				synctest.Wait()
				assert.Equal(t, []string{"a@1", "b@2"}, store.keys(), "after minutes, the server's state")
				assert.Equal(t, "2", r.LastSyncResourceVersion())
				var back []error
				for _, err := range log.all() {
					if errors.Is(err, reflector.ErrBackInTime) {
						back = append(back, err)
					}
				}
				require.Len(t, back, 1)
				assert.ErrorContains(t, back[0], "latest state is at resourceVersion 2, the cache was at 4")

				src.Create(pod("d")) // and the watch goes on from there
				synctest.Wait()
				assert.Equal(t, sourceKeys(src), store.keys())
				assert.Equal(t, []string{"a@1", "b@2", "d@3"}, store.keys())
			})
		})
	}
}

// TestListWithoutResourceVersionIsOlderThanTheCache: a relist answered with
// a list without a resourceVersion (a proxy's made-up {"items":[]}), where
// the cache has one, is refused as a list older than the cache is: the
// cache keeps its objects. If the server answers so for minutes, its answer
// is taken (ErrBackInTime), as a server behind the cache's is.
func TestListWithoutResourceVersionIsOlderThanTheCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		src.Create(pod("a"))
		src.Create(pod("b"))
		lw := &unversionedAfterFirstList{Source: src}
		var log errorLog
		r := reflector.New[*corev1.Pod](lw, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithErrorHandler[*corev1.Pod](log.add))
		defer run(t, r)()
		synctest.Wait()
		src.CloseWatches()
		src.Create(pod("c"))
		src.Compact() // the watch resumed is told 410: the Reflector lists
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, []string{"a@1", "b@2"}, store.keys(), "the cache kept")
		assert.Equal(t, "2", r.LastSyncResourceVersion())
		assert.Greater(t, lw.lists.Load(), int32(2), "listed again after the refusal")
		var refused bool
		for _, err := range log.all() {
			refused = refused || strings.Contains(err.Error(), "listed no resourceVersion, cache already at 2")
		}
		assert.True(t, refused, "the refusal reported: %v", log.all())

		time.Sleep(2 * time.Minute)
		synctest.Wait()
		assert.Empty(t, store.keys(), "after minutes, the server's answer")
		var back []error
		for _, err := range log.all() {
			if errors.Is(err, reflector.ErrBackInTime) {
				back = append(back, err)
			}
		}
		require.Len(t, back, 1)
		assert.ErrorContains(t, back[0], "latest state is at no resourceVersion, the cache was at 2")
	})
}

// unversionedAfterFirstList answers the first list from its Source, and
// every later one with an empty list without a resourceVersion.
type unversionedAfterFirstList struct {
	*fakelw.Source[*corev1.Pod]
	lists atomic.Int32
}

func (l *unversionedAfterFirstList) List(ctx context.Context, opts reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
	if l.lists.Add(1) == 1 {
		return l.Source.List(ctx, opts, add)
	}
	return reflector.ListMeta{}, nil
}

// TestRefusedListsDoNotLoop: lists refused with 410 or "too large" are
// retried after a wait of at least a second, then with a growing backoff.
func TestRefusedListsDoNotLoop(t *testing.T) {
	for name, err := range map[string]error{
		"gone":      fakelw.Status(http.StatusGone, metav1.StatusReasonExpired, "too old resource version"),
		"too large": fakelw.TooLarge(100, 1),
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src, store := newSource(), newRecorder()
				src.Create(pod("a"))
				src.FailList(err, err, err)
				r := reflector.New(src, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch))
				defer run(t, r)()
				synctest.Wait()
				assert.EqualValues(t, 1, src.Lists.Load(), "no list again at once")
				time.Sleep(time.Second)
				synctest.Wait()
				assert.EqualValues(t, 2, src.Lists.Load(), "a list again after a second")
				time.Sleep(time.Minute)
				synctest.Wait()
				assert.EqualValues(t, 4, src.Lists.Load())
				assert.Equal(t, []string{"a@1"}, store.keys())
			})
		})
	}
}

// TestPanickingTransformSkipsTheObject: a transform that panics on one
// object costs that object (reported), in a list and in a watch, not the
// reflector; over HTTP the decoder must not take it for bad server data.
func TestPanickingTransformSkipsTheObject(t *testing.T) {
	for _, mode := range []reflector.Mode{reflector.ListWatch, reflector.WatchList} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src, store := newSource(), newRecorder()
				src.Create(pod("a"))
				src.Create(pod("bad"))
				var log errorLog
				r := reflector.New[*corev1.Pod](src, store, reflector.WithMode[*corev1.Pod](mode),
					reflector.WithErrorHandler[*corev1.Pod](log.add),
					reflector.WithTransform(func(p *corev1.Pod) (*corev1.Pod, error) {
						if strings.HasPrefix(p.Name, "bad") {
							panic("transform bug")
						}
						return p, nil
					}))
				defer run(t, r)()
				synctest.Wait()
				src.Create(pod("bad2"))
				src.Create(pod("c"))
				synctest.Wait()
				assert.Equal(t, []string{"a@1", "c@4"}, store.keys())
				errs := log.all()
				require.Len(t, errs, 2)
				for _, err := range errs {
					assert.ErrorIs(t, err, reflector.ErrSkipped)
					assert.ErrorContains(t, err, "transform bug")
				}
			})
		})
	}
}

// A DELETED event the transform fails on is not skipped as other events
// are: the deleted object would stay cached for good (until a relist that
// may never come), as it cannot change again. A delete needs only the key:
// it is applied untransformed, with the key and resourceVersion it came
// with, whatever the transform did to them.
func TestDeleteTheTransformFailsOnIsNotLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		src.Create(pod("a"))
		src.Create(pod("b"))
		var log errorLog
		var deleting atomic.Bool
		r := reflector.New[*corev1.Pod](src, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithErrorHandler[*corev1.Pod](log.add),
			reflector.WithTransform(func(p *corev1.Pod) (*corev1.Pod, error) {
				if deleting.Load() && p.Name == "a" {
					p.Name, p.ResourceVersion = "renamed", "" // in place, then fails
					return nil, errors.New("transform bug")
				}
				return p, nil
			}))
		defer run(t, r)()
		synctest.Wait()
		listed := src.Lists.Load()
		deleting.Store(true)
		src.Delete("ns/a")
		synctest.Wait()
		assert.Equal(t, []string{"b@2"}, store.keys())
		assert.Contains(t, store.calls(), "delete a@3")
		assert.Equal(t, listed, src.Lists.Load(), "no relist")
		errs := log.all()
		require.Len(t, errs, 1)
		assert.ErrorContains(t, errs[0], "transform bug (deleted untransformed)")
	})
}

// A DELETED of an object the transform always fails on (so never cached)
// costs no relist, and holds up no other object's events: a relist for
// each such delete held the watch up behind the backoff. Found by a
// review of the change that relisted.
func TestDeleteOfAnObjectNeverCachedCostsNoRelist(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		good := src.Create(pod("good"))
		r := reflector.New[*corev1.Pod](src, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithErrorHandler[*corev1.Pod](func(error) {}),
			reflector.WithTransform(func(p *corev1.Pod) (*corev1.Pod, error) {
				if strings.HasPrefix(p.Name, "skip-") {
					return nil, errors.New("not for this cache")
				}
				return p, nil
			}))
		defer run(t, r)()
		synctest.Wait()
		listed := src.Lists.Load()
		for i := range 20 {
			src.Create(pod(fmt.Sprint("skip-", i)))
			src.Delete(fmt.Sprint("ns/skip-", i))
			g := good.DeepCopy()
			g.Labels = map[string]string{"n": fmt.Sprint(i)}
			good = src.Update(g)
			synctest.Wait()
			assert.Equal(t, []string{"good@" + good.ResourceVersion}, store.keys(), "round %d", i)
		}
		assert.Equal(t, listed, src.Lists.Load(), "LISTs after the first")
	})
}

// A transform must keep the object's namespace, name and resourceVersion:
// one that returns nil, or a copy without the resourceVersion (which the
// Reflector resumed from: it then watched from "" and never got another
// event), or another key, or clears the resourceVersion in place, skips
// that object with a report; the others, and the watch, go on.
func TestTransformMustKeepTheIdentity(t *testing.T) {
	for _, mode := range []reflector.Mode{reflector.ListWatch, reflector.WatchList} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src, store := newSource(), newRecorder()
				src.Create(pod("a"))
				src.Create(pod("nil"))
				var log errorLog
				r := reflector.New[*corev1.Pod](src, store, reflector.WithMode[*corev1.Pod](mode),
					reflector.WithErrorHandler[*corev1.Pod](log.add),
					reflector.WithTransform(func(p *corev1.Pod) (*corev1.Pod, error) {
						switch p.Name {
						case "nil":
							return nil, nil
						case "slim":
							return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}, nil
						case "renamed":
							p.Name = "other"
						case "cleared":
							p.ResourceVersion = ""
						}
						return p, nil
					}))
				defer run(t, r)()
				synctest.Wait()
				for _, name := range []string{"slim", "renamed", "cleared", "c"} {
					src.Create(pod(name))
				}
				synctest.Wait()
				assert.Equal(t, []string{"a@1", "c@6"}, store.keys())
				assert.Equal(t, "6", r.LastSyncResourceVersion())
				errs := log.all()
				require.Len(t, errs, 4)
				for i, want := range []string{"returned no object", `resourceVersion to ""`, "key to ns/other", `resourceVersion to ""`} {
					assert.ErrorIs(t, errs[i], reflector.ErrSkipped)
					assert.ErrorContains(t, errs[i], want)
				}
			})
		})
	}
}

// failsOnBad is a transform that fails on the pod named bad.
func failsOnBad(p *corev1.Pod) (*corev1.Pod, error) {
	if p.Name == "bad" {
		return nil, errors.New("cannot transform")
	}
	return p, nil
}

// A watch event skipped because its transform failed moves the
// resourceVersion on, as one the Store refuses does (and as in client-go):
// a watch reopened later starts after it, not with it again.
func TestSkippedEventAdvancesTheResourceVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		src.Create(pod("a"))
		var log errorLog
		r := reflector.New[*corev1.Pod](src, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithErrorHandler[*corev1.Pod](log.add),
			reflector.WithTransform(failsOnBad))
		defer run(t, r)()
		synctest.Wait()
		src.Create(pod("bad"))
		synctest.Wait()
		assert.Equal(t, "2", r.LastSyncResourceVersion())
		require.Len(t, log.all(), 1)
		assert.ErrorIs(t, log.all()[0], reflector.ErrSkipped)
	})
}

// A watch event skipped because its transform failed moves the
// resourceVersion on only if it is newer: one older than the event before
// it does not take the Reflector back, and the next watch resumes after
// that event.
func TestSkippedOlderEventDoesNotMoveTheResourceVersionBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw, froms := watchThenResume(
			reflector.Event[*corev1.Pod]{Type: reflector.Added, Object: withRV(pod("c"), "42")},
			reflector.Event[*corev1.Pod]{Type: reflector.Added, Object: withRV(pod("bad"), "7")},
		)
		var log errorLog
		store := newRecorder()
		r := reflector.New[*corev1.Pod](lw, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithErrorHandler[*corev1.Pod](log.add),
			reflector.WithTransform(failsOnBad))
		defer run(t, r)()
		synctest.Wait()
		assert.Equal(t, "42", r.LastSyncResourceVersion())
		assert.Equal(t, []string{"1", "42"}, froms(), "the watch after the skipped event resumes after the one before it")
		assert.Equal(t, []string{"a@1", "c@42"}, store.keys())
		require.Len(t, log.all(), 1)
		assert.ErrorIs(t, log.all()[0], reflector.ErrSkipped)
	})
}

// A list at least as new as the Store that the server refuses with 410 (a
// server that reads resourceVersion and limit as an exact read: kube-apiserver
// does not) is followed by a list of the server's latest state, as in
// client-go: it used to ask for the same version again for ever.
func TestListRefusedAsExpiredAsksForTheLatest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		src.Create(pod("a"))
		lw := &exactLister{Source: src}
		r := reflector.New[*corev1.Pod](lw, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch))
		defer run(t, r)()
		synctest.Wait()
		lw.down.Store(true) // the watch ends and cannot resume: the changes are not seen
		src.CloseWatches()
		synctest.Wait()
		src.Delete("ns/a")
		src.Create(pod("b"))
		lw.compactedAt.Store(3)
		src.Compact()
		lw.down.Store(false) // the watch from 1 gets 410: list
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, sourceKeys(src), store.keys())
		assert.Equal(t, []string{"", "1", ""}, lw.listRVs(), "the first list, the Store's version, then the latest")
		assert.Equal(t, []int64{500, 0, 500}, lw.listLimits(),
			"a relist at the Store's version in one answer (which the watch cache serves), the others paged")
	})
}

// Given WithPageSize, relists page too, as client-go's do with
// WatchListPageSize: for a resource whose watch cache is off, which serves
// relists from etcd.
func TestRelistsPageWithAnExplicitPageSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		src.Create(pod("a"))
		lw := &exactLister{Source: src}
		r := reflector.New[*corev1.Pod](lw, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithPageSize[*corev1.Pod](100))
		defer run(t, r)()
		synctest.Wait()
		src.FailWatch(fakelw.Status(http.StatusGone, metav1.StatusReasonExpired, "too old resource version"))
		src.CloseWatches()
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, []string{"", "1"}, lw.listRVs())
		assert.Equal(t, []int64{100, 100}, lw.listLimits())
	})
}

// A relist in one answer that runs out of the list timeout (a large
// resource, a slow client) would run out of it every time: the Reflector
// pages its relists from then on, as its first list was paged. It used to
// ask for the same answer after each backoff, for ever, and the cache never
// caught up.
func TestRelistInOneAnswerThatTimesOutIsPaged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		src.Create(pod("a"))
		lw := &exactLister{Source: src}
		lw.unpagedTimesOut.Store(true)
		r := reflector.New[*corev1.Pod](lw, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch))
		defer run(t, r)()
		synctest.Wait()
		src.Create(pod("b"))
		src.FailWatch(fakelw.Status(http.StatusGone, metav1.StatusReasonExpired, "too old resource version"))
		src.CloseWatches()
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, sourceKeys(src), store.keys())
		assert.Equal(t, []string{"", "2", "2"}, lw.listRVs(), "the Store had seen b")
		assert.Equal(t, []int64{500, 0, 500}, lw.listLimits(), "one answer timed out once, then pages")
	})
}

// exactLister is a Source whose lists from a resourceVersion older than
// compactedAt fail with 410, as an exact read would.
type exactLister struct {
	*fakelw.Source[*corev1.Pod]
	compactedAt atomic.Uint64
	down        atomic.Bool // watches fail with 503
	// unpagedTimesOut: a list in one answer fails as one that ran out of
	// the list timeout does
	unpagedTimesOut atomic.Bool
	mu              sync.Mutex
	rvs             []string // of each list
	limits          []int64  // of each list
	spin            fakelw.SpinGuard
}

func (l *exactLister) listRVs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.rvs)
}

func (l *exactLister) listLimits() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.limits)
}

func (l *exactLister) List(ctx context.Context, opts reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
	if opts.Continue == "" {
		l.mu.Lock()
		l.rvs = append(l.rvs, opts.ResourceVersion)
		l.limits = append(l.limits, opts.Limit)
		l.mu.Unlock()
	}
	if n, _ := strconv.ParseUint(opts.ResourceVersion, 10, 64); n > 0 && n < l.compactedAt.Load() {
		return reflector.ListMeta{}, fakelw.Status(http.StatusGone, metav1.StatusReasonExpired, "too old resource version")
	}
	if opts.Limit == 0 && l.unpagedTimesOut.Load() {
		return reflector.ListMeta{}, fmt.Errorf("list did not complete within 1m0s (%w)", context.DeadlineExceeded)
	}
	return l.Source.List(ctx, opts, add)
}

func (l *exactLister) Watch(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	l.spin.Asked(ctx)
	if l.down.Load() {
		return nil, fakelw.Status(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "restarting")
	}
	return l.Source.Watch(ctx, opts)
}

// refusing is a recorder whose Add and Replace fail while refuse says so.
type refusing struct {
	*recorder
	refuse func(op string, p *corev1.Pod) bool
}

var errRefused = errors.New("refused by the store")

func (s refusing) Add(p *corev1.Pod) error {
	if s.refuse("add", p) {
		return errRefused
	}
	return s.recorder.Add(p)
}

func (s refusing) Replace(list []*corev1.Pod, rv string) error {
	if s.refuse("replace", nil) {
		return errRefused
	}
	return s.recorder.Replace(list, rv)
}

// errorLog collects what a Reflector reports.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorLog) add(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err)
}

func (l *errorLog) all() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs...)
}

// refusingB returns a Source holding pod a and a Reflector over it, in
// ListWatch mode, into a Store (rec) that refuses to add pod b; errors go
// to log.
func refusingB(log *errorLog) (*fakelw.Source[*corev1.Pod], *recorder, *reflector.Reflector[*corev1.Pod]) {
	src, rec := newSource(), newRecorder()
	src.Create(pod("a"))
	store := refusing{rec, func(op string, p *corev1.Pod) bool { return op == "add" && p.Name == "b" }}
	r := reflector.New[*corev1.Pod](src, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
		reflector.WithErrorHandler[*corev1.Pod](log.add))
	return src, rec, r
}

// TestStoreRefusingAnEventSkipsIt: an event the Store refuses is reported
// and skipped, and the watch goes on; ending it would bring the same event
// back from the same resourceVersion again and again.
func TestStoreRefusingAnEventSkipsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log errorLog
		src, rec, r := refusingB(&log)
		defer run(t, r)()
		synctest.Wait()
		src.Create(pod("b"))
		src.Create(pod("c"))
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, []string{"a@1", "c@3"}, rec.keys())
		assert.EqualValues(t, 1, src.Watches.Load(), "the watch must go on")
		assert.Equal(t, "3", r.LastSyncResourceVersion())
		errs := log.all()
		require.Len(t, errs, 1)
		assert.ErrorIs(t, errs[0], reflector.ErrSkipped)
		assert.ErrorIs(t, errs[0], errRefused)
		assert.Contains(t, errs[0].Error(), "ns/b")
	})
}

// TestStoreRefusingTheLastEventMovesPastIt: an event the Store refuses
// moves the resourceVersion on even when no event comes after it, so that
// the watch resumed after the stream ends starts past it, not with it
// again.
func TestStoreRefusingTheLastEventMovesPastIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log errorLog
		src, rec, r := refusingB(&log)
		defer run(t, r)()
		synctest.Wait()
		src.Create(pod("b"))
		synctest.Wait()
		assert.Equal(t, "2", r.LastSyncResourceVersion())

		src.CloseWatches()
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.EqualValues(t, 2, src.Watches.Load(), "resumed once")
		assert.EqualValues(t, 1, src.Lists.Load())
		assert.Equal(t, []string{"a@1"}, rec.keys())
		errs := log.all()
		require.Len(t, errs, 1, "the resumed watch did not send b again: %v", errs)
		assert.ErrorIs(t, errs[0], errRefused)
	})
}

// TestStoreRefusingAListKeepsItsResourceVersion: until the Store took a
// list, LastSyncResourceVersion does not claim it.
func TestStoreRefusingAListKeepsItsResourceVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, rec := newSource(), newRecorder()
		src.Create(pod("a"))
		refused := 0
		store := refusing{rec, func(op string, _ *corev1.Pod) bool {
			if op == "replace" && refused < 1 {
				refused++
				return true
			}
			return false
		}}
		r := reflector.New[*corev1.Pod](src, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch))
		defer run(t, r)()
		synctest.Wait() // the first list refused; backing off
		assert.Equal(t, "", r.LastSyncResourceVersion())
		assert.ErrorIs(t, r.LastError(), errRefused)
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, "1", r.LastSyncResourceVersion())
		assert.Equal(t, []string{"a@1"}, rec.keys())
	})
}

// TestBookmarkWithoutObjectIsSkipped: a ListerWatcher of one's own may send
// a BOOKMARK with no object; it is reported, not a panic.
func TestBookmarkWithoutObjectIsSkipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &scripted{events: []reflector.Event[*corev1.Pod]{
			{Type: reflector.Bookmark},
			{Type: reflector.Added, Object: withRV(pod("a"), "12")},
		}}
		store := newRecorder()
		var log errorLog
		r := reflector.New[*corev1.Pod](lw, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithErrorHandler[*corev1.Pod](log.add))
		defer run(t, r)()
		synctest.Wait()
		assert.Equal(t, []string{"replace 0@10", "add a@12"}, store.calls())
		require.Len(t, log.all(), 1)
		assert.ErrorIs(t, log.all()[0], reflector.ErrSkipped)
	})
}

func TestRetryAfterIsHonoured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		src.FailList(&throttled{after: 7 * time.Second})
		r := reflector.New(src, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch))
		start := time.Now()
		defer run(t, r)()
		synctest.Wait()
		assert.Empty(t, store.calls())
		time.Sleep(7*time.Second - time.Millisecond)
		synctest.Wait()
		assert.Empty(t, store.calls(), "listed again before Retry-After")
		time.Sleep(3500 * time.Millisecond) // up to half as long again
		synctest.Wait()
		assert.Len(t, store.calls(), 1)
		assert.GreaterOrEqual(t, time.Since(start), 7*time.Second)
	})
}

// Reflectors that a busy server turned away together with the same
// Retry-After do not all come back at the same instant: each waits up to
// half as long again, at random.
func TestRetryAfterIsSpread(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		var back []time.Duration
		for range 10 {
			src := newSource()
			src.FailList(&throttled{after: 10 * time.Second})
			store := &callbackStore{replace: func() { mu.Lock(); back = append(back, time.Since(start)); mu.Unlock() }}
			r := reflector.New[*corev1.Pod](src, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch))
			defer run(t, r)()
		}
		time.Sleep(16 * time.Second)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		assertSpread(t, back, 10*time.Second, 15*time.Second)
	})
}

// assertSpread checks that ten reflectors acted between from and to after
// they started, not all at the same instant.
func assertSpread(t *testing.T, at []time.Duration, from, to time.Duration) {
	t.Helper()
	require.Len(t, at, 10)
	distinct := map[time.Duration]bool{}
	for _, d := range at {
		assert.GreaterOrEqual(t, d, from)
		assert.LessOrEqual(t, d, to)
		distinct[d] = true
	}
	assert.Greater(t, len(distinct), 1, "all at %v", at)
}

// callbackStore is a Store that calls replace on every Replace.
type callbackStore struct{ replace func() }

func (s *callbackStore) Add(*corev1.Pod) error    { return nil }
func (s *callbackStore) Update(*corev1.Pod) error { return nil }
func (s *callbackStore) Delete(*corev1.Pod) error { return nil }
func (s *callbackStore) Replace([]*corev1.Pod, string) error {
	s.replace()
	return nil
}

type throttled struct{ after time.Duration }

func (e *throttled) Error() string { return "429 TooManyRequests" }
func (e *throttled) Status() metav1.Status {
	return metav1.Status{Code: http.StatusTooManyRequests, Reason: metav1.StatusReasonTooManyRequests,
		Details: &metav1.StatusDetails{RetryAfterSeconds: int32(e.after / time.Second)}}
}

func TestEmptyWatchesBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &scripted{emptyWatches: true}
		r := reflector.New[*corev1.Pod](lw, newRecorder(), reflector.WithMode[*corev1.Pod](reflector.ListWatch))
		defer run(t, r)()
		time.Sleep(time.Minute)
		synctest.Wait()
		// Backoff doubles from 0.8s to 30s: about 8 attempts in a minute,
		// never thousands.
		assert.Less(t, lw.watches, 15)
		assert.Greater(t, lw.watches, 2)
	})
}

func TestStreamingFallsBackToList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		src.Create(pod("a"))
		src.RefuseStreaming()
		var errs []error
		r := reflector.New(src, store, reflector.WithErrorHandler[*corev1.Pod](func(err error) { errs = append(errs, err) }))
		defer run(t, r)()
		synctest.Wait()
		assert.Equal(t, []string{"replace 1@1"}, store.calls())
		assert.EqualValues(t, 1, src.Lists.Load())
		assert.Empty(t, errs, "a refusal the Reflector falls back from is logged, not reported (as in client-go)")
	})
}

// In WatchList mode, a refused streaming list is an error to report, and
// it keeps the server's answer and names the resource.
func TestStreamingRefusedInWatchListModeIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		src.Create(pod("a"))
		src.RefuseStreaming()
		var errs []error
		r := reflector.New(src, store, reflector.WithMode[*corev1.Pod](reflector.WatchList),
			reflector.WithErrorHandler[*corev1.Pod](func(err error) { errs = append(errs, err) }))
		defer run(t, r)()
		synctest.Wait()
		assert.Empty(t, store.calls())
		assert.Zero(t, src.Lists.Load())
		require.NotEmpty(t, errs)
		assert.ErrorContains(t, errs[0], "listing pods (streaming): the server refused the streaming list: 400")
		assert.True(t, apierrors.IsBadRequest(errs[0]), "the server's answer is still there to tell: %v", errs[0])
	})
}

func TestStreamingWithoutEndBookmarkFallsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A server that ignores sendInitialEvents: initial ADDED events
		// and then an ordinary bookmark, never the end marker.
		lw := &scripted{events: []reflector.Event[*corev1.Pod]{
			{Type: reflector.Added, Object: withRV(pod("a"), "3")},
			{Type: reflector.Bookmark, Object: withRV(&corev1.Pod{}, "9")},
		}}
		store := newRecorder()
		r := reflector.New[*corev1.Pod](lw, store)
		defer run(t, r)()
		synctest.Wait()
		calls := store.calls()
		require.NotEmpty(t, calls)
		assert.Equal(t, "replace 0@10", calls[0], "the partial initial state must never be applied")
		assert.Equal(t, 1, lw.lists)
	})
}

// An initial-events-end bookmark without a resourceVersion gives no point
// to watch on from: resuming from "" would start at the server's newest
// state and miss what changed since the bookmark. The streaming list is
// not usable: LIST instead.
func TestStreamingEndBookmarkWithoutResourceVersionFallsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		end := &corev1.Pod{}
		end.Annotations = map[string]string{reflector.InitialEventsEndAnnotation: "true"}
		lw := &scripted{events: []reflector.Event[*corev1.Pod]{
			{Type: reflector.Added, Object: withRV(pod("a"), "3")},
			{Type: reflector.Bookmark, Object: end},
		}}
		store := newRecorder()
		var errs errorLog
		r := reflector.New[*corev1.Pod](lw, store, reflector.WithErrorHandler[*corev1.Pod](errs.add))
		defer run(t, r)()
		synctest.Wait()
		assert.Equal(t, []string{"replace 0@10"}, store.calls(), "the list's state, at its resourceVersion")
		assert.Equal(t, "10", r.LastSyncResourceVersion())
		assert.Equal(t, 1, lw.lists)
		assert.Equal(t, 1, errorsContaining(errs.all(), "the initial-events-end bookmark has no resourceVersion"))
	})
}

// A streaming list whose initial events take a while, and whose stream
// then ends (its timeoutSeconds ran out) with nothing after the end
// bookmark, was open as long as any watch: it did not "end at once", which
// would be reported and backed off from. The next watch comes at once.
func TestStreamingListEndingAfterItsBookmarkIsNoEmptyWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		end := withRV(&corev1.Pod{}, "10")
		end.Annotations = map[string]string{reflector.InitialEventsEndAnnotation: "true"}
		lw := &slowStreamingList{script: []func() (reflector.Event[*corev1.Pod], error){
			func() (reflector.Event[*corev1.Pod], error) {
				time.Sleep(2 * time.Second) // a large list, being read
				return reflector.Event[*corev1.Pod]{Type: reflector.Added, Object: withRV(pod("a"), "3")}, nil
			},
			func() (reflector.Event[*corev1.Pod], error) {
				return reflector.Event[*corev1.Pod]{Type: reflector.Bookmark, Object: end}, nil
			},
			func() (reflector.Event[*corev1.Pod], error) { return reflector.Event[*corev1.Pod]{}, errEOF },
		}}
		var errs errorLog
		r := reflector.New[*corev1.Pod](lw, newRecorder(), reflector.WithMode[*corev1.Pod](reflector.WatchList),
			reflector.WithErrorHandler[*corev1.Pod](errs.add))
		start := time.Now()
		defer run(t, r)()
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Empty(t, errs.all())
		require.Len(t, lw.watches, 2)
		assert.Equal(t, 2*time.Second, lw.watches[1].Sub(start), "the watch after the stream's end is asked for at once")
		assert.Equal(t, "10", lw.opts[1].ResourceVersion)
		assert.False(t, lw.opts[1].SendInitialEvents)
	})
}

// A streaming list that names a resourceVersion the server calls invalid
// (a broken server's, the Store's since its last list) and is answered
// 400 is not a server that serves no streaming lists: in WatchList mode,
// which never falls back, it would be asked again from there for ever.
// The Reflector asks for the server's latest state instead.
func TestStreamingListFromAnInvalidResourceVersionTakesTheLatest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &invalidRVServer{}
		var errs errorLog
		r := reflector.New[*corev1.Pod](lw, newRecorder(), reflector.WithMode[*corev1.Pod](reflector.WatchList),
			reflector.WithRelistInterval[*corev1.Pod](10*time.Second), reflector.WithErrorHandler[*corev1.Pod](errs.add))
		defer run(t, r)()
		time.Sleep(15 * time.Second) // one relist: from "abc", refused
		synctest.Wait()
		assert.Equal(t, []string{"", "abc", ""}, lw.froms())
		assert.Equal(t, "12", r.LastSyncResourceVersion())
		assert.Equal(t, 1, errorsContaining(errs.all(), `listing pods (streaming): 400 BadRequest: invalid resource version`), "%v", errs.all())
	})
}

// invalidRVServer serves streaming lists that end at "abc" the first time
// and at "12" after, and stay open; it refuses one from "abc" as
// kube-apiserver refuses a LIST from it.
type invalidRVServer struct {
	mu    sync.Mutex
	opts  []reflector.WatchOptions
	lists int
}

func (l *invalidRVServer) List(context.Context, reflector.ListOptions, func(*corev1.Pod) error) (reflector.ListMeta, error) {
	return reflector.ListMeta{}, errors.New("not listed in WatchList mode")
}

func (l *invalidRVServer) Watch(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.opts = append(l.opts, opts)
	if opts.ResourceVersion == "abc" {
		return nil, fakelw.Status(http.StatusBadRequest, metav1.StatusReasonBadRequest,
			`invalid resource version: resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`)
	}
	end := withRV(&corev1.Pod{}, "abc")
	if l.lists++; l.lists > 1 {
		end.ResourceVersion = "12"
	}
	end.Annotations = map[string]string{reflector.InitialEventsEndAnnotation: "true"}
	return &chanWatcher{ctx: ctx, events: []reflector.Event[*corev1.Pod]{{Type: reflector.Bookmark, Object: end}}, stop: make(chan struct{})}, nil
}

func (l *invalidRVServer) froms() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, o := range l.opts {
		out = append(out, o.ResourceVersion)
	}
	return out
}

// slowStreamingList serves one streaming list that runs script, event by
// event; later watches stay open without events.
type slowStreamingList struct {
	mu      sync.Mutex
	script  []func() (reflector.Event[*corev1.Pod], error)
	watches []time.Time
	opts    []reflector.WatchOptions
}

func (l *slowStreamingList) List(context.Context, reflector.ListOptions, func(*corev1.Pod) error) (reflector.ListMeta, error) {
	return reflector.ListMeta{}, errors.New("not listed in WatchList mode")
}

func (l *slowStreamingList) Watch(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.watches, l.opts = append(l.watches, time.Now()), append(l.opts, opts)
	if len(l.watches) == 1 {
		return &scriptedWatcher{script: l.script}, nil
	}
	return &chanWatcher{ctx: ctx, stop: make(chan struct{})}, nil
}

type scriptedWatcher struct {
	script []func() (reflector.Event[*corev1.Pod], error)
}

func (w *scriptedWatcher) Next() (reflector.Event[*corev1.Pod], error) {
	if len(w.script) == 0 {
		return reflector.Event[*corev1.Pod]{}, errEOF
	}
	next := w.script[0]
	w.script = w.script[1:]
	return next()
}

func (w *scriptedWatcher) Close() error { return nil }

// scripted is a ListerWatcher whose lists return no items at the RVs in
// listRVs (default "10"), and whose first watch delivers events, then stays
// open; later watches stay open without events. With emptyWatches, every
// watch ends at once.
type scripted struct {
	mu           sync.Mutex
	listRVs      []string
	events       []reflector.Event[*corev1.Pod]
	emptyWatches bool
	lists        int
	watches      int
	listOpts     []reflector.ListOptions
	spin         fakelw.SpinGuard
}

func (s *scripted) List(ctx context.Context, opts reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
	s.spin.Asked(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists++
	s.listOpts = append(s.listOpts, opts)
	rv := "10"
	if len(s.listRVs) > 0 {
		rv, s.listRVs = s.listRVs[0], s.listRVs[1:]
	}
	return reflector.ListMeta{ResourceVersion: rv}, nil
}

func (s *scripted) Watch(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	s.spin.Asked(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watches++
	w := &chanWatcher{ctx: ctx, events: s.events, stop: make(chan struct{})}
	if s.emptyWatches {
		w.eof = true
	}
	s.events = nil
	return w, nil
}

type chanWatcher struct {
	ctx    context.Context
	events []reflector.Event[*corev1.Pod]
	eof    bool
	stop   chan struct{}
	once   sync.Once
}

func (w *chanWatcher) Next() (reflector.Event[*corev1.Pod], error) {
	if len(w.events) > 0 {
		ev := w.events[0]
		w.events = w.events[1:]
		return ev, nil
	}
	if w.eof {
		return reflector.Event[*corev1.Pod]{}, errEOF
	}
	select {
	case <-w.ctx.Done():
		return reflector.Event[*corev1.Pod]{}, w.ctx.Err()
	case <-w.stop:
		return reflector.Event[*corev1.Pod]{}, errors.New("closed")
	}
}

func (w *chanWatcher) Close() error {
	w.once.Do(func() { close(w.stop) })
	return nil
}

var errEOF = fmt.Errorf("stream ended: %w", io.EOF)

func withRV(p *corev1.Pod, rv string) *corev1.Pod {
	p.ResourceVersion = rv
	return p
}

func TestLastErrorClearsOnceAWatchIsAccepted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		src.Create(pod("a"))
		src.FailWatch(fakelw.Status(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "busy"))
		var reported []error
		r := reflector.New(src, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithErrorHandler[*corev1.Pod](func(err error) { reported = append(reported, err) }))
		defer run(t, r)()
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Len(t, reported, 1, "the 503 was reported")
		assert.NoError(t, r.LastError(), "the watch resumed without a relist: the error is over")
	})
}

// A list stored clears LastError, also one that skipped an item (which was
// reported): the cache holds the server's state. Here the watch after it
// is not answered, so no accepted watch clears it instead.
func TestStoredListClearsLastError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &ownLW{
			list: func(_ context.Context, _ reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
				nameless := withRV(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}}, "1")
				if err := add(nameless); err != nil {
					return reflector.ListMeta{}, err
				}
				return reflector.ListMeta{ResourceVersion: "1"}, add(withRV(pod("a"), "1"))
			},
			watch: func(ctx context.Context, _ reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
				<-ctx.Done() // no answer until Run ends
				return nil, ctx.Err()
			},
		}
		var errs errorLog
		r, store := ownReflector(lw, &errs, reflector.ListWatch)
		defer run(t, r)()
		synctest.Wait()
		assert.Equal(t, []string{"a@1"}, store.keys())
		require.Len(t, errs.all(), 1)
		assert.ErrorIs(t, errs.all()[0], reflector.ErrRejected)
		assert.NoError(t, r.LastError(), "the list was stored")
	})
}

func TestLastErrorClearsOnceAStreamingListIsAccepted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The first streaming list is refused; the second is accepted and
		// its initial events are slow to come. The refusal is over.
		lw := &refusesOnce{}
		r := reflector.New[*corev1.Pod](lw, newRecorder())
		defer run(t, r)()
		time.Sleep(time.Minute)
		synctest.Wait()
		lw.mu.Lock()
		require.Equal(t, 2, lw.watches, "refused, then accepted")
		lw.mu.Unlock()
		assert.NoError(t, r.LastError(), "the server accepted the streaming list: the error is over")
	})
}

// refusesOnce refuses its first watch with a 503 and accepts the next ones,
// which send nothing.
type refusesOnce struct {
	mu      sync.Mutex
	watches int
	spin    fakelw.SpinGuard
}

func (l *refusesOnce) List(ctx context.Context, _ reflector.ListOptions, _ func(*corev1.Pod) error) (reflector.ListMeta, error) {
	l.spin.Asked(ctx)
	return reflector.ListMeta{}, errors.New("unexpected LIST")
}

func (l *refusesOnce) Watch(ctx context.Context, _ reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	l.spin.Asked(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.watches++; l.watches == 1 {
		return nil, fakelw.Status(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "busy")
	}
	return &chanWatcher{ctx: ctx, stop: make(chan struct{})}, nil
}

func TestStreamingThatStallsBeforeItsEndFallsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Initial events, then silence until the watchdog gives up: no
		// end marker, and no periodic bookmark to give the server away.
		lw := &stallsStreaming{scripted: &scripted{}}
		store := newRecorder()
		r := reflector.New[*corev1.Pod](lw, store)
		defer run(t, r)()
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		calls := store.calls()
		require.NotEmpty(t, calls, "never synced")
		assert.Equal(t, "replace 0@10", calls[0], "the partial initial state must never be applied")
		assert.Equal(t, 1, lw.lists)
		assert.Equal(t, 1, lw.streams, "fell back after one stalled streaming list")
	})
}

// A watch the watchdog closes after its idle timeout (a quiet resource
// whose bookmarks come less often than the timeout, or a dead connection)
// is reported and reopened at once, however many come in a row: a backoff
// climbing at every quiet stretch held the next events back for up to
// 30 s. A stall sooner than minWatchDuration (a watchdog of under a
// second) still backs off, as an empty watch does.
func TestStalledWatchesReopenAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		idle time.Duration
	}{
		{"idle timeout of 20s", 20 * time.Second},
		{"idle timeout of 500ms", 500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lw := &quietStalls{idle: tc.idle}
				var errs errorLog
				r := reflector.New[*corev1.Pod](lw, newRecorder(), reflector.WithMode[*corev1.Pod](reflector.ListWatch),
					reflector.WithErrorHandler[*corev1.Pod](errs.add))
				defer run(t, r)()
				time.Sleep(10*time.Minute - time.Millisecond)
				synctest.Wait()
				watches := lw.asked()
				require.Greater(t, len(watches), 2)
				stalls := errorsContaining(errs.all(), "watching pods: watch stream stalled")
				if tc.idle >= time.Second {
					require.Len(t, watches, 30)
					for i := 1; i < len(watches); i++ {
						assert.Equal(t, tc.idle, watches[i].Sub(watches[i-1]), "watch %d is asked for as the one before it stalls", i)
					}
					assert.Equal(t, len(watches)-1, stalls, "every stall is reported")
				} else {
					last := watches[len(watches)-1].Sub(watches[len(watches)-2])
					assert.Greater(t, last, 15*time.Second, "backed off, towards the 30 s cap")
					assert.GreaterOrEqual(t, stalls, len(watches)-1, "every stall is reported")
				}
				assert.Equal(t, 1, lw.lists, "no relist")
			})
		})
	}
}

// quietStalls lists nothing at "10"; its watches send nothing and stall,
// as the HTTP watcher's watchdog ends them, after idle.
type quietStalls struct {
	idle    time.Duration
	mu      sync.Mutex
	lists   int
	watches []time.Time
}

func (l *quietStalls) List(context.Context, reflector.ListOptions, func(*corev1.Pod) error) (reflector.ListMeta, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lists++
	return reflector.ListMeta{ResourceVersion: "10"}, nil
}

func (l *quietStalls) Watch(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.watches = append(l.watches, time.Now())
	return &scriptedWatcher{script: []func() (reflector.Event[*corev1.Pod], error){
		func() (reflector.Event[*corev1.Pod], error) {
			time.Sleep(l.idle)
			return reflector.Event[*corev1.Pod]{}, fmt.Errorf("%w: no data for %s", reflector.ErrStalled, l.idle)
		},
	}}, nil
}

func (l *quietStalls) asked() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.watches...)
}

// A streaming list that ends before its end bookmark, as a restarting
// server's does, is followed by one LIST, and the next refill streams
// again; only a second one in a row, within an hour, gives up streaming for
// good (the first used to).
func TestStreamingCutShortListsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		src.Create(pod("a"))
		lw := &cutsStreams{Source: src, cut: 1}
		r := reflector.New[*corev1.Pod](lw, store)
		defer run(t, r)()
		synctest.Wait()
		assert.Equal(t, []string{"replace 1@1"}, store.calls(), "the cut stream's events were not applied")
		assert.EqualValues(t, 1, src.Lists.Load())

		relist := func() {
			src.FailWatch(fakelw.Status(http.StatusGone, metav1.StatusReasonExpired, "too old resource version"))
			src.CloseWatches()
			time.Sleep(time.Minute) // fake time: past any backoff
			synctest.Wait()
		}
		relist() // streams, whole this time
		assert.EqualValues(t, 1, src.Lists.Load())
		assert.Equal(t, 2, lw.streamCount())

		lw.cutNext(1)
		relist() // cut: LIST once
		assert.EqualValues(t, 2, src.Lists.Load())
		assert.Equal(t, 3, lw.streamCount())
		time.Sleep(2 * time.Hour) // a cut this long ago no longer counts
		lw.cutNext(1)
		relist() // cut: LIST once
		relist() // streams
		assert.EqualValues(t, 3, src.Lists.Load())
		assert.Equal(t, 5, lw.streamCount())

		lw.cutNext(2)
		relist() // cut: LIST once
		assert.EqualValues(t, 4, src.Lists.Load())
		assert.Equal(t, 6, lw.streamCount())
		relist() // cut again, two in a row: LIST from now on
		relist()
		assert.EqualValues(t, 6, src.Lists.Load())
		assert.Equal(t, 7, lw.streamCount())
		assert.Equal(t, sourceKeys(src), store.keys())
	})
}

// cutsStreams serves the Source, but ends its next cut streaming lists
// after their first event.
type cutsStreams struct {
	*fakelw.Source[*corev1.Pod]
	mu      sync.Mutex
	cut     int
	streams int
}

func (c *cutsStreams) cutNext(n int) { c.mu.Lock(); c.cut = n; c.mu.Unlock() }

func (c *cutsStreams) streamCount() int { c.mu.Lock(); defer c.mu.Unlock(); return c.streams }

func (c *cutsStreams) Watch(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	w, err := c.Source.Watch(ctx, opts)
	if err != nil || !opts.SendInitialEvents {
		return w, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.streams++
	if c.cut == 0 {
		return w, nil
	}
	c.cut--
	return &cutWatcher{Watcher: w}, nil
}

// cutWatcher passes on its first event, then ends as a clean EOF.
type cutWatcher struct {
	reflector.Watcher[*corev1.Pod]
	passed bool
}

func (w *cutWatcher) Next() (reflector.Event[*corev1.Pod], error) {
	if w.passed {
		return reflector.Event[*corev1.Pod]{}, errEOF
	}
	w.passed = true
	return w.Watcher.Next()
}

// stallsStreaming serves streaming lists that send one initial event and
// then stall, and plain LIST and WATCH through scripted.
type stallsStreaming struct {
	*scripted
	streams int
}

func (s *stallsStreaming) Watch(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	if !opts.SendInitialEvents {
		return s.scripted.Watch(ctx, opts)
	}
	s.mu.Lock()
	s.streams++
	s.mu.Unlock()
	return &stalledWatcher{event: &reflector.Event[*corev1.Pod]{Type: reflector.Added, Object: withRV(pod("a"), "3")}}, nil
}

// stalledWatcher returns its event, then fails as the HTTP watcher's
// watchdog does after its idle timeout.
type stalledWatcher struct{ event *reflector.Event[*corev1.Pod] }

func (w *stalledWatcher) Next() (reflector.Event[*corev1.Pod], error) {
	if ev := w.event; ev != nil {
		w.event = nil
		return *ev, nil
	}
	time.Sleep(90 * time.Second)
	return reflector.Event[*corev1.Pod]{}, fmt.Errorf("%w: no data for 90s", reflector.ErrStalled)
}

func (w *stalledWatcher) Close() error { return nil }

func TestPeriodicRelistIsNotPostponedByShortWatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		src.Create(pod("a"))
		r := reflector.New(src, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithRelistInterval[*corev1.Pod](10*time.Second))
		defer run(t, r)()
		// Watches that end every 3s, as with a server timeout shorter
		// than the interval.
		for range 8 {
			time.Sleep(3 * time.Second)
			src.CloseWatches()
		}
		synctest.Wait()
		var replaces int
		for _, c := range store.calls() {
			if strings.HasPrefix(c, "replace") {
				replaces++
			}
		}
		assert.Equal(t, 3, replaces, "listed at 0s, 10s and 20s")
	})
}

func TestRepeatedGoneDoesNotStormLists(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		src.Create(pod("a"))
		gone := make([]error, 50)
		for i := range gone {
			gone[i] = fakelw.Status(http.StatusGone, metav1.StatusReasonExpired, "too old resource version")
		}
		src.FailWatch(gone...)
		r := reflector.New(src, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch))
		defer run(t, r)()
		synctest.Wait()
		assert.LessOrEqual(t, src.Lists.Load(), int64(2), "every watch answered 410 at once: relists must back off")
		// A good list resets the backoff, so each 410 waits about the
		// initial 0.8 s: a bounded rate, where without the rule all 50
		// failures would have been 50 LISTs at once.
		time.Sleep(10 * time.Second)
		synctest.Wait()
		assert.Less(t, src.Lists.Load(), int64(20))
	})
}

// rvAtReplace is a Store that notes, when a list is handed to it, what the
// Reflector reports as its LastSyncResourceVersion.
type rvAtReplace struct {
	*recorder
	r    *reflector.Reflector[*corev1.Pod]
	seen []string
}

func (s *rvAtReplace) Replace(list []*corev1.Pod, rv string) error {
	s.seen = append(s.seen, rv+" "+s.r.LastSyncResourceVersion())
	return s.recorder.Replace(list, rv)
}

// Whoever consumes the Store (the informer, whose HasSynced turns true once
// the list is processed) may finish before Replace returns: by then
// LastSyncResourceVersion must already report the list.
func TestLastSyncResourceVersionIsSetBeforeTheStoreGetsTheList(t *testing.T) {
	for _, mode := range []reflector.Mode{reflector.ListWatch, reflector.WatchList} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := newSource()
				src.Create(pod("a"))
				store := &rvAtReplace{recorder: newRecorder()}
				store.r = reflector.New(src, reflector.Store[*corev1.Pod](store), reflector.WithMode[*corev1.Pod](mode))
				stop := run(t, store.r)
				defer stop()
				synctest.Wait()
				assert.Equal(t, []string{"1 1"}, store.seen, "list RV, then LastSyncResourceVersion during Replace")
			})
		})
	}
}

// scriptedWatches is a ListerWatcher whose LIST gives an empty list at
// resourceVersion n+1 after n watches, and whose every watch is made by
// watch, from the number of the watch (1, 2, ...) and the resourceVersion
// asked for: watch n may send events up to resourceVersion n+1. It counts
// LISTs, records when each watch was asked for (fake time, in a bubble) and
// ends Run after maxWatches watches.
type scriptedWatches struct {
	watch      func(n int, rv string) reflector.Watcher[*corev1.Pod]
	maxWatches int
	cancel     context.CancelFunc

	mu    sync.Mutex
	asked []time.Time
	lists int
	spin  fakelw.SpinGuard
}

func (l *scriptedWatches) List(ctx context.Context, _ reflector.ListOptions, _ func(*corev1.Pod) error) (reflector.ListMeta, error) {
	l.spin.Asked(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lists++
	return reflector.ListMeta{ResourceVersion: fmt.Sprint(len(l.asked) + 1)}, nil
}

func (l *scriptedWatches) Watch(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	l.spin.Asked(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.asked = append(l.asked, time.Now())
	if len(l.asked) == l.maxWatches {
		l.cancel()
	}
	return l.watch(len(l.asked), opts.ResourceVersion), nil
}

// gaps returns the time between one watch and the next.
func (l *scriptedWatches) gaps() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var gaps []time.Duration
	for i := 1; i < len(l.asked); i++ {
		gaps = append(gaps, l.asked[i].Sub(l.asked[i-1]))
	}
	return gaps
}

func (l *scriptedWatches) run(opts ...reflector.Option[*corev1.Pod]) {
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	reflector.New[*corev1.Pod](l, newRecorder(), append(opts, reflector.WithMode[*corev1.Pod](reflector.ListWatch))...).Run(ctx)
}

// eventsThen is a Watcher that returns its events, then err.
type eventsThen struct {
	events []reflector.Event[*corev1.Pod]
	err    error
}

func (w *eventsThen) Next() (reflector.Event[*corev1.Pod], error) {
	if len(w.events) == 0 {
		return reflector.Event[*corev1.Pod]{}, w.err
	}
	ev := w.events[0]
	w.events = w.events[1:]
	return ev, nil
}

func (w *eventsThen) Close() error { return nil }

// A proxy that cuts every watch after it delivered changes: each reconnect
// is prompt. Counted as failures in a row, the waits climbed to the
// backoff's maximum, and the cache lagged by that much after every cut.
func TestWatchesCutAfterProgressAreResumedPromptly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &scriptedWatches{maxWatches: 10, watch: func(n int, _ string) reflector.Watcher[*corev1.Pod] {
			time.Sleep(20 * time.Second) // the watch runs for a while
			return &eventsThen{
				events: []reflector.Event[*corev1.Pod]{{Type: reflector.Added, Object: withRV(pod(fmt.Sprint("p", n)), fmt.Sprint(n+1))}},
				err:    io.ErrUnexpectedEOF,
			}
		}}
		lw.run(reflector.WithBackoff[*corev1.Pod](time.Second, time.Minute))
		for i, g := range lw.gaps() {
			assert.LessOrEqual(t, g, 21*time.Second, "watch %d came %s after the one before", i+2, g)
		}
	})
}

// After a run of refused watches, one that moves the cache forward puts the
// backoff back to its initial delay, however it ends: the next outage is
// retried at once, not at the delay the last one had reached. A stream that
// ended cleanly (a proxy's cut, the watchdog on a quiet stream) kept it.
func TestWatchThatMovedForwardResetsTheBackoff(t *testing.T) {
	internal := fakelw.Status(http.StatusInternalServerError, metav1.StatusReasonInternalError, "boom")
	for name, end := range map[string]func(*fakelw.Source[*corev1.Pod]){
		"ended cleanly":  func(src *fakelw.Source[*corev1.Pod]) { src.CloseWatches() },
		"ended in error": func(src *fakelw.Source[*corev1.Pod]) { src.BreakWatches(internal) },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src, store := newSource(), newRecorder()
				src.Create(pod("a"))
				lw := &timedWatches{Source: src}
				src.FailWatch(internal, internal, internal, internal, internal, internal)
				r := reflector.New[*corev1.Pod](lw, store,
					reflector.WithMode[*corev1.Pod](reflector.ListWatch),
					reflector.WithBackoff[*corev1.Pod](time.Second, 5*time.Minute))
				defer run(t, r)()
				time.Sleep(3 * time.Minute) // six refusals: at most 1+2+4+8+16+32 s
				synctest.Wait()
				require.Len(t, lw.times(), 7)

				p, _ := src.Get("ns/a")
				p = p.DeepCopy()
				p.Labels = map[string]string{"x": "y"}
				src.Update(p) // the seventh watch moves the cache forward
				synctest.Wait()
				time.Sleep(10 * time.Second)
				src.FailWatch(internal) // the next outage
				ended := time.Now()
				end(src)
				time.Sleep(5 * time.Minute)
				synctest.Wait()
				asked := lw.times()
				require.GreaterOrEqual(t, len(asked), 9)
				// At most the first two delays after a reset, 1 s and 2 s (the
				// delays the refusals had reached were 32 s and 64 s).
				assert.LessOrEqual(t, asked[8].Sub(ended), 3*time.Second, "the watch after the refused one")
			})
		})
	}
}

// timedWatches serves the Source and records when each watch was asked for.
type timedWatches struct {
	*fakelw.Source[*corev1.Pod]
	mu      sync.Mutex
	watches []time.Time
}

func (l *timedWatches) Watch(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	l.mu.Lock()
	l.watches = append(l.watches, time.Now())
	l.mu.Unlock()
	return l.Source.Watch(ctx, opts)
}

func (l *timedWatches) times() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.watches...)
}

// A server whose every watch sends a bookmark of where it started and ends:
// nothing moves forward, so it counts as a failure and is backed off, not
// asked again at once for ever.
func TestWatchesThatOnlyBookmarkWhereTheyStartAreBackedOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		lw := &scriptedWatches{maxWatches: 20, watch: func(_ int, rv string) reflector.Watcher[*corev1.Pod] {
			return &eventsThen{
				events: []reflector.Event[*corev1.Pod]{{Type: reflector.Bookmark, Object: withRV(&corev1.Pod{}, rv)}},
				err:    io.EOF,
			}
		}}
		lw.run()
		assert.Greater(t, time.Since(start), time.Minute, "20 watches that moved nothing")
	})
}

// What Run cannot run with is reported, and Run returns: no panic later, far
// from the cause.
func TestRunReportsWhatItCannotRunWith(t *testing.T) {
	var nilSource *fakelw.Source[*corev1.Pod]
	var nilCtx context.Context
	for _, tc := range []struct {
		name  string
		lw    reflector.ListerWatcher[*corev1.Pod]
		store reflector.Store[*corev1.Pod]
		ctx   context.Context
		want  string
	}{
		{"nil ListerWatcher", nil, newRecorder(), t.Context(), "ListerWatcher is nil"},
		{"typed nil ListerWatcher", nilSource, newRecorder(), t.Context(), "ListerWatcher is nil"},
		{"nil Store", newSource(), nil, t.Context(), "Store is nil"},
		{"nil context", newSource(), newRecorder(), nilCtx, "nil context"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reported []error
			reflector.New(tc.lw, tc.store, reflector.WithErrorHandler[*corev1.Pod](func(err error) { reported = append(reported, err) })).Run(tc.ctx)
			require.Len(t, reported, 1)
			assert.ErrorContains(t, reported[0], tc.want)
		})
	}
	t.Run("invalid Mode", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel() // a Reflector that ran would return at once, reporting nothing
		var reported []error
		r := reflector.New(newSource(), newRecorder(), reflector.WithMode[*corev1.Pod](42),
			reflector.WithErrorHandler[*corev1.Pod](func(err error) { reported = append(reported, err) }))
		r.Run(ctx)
		require.Len(t, reported, 1)
		assert.ErrorContains(t, reported[0], "Mode(42)")
		assert.ErrorContains(t, r.LastError(), "Mode(42)")
	})
	t.Run("typed nil HTTPListerWatcher with WithSharing", func(t *testing.T) {
		// New looked inside it for its sharing decoder, and panicked.
		var lw *reflector.HTTPListerWatcher[*corev1.Pod]
		r := reflector.New[*corev1.Pod](lw, newRecorder(), reflector.WithSharing[*corev1.Pod]())
		r.Run(t.Context())
		assert.ErrorContains(t, r.LastError(), "ListerWatcher is nil")
	})
	t.Run("a Reflector not made by New", func(t *testing.T) {
		// Run reported it through a logger it did not have, and panicked.
		var r reflector.Reflector[*corev1.Pod]
		r.Run(t.Context())
		assert.ErrorContains(t, r.LastError(), "ListerWatcher is nil")
	})
	_, err := reflector.NewListerWatcher[*corev1.Pod](nil, reflector.Target{})
	assert.ErrorContains(t, err, "Client is nil")
	// A Client not made by NewClient was taken, and its first List panicked.
	_, err = reflector.NewListerWatcher[*corev1.Pod](&reflector.Client{}, reflector.Target{})
	assert.ErrorContains(t, err, "the Client was not made by NewClient")
}

// A second Run is reported and returns; it does not fill the Store again.
func TestRunTwiceIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		src.Create(pod("a"))
		var reported []error
		r := reflector.New[*corev1.Pod](src, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithErrorHandler[*corev1.Pod](func(err error) { reported = append(reported, err) }))
		defer run(t, r)()
		synctest.Wait()
		r.Run(t.Context()) // returns at once
		synctest.Wait()
		require.Len(t, reported, 1)
		assert.ErrorContains(t, reported[0], "called again")
		assert.Equal(t, []string{"replace 1@1"}, store.calls())
	})
}

// A watch that delivers an event and then 410 Gone, every time (a busy
// resource compacted often): each relist backs off further. Resetting the
// backoff because the watch had moved forward listed at the initial delay
// for ever.
func TestGoneAfterProgressStillBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		lw := &scriptedWatches{maxWatches: 30, watch: func(n int, _ string) reflector.Watcher[*corev1.Pod] {
			time.Sleep(100 * time.Millisecond)
			return &eventsThen{
				events: []reflector.Event[*corev1.Pod]{{Type: reflector.Added, Object: withRV(pod(fmt.Sprint("p", n)), fmt.Sprint(n+1))}},
				err:    fakelw.Status(http.StatusGone, metav1.StatusReasonExpired, "too old resource version"),
			}
		}}
		lw.run()
		assert.Greater(t, time.Since(start), 5*time.Minute, "30 lists, each after a watch that ended in 410")
	})
}

// The same with the 410 one step later: a watch that delivers an event
// and ends cleanly, then a resume refused with 410 Gone, every time. The
// clean end that moved the cache forward reset the backoff at once, so
// the relists came at the initial delay for ever.
func TestGoneAfterACleanEndWithProgressStillBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		lw := &scriptedWatches{maxWatches: 30, watch: func(n int, _ string) reflector.Watcher[*corev1.Pod] {
			time.Sleep(100 * time.Millisecond)
			if n%2 == 1 {
				return &eventsThen{
					events: []reflector.Event[*corev1.Pod]{{Type: reflector.Added, Object: withRV(pod(fmt.Sprint("p", n)), fmt.Sprint(n+1))}},
					err:    io.EOF,
				}
			}
			return &eventsThen{err: fakelw.Status(http.StatusGone, metav1.StatusReasonExpired, "too old resource version")}
		}}
		lw.run()
		assert.Greater(t, time.Since(start), 2*time.Minute, "15 lists, each after a resume refused with 410")
	})
}

// Two spoiled events at different resourceVersions, an hour apart, are two
// resumed watches, not a relist: only twice at the same resourceVersion is.
func TestSpoiledWatchesAtDifferentVersionsAreResumed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spoiled := fmt.Errorf("%w: watch event 1: spoiled on its way", wire.ErrMalformed)
		lw := &scriptedWatches{maxWatches: 4, watch: func(n int, _ string) reflector.Watcher[*corev1.Pod] {
			switch n {
			case 2:
				time.Sleep(time.Hour)
				return &eventsThen{events: []reflector.Event[*corev1.Pod]{{Type: reflector.Added, Object: withRV(pod("a"), "2")}}, err: io.EOF}
			case 4:
				return &eventsThen{err: io.EOF}
			}
			return &eventsThen{err: spoiled}
		}}
		lw.run()
		lw.mu.Lock()
		defer lw.mu.Unlock()
		assert.Equal(t, 1, lw.lists)
	})
}

// Two watches in a row that fail in their stream at one resourceVersion, on
// what the server sent (an event spoiled the same way each time), are
// followed by a list, which moves past the event: the first is resumed
// (an event spoiled on its way comes back whole), the second is not.
func TestStuckWatchesRelistAfterTheSecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spoiled := fmt.Errorf("%w: watch event 1: spoiled the same way every time", wire.ErrMalformed)
		var listsBefore []int // LISTs before each watch
		var lw *scriptedWatches
		lw = &scriptedWatches{maxWatches: 3, watch: func(int, string) reflector.Watcher[*corev1.Pod] {
			listsBefore = append(listsBefore, lw.lists) // Watch holds lw.mu
			return &eventsThen{err: spoiled}
		}}
		lw.run()
		assert.Equal(t, []int{1, 1, 2}, listsBefore, "the first list, two watches, a relist, a watch")
	})
}

// slowClose is a ListerWatcher whose first watcher's first Close, which
// the periodic relist's timer makes, waits for release before it returns.
type slowClose struct {
	*fakelw.Source[*corev1.Pod]
	release    chan struct{}
	closedOnce atomic.Bool
	closing    atomic.Bool
}

func (l *slowClose) Watch(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	w, err := l.Source.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &slowCloseWatcher{Watcher: w, l: l}, nil
}

type slowCloseWatcher struct {
	reflector.Watcher[*corev1.Pod]
	l *slowClose
}

func (w *slowCloseWatcher) Close() error {
	err := w.Watcher.Close()
	if w.l.closedOnce.CompareAndSwap(false, true) {
		w.l.closing.Store(true)
		<-w.l.release
		w.l.closing.Store(false)
	}
	return err
}

// The periodic relist's timer closes the watch on a goroutine of its own;
// Run waits for it, as for every goroutine it starts.
func TestRunWaitsForTheRelistTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("a"))
		lw := &slowClose{Source: src, release: make(chan struct{})}
		r := reflector.New[*corev1.Pod](lw, newRecorder(), reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithRelistInterval[*corev1.Pod](time.Second))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			r.Run(ctx)
		}()
		time.Sleep(1100 * time.Millisecond) // the timer fires (at 1 to 1.1 s) and closes the watch
		synctest.Wait()
		require.True(t, lw.closing.Load(), "the timer's Close is under way")
		cancel()
		synctest.Wait()
		returnedEarly := false
		select {
		case <-done:
			returnedEarly = true
		default:
		}
		close(lw.release)
		<-done
		assert.False(t, returnedEarly, "Run returned while the relist timer's goroutine was still in Close")
	})
}

// keeper is a recorder that is a KeepingStore: it logs which objects a
// refill left out, and keeps their state.
type keeper struct{ *recorder }

func (k keeper) ReplaceKeeping(list, keep []*corev1.Pod, rv string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	state := map[string]*corev1.Pod{}
	for _, p := range list {
		state[objkey.Key(p)] = p
	}
	var kept []string
	for _, p := range keep {
		if old, ok := k.state[objkey.Key(p)]; ok {
			state[objkey.Key(p)] = old
		}
		kept = append(kept, p.Name)
	}
	k.state = state
	k.log = append(k.log, fmt.Sprintf("replace %d@%s keeping %v", len(list), rv, kept))
	return nil
}

// The objects of a list that the transform failed on (an error, a panic, a
// result with another key, a rename in place, with or without failing) reach a
// KeepingStore as kept, under the key they came with, so that it keeps
// what it has for them.
func TestRefillTellsAKeepingStoreWhatItLeftOut(t *testing.T) {
	for _, mode := range []reflector.Mode{reflector.ListWatch, reflector.WatchList} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src, store := newSource(), keeper{newRecorder()}
				for _, n := range []string{"a", "fails", "panics", "renamed", "moved", "relabelled"} {
					src.Create(pod(n))
				}
				var failing atomic.Bool
				r := reflector.New[*corev1.Pod](src, store, reflector.WithMode[*corev1.Pod](mode),
					reflector.WithTransform(func(p *corev1.Pod) (*corev1.Pod, error) {
						if !failing.Load() {
							return p, nil
						}
						switch p.Name {
						case "fails":
							return nil, errors.New("failed")
						case "panics":
							panic("transform bug")
						case "renamed":
							p.Name = "other"
							return nil, errors.New("failed after renaming")
						case "moved":
							q := p.DeepCopy()
							q.Name = "elsewhere"
							return q, nil
						case "relabelled":
							p.Name = "other" // in place, and no error
							return p, nil
						}
						return p, nil
					}))
				defer run(t, r)()
				synctest.Wait()
				require.Equal(t, []string{"a@1", "fails@2", "moved@5", "panics@3", "relabelled@6", "renamed@4"}, store.keys())

				failing.Store(true)
				src.CloseWatches()
				src.Update(pod("a"))
				src.Compact() // the watch cannot resume: a relist
				time.Sleep(time.Minute)
				synctest.Wait()
				calls := store.calls()
				assert.Equal(t, "replace 1@7 keeping [fails moved panics relabelled renamed]", calls[len(calls)-1])
				assert.Equal(t, []string{"a@7", "fails@2", "moved@5", "panics@3", "relabelled@6", "renamed@4"}, store.keys())
			})
		})
	}
}

// An object that comes without a resourceVersion in a refill that has one
// (spoiled on its way) is rejected and reported, and reaches a KeepingStore
// as kept: the cache keeps what it had for it rather than take it for
// deleted, in a LIST and in a streaming list alike.
func TestRefillKeepsAnObjectWithoutResourceVersion(t *testing.T) {
	for _, mode := range []reflector.Mode{reflector.ListWatch, reflector.WatchList} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src, store := newSource(), keeper{newRecorder()}
				src.Create(pod("a"))
				src.Create(pod("b"))
				lw := &rvStripper{Source: src}
				var errs errorLog
				r := reflector.New[*corev1.Pod](lw, store, reflector.WithMode[*corev1.Pod](mode),
					reflector.WithErrorHandler[*corev1.Pod](errs.add))
				defer run(t, r)()
				synctest.Wait()
				require.Equal(t, []string{"a@1", "b@2"}, store.keys())

				lw.on.Store(true)
				src.CloseWatches()
				src.Update(pod("a"))
				src.Compact() // the watch cannot resume: a relist
				time.Sleep(time.Minute)
				synctest.Wait()
				calls := store.calls()
				assert.Equal(t, "replace 1@3 keeping [b]", calls[len(calls)-1])
				assert.Equal(t, []string{"a@3", "b@2"}, store.keys())
				assert.Equal(t, 1, errorsContaining(errs.all(), "ns/b has no metadata.resourceVersion"))
			})
		})
	}
}

// rvStripper is a Source whose lists (a LIST's items, a streaming list's
// ADDED events) hold b without its resourceVersion while on is set.
type rvStripper struct {
	*fakelw.Source[*corev1.Pod]
	on atomic.Bool
}

func (s *rvStripper) strip(p *corev1.Pod) *corev1.Pod {
	if s.on.Load() && p.Name == "b" {
		p = p.DeepCopy()
		p.ResourceVersion = ""
	}
	return p
}

func (s *rvStripper) List(ctx context.Context, opts reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
	return s.Source.List(ctx, opts, func(p *corev1.Pod) error { return add(s.strip(p)) })
}

func (s *rvStripper) Watch(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	w, err := s.Source.Watch(ctx, opts)
	if err != nil || !opts.SendInitialEvents {
		return w, err
	}
	return strippingWatcher{w, s}, nil
}

type strippingWatcher struct {
	reflector.Watcher[*corev1.Pod]
	s *rvStripper
}

func (w strippingWatcher) Next() (reflector.Event[*corev1.Pod], error) {
	ev, err := w.Watcher.Next()
	if err == nil && ev.Type == reflector.Added {
		ev.Object = w.s.strip(ev.Object)
	}
	return ev, err
}

// A watch refused on every attempt, where the list is served: 403 (a role
// that may list but not watch) or 405 (a resource that can be listed but
// not watched, as kube-apiserver's componentstatuses and some aggregated
// APIs). The cache syncs with LIST (Auto falls back to it from the
// streaming list, which is a watch) and follows the server by listing
// again after each refused watch, as client-go's does, rather than never
// sync or keep the first list for good (as it did after a 405).
func TestRefusedWatchListsAgain(t *testing.T) {
	refusals := map[string]error{
		"403": fakelw.Status(http.StatusForbidden, metav1.StatusReasonForbidden, "cannot watch pods"),
		"405": fakelw.Status(http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "watch is not supported on resources of kind \"pods\""),
	}
	for name, refusal := range refusals {
		for _, mode := range []reflector.Mode{reflector.Auto, reflector.ListWatch} {
			t.Run(fmt.Sprint(name, "/", mode), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					src, store := newSource(), newRecorder()
					src.Create(pod("a"))
					refused := make([]error, 1000)
					for i := range refused {
						refused[i] = refusal
					}
					src.FailWatch(refused...)
					var log errorLog
					r := reflector.New[*corev1.Pod](src, store, reflector.WithMode[*corev1.Pod](mode),
						reflector.WithErrorHandler[*corev1.Pod](log.add))
					defer run(t, r)()
					synctest.Wait()
					assert.Equal(t, []string{"a@1"}, store.keys(), "synced by LIST")

					src.Create(pod("b"))
					time.Sleep(time.Minute) // past the backoff's ceiling
					synctest.Wait()
					assert.Equal(t, sourceKeys(src), store.keys())
					assert.LessOrEqual(t, src.Lists.Load(), int64(10), "lists as often as the backoff lets it, no more")
					require.NotEmpty(t, log.all())
					assert.ErrorContains(t, log.all()[len(log.all())-1], refusal.Error())
				})
			})
		}
	}
}

// In Auto mode, a LIST that follows a failed streaming list and is
// forbidden is a failed LIST like any other: the next refill streams again,
// after the backoff. It used to be taken for a forbidden streaming list:
// sent again at once, then LISTs until one succeeded.
func TestForbiddenListAfterAFailedStreamingListStreamsAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		src.Create(pod("a"))
		src.FailWatch(fakelw.Status(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "busy"))
		forbidden := fakelw.Status(http.StatusForbidden, metav1.StatusReasonForbidden, "cannot list pods")
		src.FailList(forbidden, forbidden, forbidden)
		r := reflector.New[*corev1.Pod](src, store)
		defer run(t, r)()
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, []string{"a@1"}, store.keys(), "synced by the second streaming list")
		assert.EqualValues(t, 1, src.Lists.Load(), "one LIST, then a streaming list")
		lists, _ := src.PendingFailures()
		assert.Equal(t, 2, lists)
	})
}

// A watch answered 404 (the resource is no longer served: its CRD
// deleted, its version no longer served) is followed by a list after the
// backoff, as in client-go, not by a watch from the old resourceVersion,
// which only a server that answers it with 410 would turn into a relist.
func TestNotFoundWatchListsAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		src.Create(pod("a"))
		r := reflector.New[*corev1.Pod](src, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch))
		defer run(t, r)()
		synctest.Wait()
		require.EqualValues(t, 1, src.Lists.Load())
		src.FailWatch(fakelw.Status(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource"))
		src.CloseWatches()
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.EqualValues(t, 2, src.Lists.Load(), "listed again after the 404")
		assert.Equal(t, sourceKeys(src), store.keys())
	})
}

// A "too large" answer, then a 410 (the server is ahead of the cache after
// all), then a while of 503s: the server was not behind all that time, so
// when it is then restored from a backup (really behind), its older state
// is waited for two minutes from then, not taken at once. With 503s only
// before the restore, likewise.
func TestBehindClockRestartsWhenTheServerProvesAhead(t *testing.T) {
	for name, tooLargeThenGone := range map[string]bool{"too large, then 410, then 503s": true, "503s only": false} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src, store := newSource(), newRecorder()
				lw := &hookedLists{Source: src}
				var log errorLog
				r := reflector.New[*corev1.Pod](lw, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
					reflector.WithErrorHandler[*corev1.Pod](log.add))
				backup, stop := runPastABackup(t, src, store, r)
				defer stop()

				lw.setHook(func(n int) error {
					switch {
					case !tooLargeThenGone:
					case n == 0:
						return fakelw.TooLarge(4, 3) // a lagging cache
					case n == 1: // ahead: the cache's resourceVersion compacted away
						return fakelw.Status(http.StatusGone, metav1.StatusReasonExpired, "too old resource version: 4 (5)")
					}
					return fakelw.Status(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "etcd unavailable")
				})
				src.FailWatch(fakelw.Status(http.StatusGone, metav1.StatusReasonExpired, "too old resource version"))
				src.CloseWatches()
				time.Sleep(10 * time.Second)
				synctest.Wait()
				require.GreaterOrEqual(t, lw.lists(), 2, "the first two LISTs answered (too large, 410) more than two minutes before the check")
				time.Sleep(125 * time.Second)
				synctest.Wait()

				src.Restore(backup) // now really behind the cache
				lw.setHook(nil)
				time.Sleep(40 * time.Second)
				synctest.Wait()
				assert.Equal(t, []string{"a@4", "b@2", "c@3"}, store.keys(), "a server behind for 40 s is waited for")
				for _, err := range log.all() {
					assert.NotErrorIs(t, err, reflector.ErrBackInTime)
				}
			})
		})
	}
}

// hookedLists is a Source whose LISTs can be failed by a hook, given the
// number of the LIST since the hook was set.
type hookedLists struct {
	*fakelw.Source[*corev1.Pod]
	mu   sync.Mutex
	hook func(n int) error
	n    int
}

func (h *hookedLists) setHook(f func(n int) error) {
	h.mu.Lock()
	h.hook, h.n = f, 0
	h.mu.Unlock()
}

// lists returns how many LISTs were asked for since the hook was set.
func (h *hookedLists) lists() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

func (h *hookedLists) List(ctx context.Context, opts reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
	h.mu.Lock()
	f, n := h.hook, h.n
	h.n++
	h.mu.Unlock()
	if f != nil {
		if err := f(n); err != nil {
			return reflector.ListMeta{}, err
		}
	}
	return h.Source.List(ctx, opts, add)
}

// Two watches that fail in their stream at one resourceVersion, with a
// watch that ended cleanly between them, did not fail "in a row": the
// second is resumed, not relisted.
func TestFailuresSeparatedByACleanWatchAreNotInARow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errorEvent := func() reflector.Watcher[*corev1.Pod] {
			return &eventsThen{events: []reflector.Event[*corev1.Pod]{{Type: reflector.Error,
				Status: &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: "internal error"}}}}
		}
		lw := &scriptedWatches{maxWatches: 4, watch: func(n int, _ string) reflector.Watcher[*corev1.Pod] {
			if n == 1 || n == 3 {
				return errorEvent()
			}
			time.Sleep(5 * time.Minute) // a quiet watch that ends cleanly
			return &eventsThen{err: io.EOF}
		}}
		lw.run()
		lw.mu.Lock()
		defer lw.mu.Unlock()
		assert.Equal(t, 1, lw.lists)
	})
}

// Reflectors started together with WithRelistInterval do not relist
// together: each relist falls up to a tenth of the interval late, drawn
// at random at each refill.
func TestRelistIntervalIsSpread(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		var relisted []time.Duration
		for range 10 {
			src := newSource()
			src.Create(pod("a"))
			lists := 0
			store := &callbackStore{replace: func() {
				mu.Lock()
				defer mu.Unlock()
				if lists++; lists == 2 {
					relisted = append(relisted, time.Since(start))
				}
			}}
			r := reflector.New[*corev1.Pod](src, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
				reflector.WithRelistInterval[*corev1.Pod](10*time.Second))
			defer run(t, r)()
		}
		time.Sleep(11 * time.Second)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		assertSpread(t, relisted, 10*time.Second, 11*time.Second)
	})
}

// Durations past what the jitter can add to without overflowing: a
// Retry-After of centuries (a far-future HTTP date) waits two thirds to
// all of the backoff's maximum, and WithRelistInterval(math.MaxInt64)
// never relists; neither makes the Reflector ask again at once (fakelw's
// SpinGuard would panic).
func TestHugeDurationsDoNotOverflowTheJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		src.Create(pod("a"))
		huge := &rest.APIError{ErrStatus: metav1.Status{Code: http.StatusTooManyRequests, Reason: metav1.StatusReasonTooManyRequests},
			RetryAfter: math.MaxInt64}
		src.FailList(huge, huge, huge)
		r := reflector.New[*corev1.Pod](src, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithRelistInterval[*corev1.Pod](math.MaxInt64))
		defer run(t, r)()
		time.Sleep(19 * time.Second)
		synctest.Wait()
		assert.EqualValues(t, 1, src.Lists.Load(), "asked again before 2/3 of the backoff's maximum")
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		assert.EqualValues(t, 4, src.Lists.Load(), "three refused, then one list, and no relist")
		assert.Equal(t, []string{"replace 1@1"}, store.calls())
	})
}

// A streaming list the server accepts and then fails (an ERROR event before
// the initial events end, as for a custom resource whose conversion
// webhook is down) is no recovery: the cache does not follow the server
// until the initial events are stored. Before, WithRecoveredHandler was
// called as each stream was accepted, so an informer logged "list/watch
// recovered" on every retry of a resource it never listed, and its run of
// failures never grew old enough to be an error.
func TestAcceptedStreamThatFailsIsNoRecovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &brokenResource{}
		lw.broken.Store(true)
		var recoveries, errs atomic.Int64
		r := reflector.New[*corev1.Pod](lw, newRecorder(),
			reflector.WithErrorHandler[*corev1.Pod](func(error) { errs.Add(1) }),
			reflector.WithRecoveredHandler[*corev1.Pod](func() { recoveries.Add(1) }))
		defer run(t, r)()
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		assert.Greater(t, errs.Load(), int64(5))
		assert.Zero(t, recoveries.Load(), "never synced, never recovered")

		lw.broken.Store(false)
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, "10", r.LastSyncResourceVersion())
		assert.NoError(t, r.LastError())
		assert.EqualValues(t, 1, recoveries.Load(), "recovered once the initial events are stored")
	})
}

// A recovered handler that panics is logged, and the Reflector goes on, as
// after an error handler's panic. The panic ended the Reflector's
// goroutine, and with it the process.
func TestPanickingRecoveredHandlerIsLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &brokenResource{}
		lw.broken.Store(true)
		var logs bytes.Buffer // written by the Reflector's goroutine, read after Run returned
		r := reflector.New[*corev1.Pod](lw, newRecorder(),
			reflector.WithLogger[*corev1.Pod](slog.New(slog.NewTextHandler(&logs, nil))),
			reflector.WithErrorHandler[*corev1.Pod](func(error) {}),
			reflector.WithRecoveredHandler[*corev1.Pod](func() { panic("recovered handler bug") }))
		ctx, cancel := context.WithCancel(t.Context())
		panicked := make(chan any, 1)
		go func() {
			defer func() { panicked <- recover() }()
			r.Run(ctx)
		}()
		time.Sleep(time.Minute)
		lw.broken.Store(false)
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, "10", r.LastSyncResourceVersion())
		cancel()
		assert.Nil(t, <-panicked)
		assert.Contains(t, logs.String(), "the recovered handler panicked")
	})
}

// brokenResource fails every LIST with a 500 and every streaming list with
// an ERROR event after the server accepted it, while broken; then it
// serves an empty streaming list and a quiet watch.
type brokenResource struct{ broken atomic.Bool }

func (b *brokenResource) List(context.Context, reflector.ListOptions, func(*corev1.Pod) error) (reflector.ListMeta, error) {
	if b.broken.Load() {
		return reflector.ListMeta{}, apierrors.NewInternalError(errors.New("conversion webhook unavailable"))
	}
	return reflector.ListMeta{ResourceVersion: "10"}, nil
}

func (b *brokenResource) Watch(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	if b.broken.Load() {
		st := apierrors.NewInternalError(errors.New("conversion webhook unavailable")).ErrStatus
		return &chanWatcher{ctx: ctx, events: []reflector.Event[*corev1.Pod]{{Type: reflector.Error, Status: &st}}, eof: true, stop: make(chan struct{})}, nil
	}
	var events []reflector.Event[*corev1.Pod]
	if opts.SendInitialEvents {
		bm := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "10",
			Annotations: map[string]string{reflector.InitialEventsEndAnnotation: "true"}}}
		events = append(events, reflector.Event[*corev1.Pod]{Type: reflector.Bookmark, Object: bm})
	}
	return &chanWatcher{ctx: ctx, events: events, stop: make(chan struct{})}, nil
}

// WatchEvents counts what the watches delivered, a streaming list's
// initial events and its closing bookmark included, and nothing for a
// LIST: the informer tells stalled streams that delivered something from
// those that delivered nothing by it.
func TestWatchEventsCountsWhatWatchesDelivered(t *testing.T) {
	for _, tc := range []struct {
		mode reflector.Mode
		want uint64 // after the sync, and after one more event
	}{
		{reflector.ListWatch, 0},
		{reflector.WatchList, 3}, // two ADDED and the initial-events-end bookmark
	} {
		t.Run(fmt.Sprint(tc.mode), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src, store := newSource(), newRecorder()
				src.Create(pod("a"))
				src.Create(pod("b"))
				r := reflector.New(src, store, reflector.WithMode[*corev1.Pod](tc.mode))
				defer run(t, r)()
				synctest.Wait()
				assert.Equal(t, tc.want, r.WatchEvents(), "after the sync")
				src.Create(pod("c"))
				synctest.Wait()
				assert.Equal(t, tc.want+1, r.WatchEvents(), "after one more event")
			})
		})
	}
}
