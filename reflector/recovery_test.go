package reflector_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
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
	"github.com/listwatch/listwatch/internal/wire"
	"github.com/listwatch/listwatch/reflector"
)

// A probe counts for the watch it lets resume only: once that watch has
// opened, a later stream ended by the server going away (GOAWAY) is
// probed again. Here the server was out of reach once (refused, probed,
// found where it was), then, with the watch open, it shuts down and comes
// back restored from a backup: without a second probe the watch would
// resume from a resourceVersion the restored server has not reached, and
// the cache would never see the restored state.
func TestServerAwayAgainAfterAProbeIsProbedAgain(t *testing.T) {
	refused := fmt.Errorf("dial tcp 127.0.0.1:6443: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
	goaway := errors.New(`http2: server sent GOAWAY and closed the connection; LastStreamID=3, ErrCode=NO_ERROR, debug=""`)
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		src.AcceptFutureWatches()
		r := reflector.New(src, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch))
		backup, stop := runPastABackup(t, src, store, r)
		defer stop()

		// Out of reach for a moment: probed, found where it was, the watch
		// resumes and stays open.
		src.FailWatch(refused)
		src.CloseWatches()
		time.Sleep(time.Minute)
		synctest.Wait()
		require.EqualValues(t, 2, src.Lists.Load(), "the list, and one probe")
		require.Equal(t, []string{"a@4", "b@2", "c@3"}, store.keys())

		// Away again, with the watch open, and back restored.
		src.BreakWatches(goaway)
		src.Restore(backup) // back to resourceVersion 2
		src.Create(pod("d"))
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, sourceKeys(src), store.keys(), "the restored state, found by a second probe")
	})
}

// flakyPages fails each continue token the first time it is asked for,
// with a 503: every page after the first fails once, then is served.
type flakyPages struct {
	*fakelw.Source[*corev1.Pod]
	failed map[string]bool
	asked  []reflector.ListOptions
}

func (f *flakyPages) List(ctx context.Context, opts reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
	f.asked = append(f.asked, opts)
	if opts.Continue != "" && !f.failed[opts.Continue] {
		f.failed[opts.Continue] = true
		return reflector.ListMeta{}, fakelw.Status(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "busy")
	}
	return f.Source.List(ctx, opts, add)
}

// The bound on asking for a page again is per page: a long list over a
// connection that fails now and then, once on each page, more often in all
// than the bound, completes in one pass rather than start over (and fail
// the same way again, for ever).
func TestPageRetriesAreCountedPerPage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		for i := range 8 {
			src.Create(pod(fmt.Sprint("p", i)))
		}
		lw := &flakyPages{Source: src, failed: map[string]bool{}}
		r := reflector.New[*corev1.Pod](lw, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithPageSize[*corev1.Pod](1))
		defer run(t, r)()
		synctest.Wait()
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		require.NotEmpty(t, store.calls())
		assert.Equal(t, "replace 8@8", store.calls()[0])
		firstPages := 0
		for _, o := range lw.asked {
			if o.Continue == "" {
				firstPages++
			}
		}
		assert.Equal(t, 1, firstPages, "the list never started over: %v", lw.asked)
	})
}

// The patience with a server behind the cache is counted from the start of
// each episode: a server that was behind once, caught up and was listed,
// and falls behind again later is waited for again, behindPatience long,
// before the cache is taken back in time.
func TestServerBehindAgainIsWaitedForAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		var log errorLog
		r := reflector.New(src, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithErrorHandler[*corev1.Pod](log.add))
		backup, stop := runPastABackup(t, src, store, r)
		defer stop()

		src.Restore(backup) // behind the cache, for a minute
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Equal(t, []string{"a@4", "b@2", "c@3"}, store.keys())
		src.Create(pod("d"))
		src.Create(pod("e"))
		src.Create(pod("f")) // past the cache: listed
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		want := []string{"a@1", "b@2", "d@3", "e@4", "f@5"}
		require.Equal(t, want, store.keys())

		src.Restore(backup) // behind again, later
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, want, store.keys(), "a server behind for a minute is waited for, the second time too")
		for _, err := range log.all() {
			assert.NotErrorIs(t, err, reflector.ErrBackInTime)
		}
	})
}

// A 410 Expired answered to a list at least as new as the cache says the
// server is not behind it: an earlier "too large" no longer counts towards
// the patience. Here the server says "too large" once, is then busy for
// minutes (503s), then answers 410; its latest state, older than the cache
// (an apiserver behind the others), is then waited for as long as any
// server behind the cache is, not taken at once.
func TestExpiredListRestartsThePatience(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		var log errorLog
		r := reflector.New(src, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithErrorHandler[*corev1.Pod](log.add))
		backup, stop := runPastABackup(t, src, store, r)
		defer stop()

		faults := []error{fakelw.TooLarge(4, 2)}
		for range 16 { // more than two minutes of backoff
			faults = append(faults, fakelw.Status(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "busy"))
		}
		faults = append(faults, apierrors.NewResourceExpired("The resourceVersion for the provided list is too old."))
		src.FailList(faults...)
		src.Restore(backup) // the watch ends; the server is behind from now on
		for {
			if lists, _ := src.PendingFailures(); lists == 0 {
				break
			}
			time.Sleep(time.Second)
			synctest.Wait()
		}
		time.Sleep(90 * time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"a@4", "b@2", "c@3"}, store.keys(), "behind for 90 s since the 410: waited for")
		for _, err := range log.all() {
			assert.NotErrorIs(t, err, reflector.ErrBackInTime)
		}
	})
}

// sameRVLists is scriptedWatches whose every list is at resourceVersion 1:
// a quiet resource, whose state does not move while its watches fail.
type sameRVLists struct{ *scriptedWatches }

func (l sameRVLists) List(ctx context.Context, opts reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
	if _, err := l.scriptedWatches.List(ctx, opts, add); err != nil {
		return reflector.ListMeta{}, err
	}
	return reflector.ListMeta{ResourceVersion: "1"}, nil
}

// The count of watches stuck at one resourceVersion starts afresh after the
// relist it led to, even one at the same resourceVersion (nothing changed
// meanwhile): each relist is followed by maxStuckWatches watches again, not
// by a relist after every failed watch.
func TestStuckWatchesAreCountedAfreshAfterARelist(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spoiled := fmt.Errorf("%w: watch event 1: spoiled the same way every time", wire.ErrMalformed)
		var listsBefore []int // LISTs before each watch
		var lw *scriptedWatches
		lw = &scriptedWatches{maxWatches: 5, watch: func(int, string) reflector.Watcher[*corev1.Pod] {
			listsBefore = append(listsBefore, lw.lists) // Watch holds lw.mu
			return &eventsThen{err: spoiled}
		}}
		ctx, cancel := context.WithCancel(context.Background())
		lw.cancel = cancel
		reflector.New[*corev1.Pod](sameRVLists{lw}, newRecorder(), reflector.WithMode[*corev1.Pod](reflector.ListWatch)).Run(ctx)
		assert.Equal(t, []int{1, 1, 2, 2, 3}, listsBefore, "two watches after each list")
	})
}

// countsLists counts the LISTs (not the probes, lists of one object) and
// the streaming lists asked of a Source.
type countsLists struct {
	*fakelw.Source[*corev1.Pod]
	lists, streaming atomic.Int32
}

func (c *countsLists) List(ctx context.Context, opts reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
	if opts.Limit != 1 {
		c.lists.Add(1)
	}
	return c.Source.List(ctx, opts, add)
}

func (c *countsLists) Watch(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	if opts.SendInitialEvents {
		c.streaming.Add(1)
	}
	return c.Source.Watch(ctx, opts)
}

// Watches that fail for a long while, lists working (a proxy that breaks
// watches, an apiserver failing them with 5xx), are resumed, never
// relisted (DESIGN.md: "429 and 5xx: ... do not relist"): once the server
// serves them again, the watch brings what changed meanwhile. (client-go
// relists after a watch refused with 500, 503 or 504.)
func TestWatchesThatFailForAWhileResumeWithoutRelisting(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for name, err := range map[string]error{
		"500":   fakelw.Status(http.StatusInternalServerError, metav1.StatusReasonInternalError, "etcdserver: leader changed"),
		"503":   fakelw.Status(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "no endpoints"),
		"504":   fakelw.Status(http.StatusGatewayTimeout, metav1.StatusReasonTimeout, "gateway timeout"),
		"429":   fakelw.Status(http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "too many requests"),
		"reset": reset,
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src, store := newSource(), newRecorder()
				src.Create(pod("a"))
				lw := &countsLists{Source: src}
				r := reflector.New[*corev1.Pod](lw, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch))
				defer run(t, r)()
				synctest.Wait()
				errs := make([]error, 40) // about 20 minutes at the backoff's cap
				for i := range errs {
					errs[i] = err
				}
				src.FailWatch(errs...)
				src.BreakWatches(reset)
				p := pod("a")
				p.Labels = map[string]string{"v": "2"}
				src.Update(p)
				time.Sleep(10 * time.Minute)
				synctest.Wait()
				require.NotEqual(t, sourceKeys(src), store.keys(), "the watches still fail")
				time.Sleep(30 * time.Minute)
				synctest.Wait()
				_, pending := src.PendingFailures()
				require.Zero(t, pending, "watch failures not yet served")
				assert.Equal(t, sourceKeys(src), store.keys(), "once watches are served again; calls: %v", store.calls())
				assert.Equal(t, int32(1), lw.lists.Load(), "LISTs")
			})
		})
	}
}

// WithRelistInterval's relist comes on time while no watch is open for
// its timer to close: watches that keep failing, which are otherwise
// resumed for as long as they fail.
func TestRelistIntervalWhileWatchesFail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		src.Create(pod("a"))
		lw := &countsLists{Source: src}
		r := reflector.New[*corev1.Pod](lw, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithRelistInterval[*corev1.Pod](time.Minute))
		defer run(t, r)()
		synctest.Wait()
		errs := make([]error, 10000)
		for i := range errs {
			errs[i] = fakelw.Status(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "no endpoints")
		}
		src.FailWatch(errs...)
		src.BreakWatches(&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET})
		p := pod("a")
		p.Labels = map[string]string{"v": "2"}
		src.Update(p)
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		assert.Equal(t, sourceKeys(src), store.keys(), "WithRelistInterval(1m), 10 min of failed watches; calls: %v", store.calls())
		// One a minute (and up to a tenth later, and a backoff's wait).
		assert.GreaterOrEqual(t, int(lw.lists.Load()), 7, "lists in 10 minutes")
	})
}

// stallsOnce's first streaming list goes quiet (the watchdog's
// ErrStalled) before its end bookmark; every later request is the Source's.
type stallsOnce struct {
	*countsLists
	stalled atomic.Bool
}

func (s *stallsOnce) Watch(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	if opts.SendInitialEvents && !s.stalled.Swap(true) {
		s.streaming.Add(1)
		return &stalledWatcher{}, nil
	}
	return s.countsLists.Watch(ctx, opts)
}

// A streaming list that went quiet once (a connection lost during the
// initial events) is followed by a LIST, and the next refill streams
// again, as after one that ended early. It turned streaming off for the
// Reflector's life; client-go streams again at every relist.
func TestOneQuietStreamingListDoesNotTurnStreamingOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("a"))
		lw := &stallsOnce{countsLists: &countsLists{Source: src}}
		r := reflector.New[*corev1.Pod](lw, newRecorder())
		defer run(t, r)()
		time.Sleep(2 * time.Minute) // past the stall
		synctest.Wait()
		require.Equal(t, int32(1), lw.lists.Load(), "a LIST after the quiet streaming list")
		time.Sleep(time.Minute)
		src.BreakWatches(fakelw.Status(http.StatusGone, metav1.StatusReasonExpired, "too old resource version"))
		synctest.Wait()
		assert.Equal(t, int32(2), lw.streaming.Load(), "streaming lists asked for, the relist after a 410 included")
		assert.Equal(t, int32(1), lw.lists.Load(), "LISTs")
	})
}

// alwaysStalls: every streaming list goes quiet before its end bookmark.
type alwaysStalls struct{ *countsLists }

func (s *alwaysStalls) Watch(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	if opts.SendInitialEvents {
		s.streaming.Add(1)
		return &stalledWatcher{}, nil
	}
	return s.countsLists.Watch(ctx, opts)
}

// A server whose streaming lists always go quiet costs two of them (an
// idle timeout each) before Auto gives up streaming, however far apart
// the refills: counted by time, as lists that end early are, refills more
// than an hour apart waited the idle timeout every time.
func TestAlwaysQuietStreamingListsAreGivenUp(t *testing.T) {
	for _, every := range []time.Duration{30 * time.Minute, 2 * time.Hour} {
		t.Run(every.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := newSource()
				src.Create(pod("a"))
				lw := &alwaysStalls{&countsLists{Source: src}}
				r := reflector.New[*corev1.Pod](lw, newRecorder(), reflector.WithRelistInterval[*corev1.Pod](every))
				defer run(t, r)()
				time.Sleep(12 * time.Hour)
				synctest.Wait()
				assert.Equal(t, int32(2), lw.streaming.Load(), "quiet streaming lists in 12 h, relisting every %v", every)
				assert.Greater(t, lw.lists.Load(), int32(5), "LISTs in 12 h")
			})
		})
	}
}
