package informer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/indexer"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/internal/fakelw"
	"github.com/listwatch/listwatch/internal/rest"
	"github.com/listwatch/listwatch/listwatchtest"
	"github.com/listwatch/listwatch/reflector"
)

// A Factory of 50 informers, one simulated hour of one failure, then the
// server back: each informer logs the failure when it starts, a reminder
// every 5 minutes (at Error once it has lasted 5 minutes), and its end at
// Info, not a warning for each of its ~165 retries (8,000 an hour for the
// Factory, each saying the same). Their retries stay spread, a Retry-After
// past the backoff's maximum included.
func TestFailuresAreLoggedOncePerKindAndTheirEnd(t *testing.T) {
	const n = 50
	refused := &url.Error{Op: "Get", URL: "https://10.0.0.1:6443/api/v1/pods?watch=1",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	status := func(code int32, reason metav1.StatusReason, retryAfter time.Duration) error {
		return &rest.APIError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason}, Method: "GET", RetryAfter: retryAfter}
	}
	for name, failure := range map[string]error{
		"connection refused":     refused,
		"403":                    status(403, metav1.StatusReasonForbidden, 0),
		"429, Retry-After 1 min": status(429, metav1.StatusReasonTooManyRequests, time.Minute),
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var logs logCapture
				src := listwatchtest.NewSource[*corev1.Pod]()
				var down atomic.Bool
				down.Store(true)
				var calls callInstants
				f, err := informer.NewFactory(nil,
					informer.WithFactoryLogger(slog.New(&logs)),
					informer.WithListerWatcherFor(func(tg reflector.Target) (reflector.ListerWatcher[*corev1.Pod], error) {
						lw, err := src.For(tg)
						return failingLW{ListerWatcher: lw, down: &down, err: failure, calls: &calls}, err
					}))
				if err != nil {
					t.Fatal(err)
				}
				for i := range n {
					if _, err := informer.For[*corev1.Pod](f, reflector.Target{Namespace: fmt.Sprintf("ns-%02d", i)}); err != nil {
						t.Fatal(err)
					}
				}
				ctx, cancel := context.WithCancel(t.Context())
				defer f.Shutdown()
				defer cancel()
				f.Start(ctx)
				start := time.Now()
				time.Sleep(time.Hour)
				failing := logs.count(slog.LevelWarn) + logs.count(slog.LevelError)
				down.Store(false)
				time.Sleep(2 * time.Minute)

				// The first, and one every 5 minutes: 13 an hour.
				if perInformer := float64(failing) / n; perInformer > 15 {
					t.Errorf("%.1f warnings and errors per informer in an hour of one failure, want at most 15", perInformer)
				}
				if logs.count(slog.LevelError) == 0 {
					t.Error("an hour of failures logged no error")
				}
				if got := logs.withMessage(slog.LevelInfo, "informer: list/watch recovered"); got != n {
					t.Errorf("%d of %d informers logged that they watch again", got, n)
				}
				if most := calls.most(start.Add(10 * time.Minute)); most > n/5 {
					t.Errorf("%d of %d informers retried at one instant: their retries are not spread", most, n)
				}
			})
		})
	}
}

// Healthy operation logs nothing at Info or above: 50 informers whose
// watches end every 6 s, with a 410 on resume now and then (an apiserver
// restarted), for a simulated hour.
func TestHealthyOperationLogsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs logCapture
		src := listwatchtest.NewSource[*corev1.Pod]()
		f, err := informer.NewFactory(nil,
			informer.WithFactoryLogger(slog.New(&logs)),
			informer.WithListerWatcherFor(src.For))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 50 {
			if _, err := informer.For[*corev1.Pod](f, reflector.Target{Namespace: fmt.Sprintf("ns-%02d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer f.Shutdown()
		defer cancel()
		f.Start(ctx)
		for s := range 1200 {
			src.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%02d", s%50), Name: fmt.Sprintf("p%d", s)}})
			time.Sleep(3 * time.Second)
			if s%2 == 0 {
				src.CloseWatches()
			}
			if s%400 == 399 {
				for range 50 {
					src.FailWatch(fakelw.Status(410, metav1.StatusReasonExpired, "too old resource version"))
				}
			}
		}
		loud := 0
		for _, r := range logs.records() {
			if r.Level >= slog.LevelInfo {
				if loud++; loud == 1 {
					var attrs []string
					r.Attrs(func(a slog.Attr) bool { attrs = append(attrs, a.String()); return true })
					t.Errorf("healthy operation logged at %s: %q %v", r.Level, r.Message, attrs)
				}
			}
		}
		if loud > 1 {
			t.Errorf("and %d more records at Info or above", loud-1)
		}
	})
}

// failingLW fails every List and Watch with err while down is set, noting
// the instant of each call.
type failingLW struct {
	reflector.ListerWatcher[*corev1.Pod]
	down  *atomic.Bool
	err   error
	calls *callInstants
}

func (l failingLW) List(ctx context.Context, o reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
	if l.down.Load() {
		l.calls.add()
		return reflector.ListMeta{}, l.err
	}
	return l.ListerWatcher.List(ctx, o, add)
}

func (l failingLW) Watch(ctx context.Context, o reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	if l.down.Load() {
		l.calls.add()
		return nil, l.err
	}
	return l.ListerWatcher.Watch(ctx, o)
}

// callInstants counts the calls made at each instant of a synctest
// bubble's clock, where informers that retry together call at one instant.
type callInstants struct {
	mu sync.Mutex
	at map[time.Time]int
}

func (c *callInstants) add() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at == nil {
		c.at = map[time.Time]int{}
	}
	c.at[time.Now()]++
}

// most returns the most calls made at one instant after from.
func (c *callInstants) most(from time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := 0
	for at, k := range c.at {
		if at.After(from) {
			m = max(m, k)
		}
	}
	return m
}

// logCapture is a slog.Handler that keeps every record.
type logCapture struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (c *logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (c *logCapture) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *logCapture) WithGroup(string) slog.Handler            { return c }
func (c *logCapture) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recs = append(c.recs, r.Clone())
	return nil
}

func (c *logCapture) records() []slog.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]slog.Record(nil), c.recs...)
}

// count returns how many records were logged at level.
func (c *logCapture) count(level slog.Level) int {
	n := 0
	for _, r := range c.records() {
		if r.Level == level {
			n++
		}
	}
	return n
}

// withMessage returns how many records were logged at level with msg.
func (c *logCapture) withMessage(level slog.Level, msg string) int {
	n := 0
	for _, r := range c.records() {
		if r.Level == level && r.Message == msg {
			n++
		}
	}
	return n
}

// An object the informer could not index, once, at start (logged, as it
// should be), must not turn a routine 410 an hour later into an Error
// "list/watch failing" record that says the informer has been failing
// for an hour: the apply loop's error is not a list/watch failure, and no
// accepted watch ever ends its "run".
func TestApplyErrorDoesNotMakeALaterRoutine410AnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs logCapture
		src := listwatchtest.NewSource[*corev1.Pod]()
		src.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bad"}})
		inf := informer.New[*corev1.Pod](src,
			informer.WithLogger[*corev1.Pod](slog.New(&logs)),
			informer.WithIndexers(indexer.Indexers[*corev1.Pod]{
				"byName": func(p *corev1.Pod) ([]string, error) {
					if p.Name == "bad" {
						return nil, errors.New("cannot index it")
					}
					return []string{p.Name}, nil
				},
			}))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go inf.Run(ctx)
		synctest.Wait()
		before := len(logs.records()) // the index error, at Warn: fine

		time.Sleep(time.Hour)
		src.FailWatch(fakelw.Status(410, metav1.StatusReasonExpired, "too old resource version"))
		src.CloseWatches()
		time.Sleep(time.Minute)
		synctest.Wait()
		for _, r := range logs.records()[before:] {
			if r.Level >= slog.LevelInfo && r.Message != "informer: an object was skipped" { // the relist applies it again
				var attrs []string
				r.Attrs(func(a slog.Attr) bool { attrs = append(attrs, a.String()); return true })
				t.Errorf("a routine 410 an hour after an index error logged at %s: %q %v", r.Level, r.Message, attrs)
			}
		}
		cancel()
		synctest.Wait()
	})
}

// An apiserver behind a load balancer, restarting for an hour: some
// retries are refused at the TCP level, others answered 503 by the load
// balancer. Two kinds of failure that alternate are still one run: they
// must not log a warning per retry, as before the failure log.
func TestAlternatingFailuresAreThrottledToo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs logCapture
		src := listwatchtest.NewSource[*corev1.Pod]()
		refused := &url.Error{Op: "Get", URL: "https://10.0.0.1:6443/api/v1/pods",
			Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
		unavailable := &rest.APIError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 503, Reason: metav1.StatusReasonServiceUnavailable}, Method: "GET"}
		var calls atomic.Int64
		var down atomic.Bool
		down.Store(true)
		lw := alternatingLW{ListerWatcher: src, down: &down, calls: &calls, errs: []error{refused, unavailable}}
		inf := informer.New[*corev1.Pod](lw, informer.WithLogger[*corev1.Pod](slog.New(&logs)))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go inf.Run(ctx)
		time.Sleep(time.Hour)
		down.Store(false)
		time.Sleep(2 * time.Minute)
		failing := logs.count(slog.LevelWarn) + logs.count(slog.LevelError)
		if failing > 2*15 {
			t.Errorf("%d warnings and errors for %d retries in an hour of one outage of two kinds, want at most 15 for each", failing, calls.Load())
		}
		cancel()
		synctest.Wait()
	})
}

type alternatingLW struct {
	reflector.ListerWatcher[*corev1.Pod]
	down  *atomic.Bool
	calls *atomic.Int64
	errs  []error
}

func (l alternatingLW) List(ctx context.Context, o reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
	if l.down.Load() {
		return reflector.ListMeta{}, l.errs[l.calls.Add(1)%int64(len(l.errs))]
	}
	return l.ListerWatcher.List(ctx, o, add)
}

func (l alternatingLW) Watch(ctx context.Context, o reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	if l.down.Load() {
		return nil, l.errs[l.calls.Add(1)%int64(len(l.errs))]
	}
	return l.ListerWatcher.Watch(ctx, o)
}

// An object the reflector rejects in a watch (no resourceVersion, a "/" in
// its name: ErrRejected, not ErrSkipped) is skipped while the watch goes
// on. It is an object skipped, a warning of its own: not a "list/watch
// failing; retrying with backoff" that nothing retries, followed by a
// "list/watch recovered" when the next watch opens, and not the start of a run
// that makes a routine 410 later an Error.
func TestRejectedObjectIsNotAListWatchFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs logCapture
		src := listwatchtest.NewSource[*corev1.Pod]()
		var injected atomic.Bool
		lw := rejectingLW{ListerWatcher: src, injected: &injected}
		inf := informer.New[*corev1.Pod](lw, informer.WithLogger[*corev1.Pod](slog.New(&logs)))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go inf.Run(ctx)
		synctest.Wait()
		time.Sleep(time.Hour) // watches end and open again meanwhile
		src.FailWatch(fakelw.Status(410, metav1.StatusReasonExpired, "too old resource version"))
		src.CloseWatches()
		time.Sleep(time.Minute)
		synctest.Wait()
		if !injected.Load() {
			t.Fatal("no rejected object was sent")
		}
		if n := logs.withMessage(slog.LevelWarn, "informer: an object was skipped"); n != 1 {
			t.Errorf("%d warnings of an object skipped, want 1", n)
		}
		for _, r := range logs.records() {
			if r.Level >= slog.LevelInfo && r.Message != "informer: an object was skipped" {
				var attrs []string
				r.Attrs(func(a slog.Attr) bool { attrs = append(attrs, a.String()); return true })
				t.Errorf("one rejected object logged at %s: %q %v", r.Level, r.Message, attrs)
			}
		}
		cancel()
		synctest.Wait()
	})
}

// A resource that is listed but not watched (componentstatuses) ends a run
// of failures with a list stored, as other resources do with a watch
// accepted: a failure an hour later is a new run, logged as a warning, not
// an error of a run that seems to have lasted the hour.
func TestUnversionedListEndsARunOfFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs logCapture
		lw := &unversionedLW{phases: map[string]corev1.PodPhase{"a": corev1.PodPending}}
		lw.fail.Store(1)
		inf := informer.New[*corev1.Pod](lw, informer.WithLogger[*corev1.Pod](slog.New(&logs)),
			informer.WithReflectorOptions(reflector.WithMode[*corev1.Pod](reflector.ListWatch)))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go inf.Run(ctx)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if !inf.HasSynced() {
			t.Fatal("not synced after the failed list and the backoff")
		}
		if n := logs.withMessage(slog.LevelWarn, "informer: list/watch failing; retrying with backoff"); n != 1 {
			t.Errorf("%d warnings of the failing list, want 1", n)
		}
		if n := logs.withMessage(slog.LevelInfo, "informer: list/watch recovered"); n != 1 {
			t.Errorf("%d records of the end of the failures, want 1", n)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		lw.fail.Store(lw.lists.Load() + 1) // the next list fails
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := logs.count(slog.LevelError); n != 0 {
			t.Errorf("%d errors logged for one failed list an hour after the last", n)
		}
		if n := logs.withMessage(slog.LevelWarn, "informer: list/watch failing; retrying with backoff"); n != 2 {
			t.Errorf("%d warnings of a failing list, want 2", n)
		}
		cancel()
		synctest.Wait()
	})
}

// rejectingLW's first watch sends, first, a pod without a resourceVersion.
type rejectingLW struct {
	reflector.ListerWatcher[*corev1.Pod]
	injected *atomic.Bool
}

func (l rejectingLW) Watch(ctx context.Context, o reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	w, err := l.ListerWatcher.Watch(ctx, o)
	if err != nil || l.injected.Swap(true) {
		return w, err
	}
	return &rejectingWatcher{Watcher: w}, nil
}

type rejectingWatcher struct {
	reflector.Watcher[*corev1.Pod]
	sent bool
}

func (w *rejectingWatcher) Next() (reflector.Event[*corev1.Pod], error) {
	if !w.sent {
		w.sent = true
		return reflector.Event[*corev1.Pod]{Type: reflector.Added,
			Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "no-rv"}}}, nil
	}
	return w.Watcher.Next()
}

// A watch stream the watchdog closes (reflector.ErrStalled) is reopened at
// once. Behind a proxy that drops bookmarks, every stream of a quiet
// resource stalls, for good, and the client cannot tell that from a proxy
// that forwards nothing: a warning once a second stall in a row finds the
// cache where the first left it, then a reminder every 5 minutes (at Error
// after 5), not a warning and a "recovered" every 90 s. Stalls with events
// between them, which move the cache, log nothing above Debug.
func TestStalledWatchesAreLoggedOnceTheyRepeat(t *testing.T) {
	for name, tc := range map[string]struct {
		eventEvery time.Duration // 0: none
		wantLoud   bool
	}{
		"a quiet resource":         {0, true},
		"an event every 2 minutes": {2 * time.Minute, false},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var logs logCapture
				src := listwatchtest.NewSource[*corev1.Pod]()
				src.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p0"}})
				inf := informer.New[*corev1.Pod](stallingLW{src},
					informer.WithLogger[*corev1.Pod](slog.New(&logs)))
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				done := make(chan struct{})
				go func() { defer close(done); inf.Run(ctx) }()
				for i := 1; i <= 60; i++ {
					if tc.eventEvery == 0 {
						time.Sleep(time.Minute)
						continue
					}
					time.Sleep(tc.eventEvery)
					src.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%d", i)}})
				}
				cancel()
				<-done

				loud := logs.count(slog.LevelWarn) + logs.count(slog.LevelError)
				recovered := logs.withMessage(slog.LevelInfo, "informer: list/watch recovered")
				switch {
				case !tc.wantLoud && loud+recovered > 0:
					t.Errorf("%d warnings and errors and %d recoveries for streams that stalled between events", loud, recovered)
				case tc.wantLoud && (loud == 0 || loud > 13 || logs.count(slog.LevelError) == 0):
					t.Errorf("%d warnings and errors (%d errors) in an hour of streams that stall and deliver nothing, want 1 to 13 with an error",
						loud, logs.count(slog.LevelError))
				case tc.wantLoud && recovered > 0:
					t.Errorf("%d recoveries logged for streams that never delivered", recovered)
				}
			})
		})
	}
}

// stallingLW is a proxy that drops bookmarks (but a streaming list's last)
// in front of a ListerWatcher, seen through the HTTP watcher's watchdog:
// a stream that delivers no event for 90 s fails with reflector.ErrStalled.
type stallingLW struct {
	reflector.ListerWatcher[*corev1.Pod]
}

func (l stallingLW) Watch(ctx context.Context, o reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	w, err := l.ListerWatcher.Watch(ctx, o)
	if err != nil {
		return nil, err
	}
	s := &stallingWatcher{Watcher: w, events: make(chan stallingResult), closed: make(chan struct{})}
	s.pump.Go(s.forward)
	return s, nil
}

type stallingResult struct {
	ev  reflector.Event[*corev1.Pod]
	err error
}

type stallingWatcher struct {
	reflector.Watcher[*corev1.Pod]
	events    chan stallingResult
	closed    chan struct{}
	closeOnce sync.Once
	pump      sync.WaitGroup
}

// forward hands on the inner stream's events, but bookmarks, until it
// ends or the watcher is closed.
func (s *stallingWatcher) forward() {
	for {
		ev, err := s.Watcher.Next()
		if err == nil && ev.Type == reflector.Bookmark && ev.Object.GetAnnotations()[reflector.InitialEventsEndAnnotation] == "" {
			continue
		}
		select {
		case s.events <- stallingResult{ev, err}:
		case <-s.closed:
			return
		}
		if err != nil {
			return
		}
	}
}

func (s *stallingWatcher) Next() (reflector.Event[*corev1.Pod], error) {
	select {
	case r := <-s.events:
		return r.ev, r.err
	case <-s.closed:
		return reflector.Event[*corev1.Pod]{}, net.ErrClosed
	case <-time.After(90 * time.Second):
		return reflector.Event[*corev1.Pod]{}, fmt.Errorf("%w: no data for 90s", reflector.ErrStalled)
	}
}

func (s *stallingWatcher) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	err := s.Watcher.Close()
	s.pump.Wait()
	return err
}

// unansweredLW is the HTTP ListerWatcher's Watch when its request gets no
// answer within the idle timeout (reflector/http.go): reflector.ErrNoAnswer,
// before any stream was accepted.
type unansweredLW struct {
	reflector.ListerWatcher[*corev1.Pod]
	hang *atomic.Bool
}

func (l unansweredLW) Watch(ctx context.Context, o reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	if l.hang.Load() {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(90 * time.Second):
			return nil, fmt.Errorf("%w for %s", reflector.ErrNoAnswer, 90*time.Second)
		}
	}
	return l.ListerWatcher.Watch(ctx, o)
}

// A watch request that gets no answer is a failed watch (it is retried
// after the backoff, never accepted): WithLogger says the first is a
// warning and the end of the run is logged at Info.
func TestUnansweredWatchesAreFailuresNotStalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs logCapture
		src := listwatchtest.NewSource[*corev1.Pod]()
		src.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p0"}})
		var hang atomic.Bool
		inf := informer.New[*corev1.Pod](unansweredLW{src, &hang},
			informer.WithLogger[*corev1.Pod](slog.New(&logs)))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); inf.Run(ctx) }()
		time.Sleep(time.Minute)
		hang.Store(true)
		src.CloseWatches()
		time.Sleep(100 * time.Second) // the first watch without an answer
		firstWarn := logs.count(slog.LevelWarn) + logs.count(slog.LevelError)
		time.Sleep(20 * time.Minute)
		hang.Store(false)
		time.Sleep(2 * time.Minute)
		cancel()
		<-done
		loud := logs.count(slog.LevelWarn) + logs.count(slog.LevelError)
		recovered := logs.withMessage(slog.LevelInfo, "informer: list/watch recovered")
		for _, r := range logs.records() {
			if r.Level >= slog.LevelInfo {
				t.Logf("%s %s", r.Level, r.Message)
			}
		}
		if firstWarn == 0 {
			t.Errorf("the first watch request without an answer logged nothing above Debug")
		}
		if loud > 0 && recovered == 0 {
			t.Errorf("%d warnings/errors about watches without an answer, and no record of their end once watches were answered again", loud)
		}
	})
}

// bookmarkingLW: its first watch stalls (nothing for 90 s), its second
// delivers a BOOKMARK (at the unchanged resourceVersion of a quiet
// resource) every minute for ten minutes and then stalls, the later ones
// stay open and quiet.
type bookmarkingLW struct {
	reflector.ListerWatcher[*corev1.Pod]
	src     *listwatchtest.Source[*corev1.Pod]
	watches *atomic.Int32
}

func (l bookmarkingLW) Watch(ctx context.Context, o reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	return &bookmarkingWatcher{n: l.watches.Add(1), rv: l.src.ResourceVersion(), closed: make(chan struct{})}, nil
}

type bookmarkingWatcher struct {
	n, sent int32
	rv      string
	closed  chan struct{}
	once    sync.Once
}

func (w *bookmarkingWatcher) Next() (reflector.Event[*corev1.Pod], error) {
	wait := time.Duration(1 << 62)
	switch {
	case w.n == 1 || (w.n == 2 && w.sent == 10):
		wait = 90 * time.Second
	case w.n == 2:
		wait = time.Minute
	}
	select {
	case <-w.closed:
		return reflector.Event[*corev1.Pod]{}, net.ErrClosed
	case <-time.After(wait):
	}
	if w.n == 2 && w.sent < 10 {
		w.sent++
		return reflector.Event[*corev1.Pod]{Type: reflector.Bookmark,
			Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: w.rv}}}, nil
	}
	return reflector.Event[*corev1.Pod]{}, fmt.Errorf("%w: no data for 90s", reflector.ErrStalled)
}

func (w *bookmarkingWatcher) Close() error { w.once.Do(func() { close(w.closed) }); return nil }

// Two stalls ten minutes apart, with a stream between them that delivered
// a bookmark every minute: not "watch streams keep stalling with nothing
// delivered", and no Error.
func TestStallsWithBookmarksBetweenThemAreNotARow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs logCapture
		src := listwatchtest.NewSource[*corev1.Pod]()
		src.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p0"}})
		var watches atomic.Int32
		inf := informer.New[*corev1.Pod](bookmarkingLW{src, src, &watches},
			informer.WithLogger[*corev1.Pod](slog.New(&logs)),
			informer.WithReflectorOptions(reflector.WithMode[*corev1.Pod](reflector.ListWatch)))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); inf.Run(ctx) }()
		time.Sleep(20 * time.Minute)
		cancel()
		<-done
		if n := watches.Load(); n != 3 {
			t.Fatalf("%d watches, want 3", n)
		}
		for _, r := range logs.records() {
			if r.Level >= slog.LevelWarn {
				r.Attrs(func(a slog.Attr) bool { t.Logf("  %s=%v", a.Key, a.Value); return true })
				t.Errorf("%s %q", r.Level, r.Message)
			}
		}
	})
}
