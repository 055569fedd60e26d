package processor_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/processor"
)

// Every test that runs goroutines runs in a synctest bubble: synctest.Wait
// lets the listeners settle without sleeping, a deadlock (a Distribute that
// waits for a handler, say) fails the test instead of hanging it, and the
// bubble fails if any goroutine is left over at the end.

func TestDeliveryInOrderToEveryListener(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := processor.New[*corev1.Pod]()
		a, b := &recorder{}, &recorder{}
		p.AddListener(a, processor.ListenerOptions{})
		p.AddListener(b, processor.ListenerOptions{})
		stop := run(p)
		defer stop()

		var want []string
		for i := range 100 {
			name := fmt.Sprint("p", i%7)
			switch i % 3 {
			case 0:
				p.Distribute(addOf(name, fmt.Sprint(i), i < 10), false)
				want = append(want, fmt.Sprintf("Add ns/%s %d", name, i)+map[bool]string{true: " initial"}[i < 10])
			case 1:
				p.Distribute(updateOf(name, fmt.Sprint(i-1), fmt.Sprint(i)), false)
				want = append(want, fmt.Sprintf("Update ns/%s %d->%d", name, i-1, i))
			case 2:
				p.Distribute(deleteOf(name, fmt.Sprint(i), i%2 == 0), false)
				want = append(want, fmt.Sprintf("Delete ns/%s %d", name, i)+map[bool]string{true: " unknown"}[i%2 == 0])
			}
		}
		synctest.Wait()
		checkLines(t, "listener a", a, want)
		checkLines(t, "listener b", b, want)
	})
}

func TestBlockedHandlerDelaysNoOtherListener(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := processor.New[*corev1.Pod]()
		release := make(gate)
		blocked := &recorder{before: func(string) { release.wait() }}
		lb := p.AddListener(blocked, processor.ListenerOptions{})
		const n = 1000
		allSeen := make(chan struct{})
		var seen atomic.Int64
		p.AddListener(processor.HandlerFuncs[*corev1.Pod]{
			UpdateFunc: func(_, _ *corev1.Pod) {
				if seen.Add(1) == n {
					close(allSeen)
				}
			},
		}, processor.ListenerOptions{})
		stop := run(p)
		defer stop()

		var want []string
		for i := range n {
			p.Distribute(updateOf("a", fmt.Sprint(i), fmt.Sprint(i+1)), false)
			want = append(want, fmt.Sprintf("Update ns/a %d->%d", i, i+1))
		}
		<-allSeen // the other listener got everything while the first one is stuck
		synctest.Wait()
		if got := len(blocked.lines()); got != 0 {
			t.Fatalf("blocked handler finished %d calls, want 0", got)
		}
		if got := lb.Pending(); got != n {
			t.Errorf("blocked listener has %d pending, want %d", got, n)
		}

		release.open()
		synctest.Wait()
		checkLines(t, "the formerly blocked listener", blocked, want)
		if got := lb.Pending(); got != 0 {
			t.Errorf("%d pending after catching up, want 0", got)
		}
	})
}

// The logger's handler is user code too: one that blocks while a listener
// starts (a log shipper that stalls, say) holds up that listener alone,
// not delivery to the others. Outside a bubble: a goroutine waiting for a
// mutex is not durably blocked, so the old failure (Distribute waiting
// for AddListener's lock) would hang a bubble; here it fails the deadline.
func TestBlockedLoggerDelaysNoOtherListener(t *testing.T) {
	release, entered := make(gate), make(chan struct{})
	var blocking atomic.Bool
	logger := slog.New(blockingLog{block: func(msg string) {
		// The next listener to start, from here on: the second.
		if msg == "processor: listener started" && blocking.CompareAndSwap(true, false) {
			close(entered)
			release.wait()
		}
	}})
	p := processor.New[*corev1.Pod](processor.WithLogger(logger))
	seen := make(chan string, 10)
	p.AddListener(processor.HandlerFuncs[*corev1.Pod]{AddFunc: func(obj *corev1.Pod, _ bool) {
		seen <- obj.Name
	}}, processor.ListenerOptions{})
	stop := run(p)
	defer stop()
	defer release.open() // last in, first out: before stop, on every path
	// expect fails the test unless the first listener gets want in 10 s.
	expect := func(want, while string) {
		t.Helper()
		select {
		case name := <-seen:
			if name != want {
				t.Fatalf("the first listener got %q, want %s", name, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the first listener got nothing in 10s%s", while)
		}
	}
	// The first listener has started (and logged so) once it handled one:
	// the record that blocks below can only be the second's.
	p.Distribute(addOf("first", "1", false), false)
	expect("first", "")

	blocking.Store(true)
	go p.AddListener(processor.HandlerFuncs[*corev1.Pod]{}, processor.ListenerOptions{})
	<-entered // the logger is blocked in the second listener's start
	go p.Distribute(addOf("a", "1", false), false)
	expect("a", " while the logger blocked a listener's start")
}

// blockingLog is a slog.Handler that calls block with every message.
type blockingLog struct{ block func(msg string) }

func (h blockingLog) Enabled(context.Context, slog.Level) bool      { return true }
func (h blockingLog) Handle(_ context.Context, r slog.Record) error { h.block(r.Message); return nil }
func (h blockingLog) WithAttrs([]slog.Attr) slog.Handler            { return h }
func (h blockingLog) WithGroup(string) slog.Handler                 { return h }

func TestPanickingHandlerIsReportedAndGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var errs errorLog
		p := processor.New[*corev1.Pod](processor.WithErrorHandler(errs.report))
		boom := errors.New("boom")
		panicky := &recorder{before: func(line string) {
			if strings.Contains(line, "ns/bad") {
				panic(boom)
			}
		}}
		calm := &recorder{}
		p.AddListener(panicky, processor.ListenerOptions{})
		p.AddListener(calm, processor.ListenerOptions{})
		stop := run(p)
		defer stop()

		p.Distribute(addOf("good", "1", false), false)
		p.Distribute(updateOf("bad", "1", "2"), false)
		p.Distribute(updateOf("good", "1", "2"), false)
		synctest.Wait()

		checkLines(t, "panicking listener", panicky, []string{"Add ns/good 1", "Update ns/good 1->2"})
		checkLines(t, "other listener", calm, []string{"Add ns/good 1", "Update ns/bad 1->2", "Update ns/good 1->2"})

		reported := errs.all()
		if len(reported) != 1 {
			t.Fatalf("reported %v, want one error", reported)
		}
		var pe *processor.HandlerPanicError
		if !errors.As(reported[0], &pe) {
			t.Fatalf("reported %T, want *processor.HandlerPanicError", reported[0])
		}
		if pe.Kind != processor.Update || pe.Key != "ns/bad" || pe.Value != boom {
			t.Errorf("got Kind=%v Key=%q Value=%v, want Update, ns/bad, boom", pe.Kind, pe.Key, pe.Value)
		}
		if !errors.Is(pe, boom) {
			t.Errorf("errors.Is(%v, boom) = false, want true", pe)
		}
		if !strings.Contains(string(pe.Stack), "processor_test.TestPanickingHandlerIsReportedAndGoesOn") {
			t.Errorf("stack does not show where the panic was:\n%s", pe.Stack)
		}
		msg := pe.Error()
		for _, want := range []string{"listener 1", "*processor_test.recorder", "Update", `"ns/bad"`, "boom"} {
			if !strings.Contains(msg, want) {
				t.Errorf("message %q does not contain %q", msg, want)
			}
		}
	})
}

// A handler that ends its goroutine (runtime.Goexit, which t.FailNow calls)
// is reported like a panic, and its listener goes on: it used to stop
// delivering, silently, and buffer for ever.
func TestHandlerCallingGoexitIsReportedAndGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var errs errorLog
		p := processor.New[*corev1.Pod](processor.WithErrorHandler(errs.report))
		quitter := &recorder{before: func(line string) {
			if strings.Contains(line, "ns/bad") {
				runtime.Goexit()
			}
		}}
		l := p.AddListener(quitter, processor.ListenerOptions{})
		stop := run(p)
		defer stop()

		p.Distribute(addOf("bad", "1", false), false)
		p.Distribute(addOf("good", "1", false), false)
		synctest.Wait()

		checkLines(t, "listener", quitter, []string{"Add ns/good 1"})
		if n := l.Pending(); n != 0 {
			t.Errorf("Pending() = %d, want 0", n)
		}
		reported := errs.all()
		if len(reported) != 1 {
			t.Fatalf("reported %v, want one error", reported)
		}
		var pe *processor.HandlerPanicError
		if !errors.As(reported[0], &pe) || pe.Key != "ns/bad" || !strings.Contains(pe.Error(), "runtime.Goexit") {
			t.Errorf("reported %v, want a HandlerPanicError for ns/bad naming runtime.Goexit", reported[0])
		}
	})
}

func TestPanicIsLoggedWithoutErrorHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&buf, nil))
		p := processor.New[*corev1.Pod](processor.WithLogger(logger))
		p.AddListener(processor.HandlerFuncs[*corev1.Pod]{
			AddFunc: func(*corev1.Pod, bool) { panic("oops") },
		}, processor.ListenerOptions{})
		stop := run(p)
		p.Distribute(addOf("a", "1", false), false)
		synctest.Wait()
		stop()
		out := buf.String()
		for _, want := range []string{"level=ERROR", "handler panicked", "key=ns/a", "panic=oops", "kind=Add"} {
			if !strings.Contains(out, want) {
				t.Errorf("log %q does not contain %q", out, want)
			}
		}
	})
}

// A handler that panics on every notification (a poison object in a busy
// informer) logs one record with the stack a minute, not one per panic:
// each carries kilobytes of stack, hundreds of megabytes an hour. The next
// record counts the panics not logged since; the ones between go to Debug.
func TestPanicsAreLoggedOnceAMinute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&buf, nil)) // Info and up
		p := processor.New[*corev1.Pod](processor.WithLogger(logger))
		p.AddListener(processor.HandlerFuncs[*corev1.Pod]{
			AddFunc: func(*corev1.Pod, bool) { panic("poison") },
		}, processor.ListenerOptions{})
		stop := run(p)
		defer stop()
		for i := range 120 { // two a second for a minute
			p.Distribute(addOf(fmt.Sprint(i), "1", false), false)
			time.Sleep(500 * time.Millisecond)
		}
		synctest.Wait()
		if n := strings.Count(buf.String(), "handler panicked"); n != 1 {
			t.Fatalf("120 panics in a minute logged %d records, want 1:\n%s", n, buf.String())
		}
		p.Distribute(addOf("next", "1", false), false)
		synctest.Wait()
		out := buf.String()
		if n := strings.Count(out, "handler panicked"); n != 2 {
			t.Fatalf("the first panic of the next minute logged %d records in all, want 2:\n%s", n, out)
		}
		if !strings.Contains(out, "panicsNotLoggedSince=119") || !strings.Contains(out, "key=ns/next") {
			t.Errorf("the second record does not count the 119 panics between or name ns/next:\n%s", out)
		}
	})
}

// An error handler that panics is logged, with the panic it was told of,
// and the listener goes on: the panic used to take the process down.
func TestPanickingErrorHandlerIsLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&buf, nil))
		p := processor.New[*corev1.Pod](processor.WithLogger(logger),
			processor.WithErrorHandler(func(error) { panic("in the error handler") }))
		r := &recorder{before: func(line string) {
			if strings.Contains(line, "ns/bad") {
				panic("oops")
			}
		}}
		p.AddListener(r, processor.ListenerOptions{})
		stop := run(p)
		p.Distribute(addOf("bad", "1", false), false)
		p.Distribute(addOf("good", "1", false), false)
		synctest.Wait()
		stop()
		checkLines(t, "listener", r, []string{"Add ns/good 1"})
		out := buf.String()
		for _, want := range []string{"level=ERROR", "the error handler panicked", "panic=\"in the error handler\"", "oops"} {
			if !strings.Contains(out, want) {
				t.Errorf("log %q does not contain %q", out, want)
			}
		}
	})
}

// A listener removed after handling its initial notifications but before
// the upstream synced never syncs: HasSynced agrees with Synced, which
// CheckSynced no longer reaches (HasSynced used to turn true while Synced
// stayed open).
func TestRemovedListenerNeverSyncs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var upstream atomic.Bool
		p := processor.New[*corev1.Pod](processor.WithUpstreamSynced(upstream.Load))
		stop := run(p)
		defer stop()
		l := p.AddListener(&recorder{}, processor.ListenerOptions{}, addOf("a", "1", true))
		synctest.Wait() // the initial Add handled
		p.RemoveListener(l)
		upstream.Store(true)
		p.CheckSynced()
		if l.HasSynced() {
			t.Error("HasSynced() = true for a listener removed before it synced")
		}
		select {
		case <-l.Synced():
			t.Error("Synced closed for a listener removed before it synced")
		default:
		}
	})
}

func TestHasSynced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var upstream atomic.Bool
		var errs errorLog
		p := processor.New[*corev1.Pod](processor.WithUpstreamSynced(upstream.Load), processor.WithErrorHandler(errs.report))
		release := make(gate)
		slow := p.AddListener(&recorder{before: func(line string) {
			if line == "Add ns/b 1 initial" {
				release.wait()
			}
		}}, processor.ListenerOptions{})
		// A panic counts as handled.
		panicky := p.AddListener(&recorder{before: func(string) { panic("no") }}, processor.ListenerOptions{})
		stop := run(p)
		defer stop()

		p.Distribute(addOf("a", "1", true), false)
		p.Distribute(addOf("b", "1", true), false)
		// Counted on receipt: no window right after Distribute returns.
		if slow.HasSynced() {
			t.Fatal("slow listener synced before handling its initial list")
		}
		synctest.Wait()
		if slow.HasSynced() || panicky.HasSynced() {
			t.Fatal("listeners synced before the upstream")
		}
		upstream.Store(true)
		if !panicky.HasSynced() {
			t.Error("listener that handled (by panicking) its initial list and whose upstream synced is not synced")
		}
		if slow.HasSynced() {
			t.Error("listener still handling its initial list is synced")
		}
		p.Distribute(addOf("c", "1", false), false) // live events do not count
		release.open()
		synctest.Wait()
		if !slow.HasSynced() {
			t.Error("slow listener not synced after handling its initial list")
		}
		if got := len(errs.all()); got != 3 {
			t.Errorf("%d panics reported, want 3", got)
		}

		// A late handler gets the cache replayed with Listener.Add.
		lateRelease := make(gate)
		late := p.AddListener(&recorder{before: func(string) { lateRelease.wait() }}, processor.ListenerOptions{})
		if !late.HasSynced() {
			t.Error("a new listener with nothing to handle is not synced")
		}
		late.Add(addOf("a", "1", true))
		if late.HasSynced() {
			t.Error("late listener synced before handling its replay")
		}
		lateRelease.open()
		synctest.Wait()
		if !late.HasSynced() {
			t.Error("late listener not synced after handling its replay")
		}
	})
}

// TestHasSyncedHasNoWindow checks that an initial notification counts as
// soon as Distribute returns, before the listener's goroutines have even
// looked at it. A listener that counted it later would be caught out now and
// then; a hundred rounds make that near certain.
func TestHasSyncedHasNoWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := processor.New[*corev1.Pod]()
		proceed := make(chan struct{})
		l := p.AddListener(processor.HandlerFuncs[*corev1.Pod]{
			AddFunc: func(*corev1.Pod, bool) { <-proceed },
		}, processor.ListenerOptions{})
		stop := run(p)
		defer stop()
		for i := range 100 {
			p.Distribute(addOf("a", fmt.Sprint(i), true), false)
			if l.HasSynced() {
				t.Fatalf("round %d: synced before the handler returned", i)
			}
			proceed <- struct{}{}
			synctest.Wait()
			if !l.HasSynced() {
				t.Fatalf("round %d: not synced after the handler returned", i)
			}
		}
	})
}

func TestHasSyncedWithoutUpstream(t *testing.T) {
	p := processor.New[*corev1.Pod]()
	l := p.AddListener(&recorder{}, processor.ListenerOptions{})
	if !l.HasSynced() {
		t.Error("no upstream and nothing received: not synced")
	}
	l.Add(addOf("a", "1", true)) // idle: buffered until Run
	if l.HasSynced() {
		t.Error("synced with an initial notification unhandled")
	}
}

func TestResyncPicksListenersThatAreDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now() // the bubble's clock stands still: nothing here sleeps
		p := processor.New[*corev1.Pod]()
		every10, every25, never := &recorder{}, &recorder{}, &recorder{}
		p.AddListener(every10, processor.ListenerOptions{ResyncPeriod: 10 * time.Second})
		p.AddListener(every25, processor.ListenerOptions{ResyncPeriod: 25 * time.Second})
		p.AddListener(never, processor.ListenerOptions{})
		if got := p.MinResyncPeriod(); got != 10*time.Second {
			t.Errorf("MinResyncPeriod = %v, want 10s", got)
		}
		stop := run(p)
		defer stop()

		steps := []struct {
			at   time.Duration
			want bool
		}{
			{5 * time.Second, false},
			{10 * time.Second, true},  // every10
			{15 * time.Second, false}, // every10 next at 20s; its resync of 10s goes on
			{20 * time.Second, true},  // every10
			{25 * time.Second, true},  // every25
			{31 * time.Second, true},  // every10 (due at 30s)
			{50 * time.Second, true},  // both: every10 was due at 41s, every25 at 50s
		}
		for i, s := range steps {
			if got := p.ShouldResync(t0.Add(s.at)); got != s.want {
				t.Errorf("ShouldResync(t0+%v) = %v, want %v", s.at, got, s.want)
			}
			p.Distribute(updateOf("a", fmt.Sprint(i), fmt.Sprint(i)), true)
			synctest.Wait() // handled: a listener behind its last resync is skipped
		}
		p.Distribute(updateOf("a", "live", "live"), false) // not a resync: to all
		synctest.Wait()
		// Before the first pick, a Sync reaches no one (0); a check that
		// picks none leaves the last pick as it was (2).
		checkLines(t, "every 10s", every10, []string{"Update ns/a 1->1", "Update ns/a 2->2", "Update ns/a 3->3", "Update ns/a 5->5", "Update ns/a 6->6", "Update ns/a live->live"})
		checkLines(t, "every 25s", every25, []string{"Update ns/a 4->4", "Update ns/a 6->6", "Update ns/a live->live"})
		checkLines(t, "never", never, []string{"Update ns/a live->live"})
	})
}

// A resync that falls due while the handler has not been handed all of
// the last one waits, so resyncs do not pile up behind a slow handler
// (client-go queues them all: a handler slower than its period falls
// further behind every period). The listener stays due and is picked once
// it has caught up; other listeners resync as usual.
func TestResyncSkipsAHandlerBehindTheLastOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		p := processor.New[*corev1.Pod]()
		release := make(gate)
		slow := &recorder{before: func(line string) {
			if line == "Update ns/a 1->1" {
				release.wait()
			}
		}}
		fast := &recorder{}
		sl := p.AddListener(slow, processor.ListenerOptions{ResyncPeriod: 10 * time.Second})
		p.AddListener(fast, processor.ListenerOptions{ResyncPeriod: 10 * time.Second})
		stop := run(p)
		defer stop()

		resync := func(at time.Duration, round string) bool {
			picked := p.ShouldResync(t0.Add(at))
			if picked {
				for _, name := range []string{"a", "b"} {
					p.Distribute(updateOf(name, round, round), true)
				}
			}
			synctest.Wait()
			return picked
		}
		if !resync(10*time.Second, "1") {
			t.Fatal("the first resync was not due")
		}
		if n := sl.Pending(); n != 2 {
			t.Fatalf("slow listener: %d pending, want 2 (one in its handler)", n)
		}
		// Due again at 20s: the slow one is still in the first.
		if !resync(20*time.Second, "2") {
			t.Fatal("the fast listener's resync at 20s was not due")
		}
		p.Distribute(updateOf("a", "live", "live"), false) // a change still reaches it
		synctest.Wait()
		if n := sl.Pending(); n != 3 {
			t.Errorf("slow listener: %d pending, want 3: no resync at 20s", n)
		}
		if resync(22*time.Second, "x") {
			t.Error("picked while still behind")
		}
		release.open()
		synctest.Wait()
		// Caught up, and due since 20s: picked now, alone.
		if !resync(25*time.Second, "3") {
			t.Error("no resync once caught up")
		}
		if !resync(30*time.Second, "y") { // the fast one alone: the slow one is due at 35s
			t.Error("no resync at 30s")
		}
		checkLines(t, "slow", slow, []string{"Update ns/a 1->1", "Update ns/b 1->1", "Update ns/a live->live", "Update ns/a 3->3", "Update ns/b 3->3"})
		checkLines(t, "fast", fast, []string{"Update ns/a 1->1", "Update ns/b 1->1", "Update ns/a 2->2", "Update ns/b 2->2", "Update ns/a live->live", "Update ns/a y->y", "Update ns/b y->y"})
	})
}

// "Every notification of its last resync" includes the one in the
// handler: a resync of one object whose handler has not returned from it
// yet is still the last resync, and the listener is not picked again
// until that call returns.
func TestResyncWaitsForItsOnlySyncInTheHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		p := processor.New[*corev1.Pod]()
		release := make(gate)
		r := &recorder{before: func(line string) {
			if line == "Update ns/a 1->1" {
				release.wait()
			}
		}}
		p.AddListener(r, processor.ListenerOptions{ResyncPeriod: 10 * time.Second})
		stop := run(p)
		defer stop()

		if !p.ShouldResync(t0.Add(10 * time.Second)) {
			t.Fatal("the first resync was not due")
		}
		p.Distribute(updateOf("a", "1", "1"), true) // a cache of one object
		synctest.Wait()                             // its only Sync is in the handler
		if p.ShouldResync(t0.Add(20 * time.Second)) {
			t.Error("picked while its handler is still in the only Sync of the last resync")
		}
		release.open()
		synctest.Wait()
		if !p.ShouldResync(t0.Add(21 * time.Second)) {
			t.Error("not picked once its handler returned from the last resync")
		}
		p.Distribute(updateOf("a", "2", "2"), true)
		synctest.Wait()
		checkLines(t, "listener", r, []string{"Update ns/a 1->1", "Update ns/a 2->2"})
	})
}

func TestResyncPeriodBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		p := processor.New[*corev1.Pod]()
		p.AddListener(&recorder{}, processor.ListenerOptions{ResyncPeriod: -time.Second})
		if got := p.MinResyncPeriod(); got != 0 {
			t.Errorf("MinResyncPeriod with a negative period = %v, want 0", got)
		}
		if p.ShouldResync(t0.Add(time.Hour)) {
			t.Error("a negative period resyncs")
		}
		l := p.AddListener(&recorder{}, processor.ListenerOptions{ResyncPeriod: time.Millisecond})
		if got := p.MinResyncPeriod(); got != processor.MinimumResyncPeriod {
			t.Errorf("MinResyncPeriod with a 1ms period = %v, want %v", got, processor.MinimumResyncPeriod)
		}
		if p.ShouldResync(t0.Add(999 * time.Millisecond)) {
			t.Error("resync due before MinimumResyncPeriod")
		}
		if !p.ShouldResync(t0.Add(time.Second)) {
			t.Error("resync not due after MinimumResyncPeriod")
		}
		p.RemoveListener(l)
		if got := p.MinResyncPeriod(); got != 0 {
			t.Errorf("MinResyncPeriod after removing the listener = %v, want 0", got)
		}
	})
}

func TestMaxPendingCoalescesUpdates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := processor.New[*corev1.Pod]()
		release := make(gate)
		r := &recorder{before: func(line string) {
			if line == "Add ns/first 1" {
				release.wait()
			}
		}}
		const maxPending = 4
		l := p.AddListener(r, processor.ListenerOptions{MaxPending: maxPending})
		stop := run(p)
		defer stop()

		p.Distribute(addOf("first", "1", false), false)
		synctest.Wait() // the handler is now stuck on it; the buffer is empty

		// Two keys updated in turn, 1000 times each; then x deleted,
		// recreated, updated 100 times and deleted again.
		for i := 1; i <= 1000; i++ {
			p.Distribute(updateOf("x", fmt.Sprint(i), fmt.Sprint(i+1)), false)
			p.Distribute(updateOf("y", fmt.Sprint(i), fmt.Sprint(i+1)), false)
		}
		p.Distribute(deleteOf("x", "1001", false), false)
		p.Distribute(addOf("x", "2000", false), false)
		for i := 2000; i < 2100; i++ {
			p.Distribute(updateOf("x", fmt.Sprint(i), fmt.Sprint(i+1)), false)
		}
		p.Distribute(deleteOf("x", "2100", true), false)
		synctest.Wait()
		want := []string{
			"Add ns/first 1",
			// The first maxPending go in as they are; later updates merge
			// into the latest pending one of their key.
			"Update ns/x 1->2", "Update ns/y 1->2", "Update ns/x 2->1001", "Update ns/y 2->1001",
			"Delete ns/x 1001", // never dropped
			"Add ns/x 2100",    // the recreate, with the updates that followed merged in
			"Delete ns/x 2100 unknown",
		}
		if got := l.Pending(); got != len(want) {
			t.Errorf("%d pending, want %d", got, len(want))
		}
		release.open()
		synctest.Wait()
		checkLines(t, "listener with MaxPending", r, want)
	})
}

// With MaxPending, updates merged while the listener waits for Run are
// taken out of its counts, as they are once it runs: after its handler has
// handled what is left, nothing is pending, and a resync merged that way
// does not leave the listener behind its last resync for ever.
func TestUpdatesMergedBeforeRunAreNotLeftPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		p := processor.New[*corev1.Pod]()
		r := &recorder{}
		l := p.AddListener(r, processor.ListenerOptions{MaxPending: 1, ResyncPeriod: 10 * time.Second})

		// Before Run: a live update merged into another, then a resync
		// of the same object merged into that.
		p.Distribute(updateOf("a", "1", "2"), false)
		p.Distribute(updateOf("a", "2", "3"), false)
		if !p.ShouldResync(t0.Add(10 * time.Second)) {
			t.Fatal("the first resync was not due")
		}
		p.Distribute(updateOf("a", "3", "3"), true)
		if got := l.Pending(); got != 1 {
			t.Errorf("before Run: %d pending, want 1 (the others merged into it)", got)
		}

		stop := run(p)
		defer stop()
		synctest.Wait()
		checkLines(t, "listener", r, []string{"Update ns/a 1->3"})
		if got := l.Pending(); got != 0 {
			t.Errorf("after handling everything: %d pending, want 0", got)
		}
		if !p.ShouldResync(t0.Add(20 * time.Second)) {
			t.Error("not picked for its next resync: still counted behind the merged one")
		}
	})
}

func TestKindString(t *testing.T) {
	for k, want := range map[processor.Kind]string{processor.Add: "Add", processor.Update: "Update", processor.Delete: "Delete", 0: "Kind(0)", 9: "Kind(9)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, got, want)
		}
	}
}

// closed reports whether ch is closed, without waiting.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Synced is closed by whichever half of HasSynced completes last: the
// listener finishing its initial notifications, or the upstream syncing
// (CheckSynced); a late listener's initial notifications, given to
// AddListener, all count before any is handled; a stopped listener never
// syncs.
func TestSynced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var upstream atomic.Bool
		p := processor.New[*corev1.Pod](processor.WithUpstreamSynced(upstream.Load))
		release := make(gate)
		first := p.AddListener(&recorder{}, processor.ListenerOptions{})
		last := p.AddListener(&recorder{before: func(line string) {
			if line == "Add ns/b 1 initial" {
				release.wait()
			}
		}}, processor.ListenerOptions{})
		removedGate := make(gate)
		removed := p.AddListener(&recorder{before: func(string) { removedGate.wait() }}, processor.ListenerOptions{})
		stop := run(p)
		defer stop()

		p.Distribute(addOf("a", "1", true), false)
		p.Distribute(addOf("b", "1", true), false)
		synctest.Wait()
		if closed(first.Synced()) {
			t.Fatal("Synced closed before the upstream synced")
		}
		upstream.Store(true)
		p.CheckSynced()
		if !closed(first.Synced()) {
			t.Error("listener done before the upstream: not closed by CheckSynced")
		}
		if closed(last.Synced()) {
			t.Error("closed while an initial notification is being handled")
		}
		release.open()
		synctest.Wait()
		if !closed(last.Synced()) {
			t.Error("listener done after the upstream: not closed when it finished")
		}

		lateRelease := make(gate)
		late := p.AddListener(&recorder{before: func(line string) {
			if line == "Add ns/b 1 initial" {
				lateRelease.wait()
			}
		}}, processor.ListenerOptions{}, addOf("a", "1", true), addOf("b", "1", true), addOf("c", "1", true))
		synctest.Wait()
		if closed(late.Synced()) {
			t.Error("late listener closed with its replay half handled")
		}
		lateRelease.open()
		synctest.Wait()
		if !closed(late.Synced()) {
			t.Error("late listener not closed after its replay")
		}
		if empty := p.AddListener(&recorder{}, processor.ListenerOptions{}); !closed(empty.Synced()) {
			t.Error("late listener with nothing to replay: not closed at once")
		}

		p.RemoveListener(removed) // while its handler is in a call
		removedGate.open()
		<-removed.Stopped()
		p.CheckSynced()
		if closed(removed.Synced()) {
			t.Error("a listener removed before it synced reports Synced")
		}
	})
}

// AddListener asks the upstream whether it has synced without holding the
// Processor's lock: the upstream is user code and may call back into the
// Processor (here MinResyncPeriod), which deadlocked.
func TestAddListenerAsksTheUpstreamUnlocked(t *testing.T) {
	var p *processor.Processor[*corev1.Pod]
	p = processor.New[*corev1.Pod](processor.WithUpstreamSynced(func() bool {
		_ = p.MinResyncPeriod()
		return true
	}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.AddListener(&recorder{}, processor.ListenerOptions{})
	}()
	select {
	case <-done:
	case <-time.After(time.Minute): // a guard, not a wait: AddListener returns at once
		t.Fatal("AddListener holds the Processor's lock while it calls the upstream")
	}
}
