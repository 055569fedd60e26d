package informer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/processor"
	"github.com/listwatch/listwatch/reflector"
)

func TestWaitForSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a"))
		inf := informer.New[*corev1.Pod](src, informer.WithName[*corev1.Pod]("pods"))
		reg := inf.AddEventHandler(newView(t))
		defer start(t, inf)()
		require.NoError(t, informer.WaitForSync(t.Context(), inf, reg))
		assert.True(t, inf.HasSynced())
		assert.True(t, reg.HasSynced())
		require.NoError(t, informer.WaitForSync(t.Context()), "nothing to wait for")
	})
}

func TestWaitForSyncSaysWhy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a"))
		denied := errors.New("403 Forbidden")
		src.FailList(denied, denied, denied, denied, denied, denied, denied, denied)
		src.FailWatch(denied, denied, denied, denied, denied, denied, denied, denied)
		// Streaming lists only: in Auto mode a failed one is followed by
		// a LIST, and which of them failed last within the deadline would
		// depend on the backoff's random draws (a LIST, about once in 200).
		failing := informer.New[*corev1.Pod](src, informer.WithName[*corev1.Pod]("pods in ns"),
			informer.WithReflectorOptions(reflector.WithMode[*corev1.Pod](reflector.WatchList)))
		require.NoError(t, failing.SetWatchErrorHandler(func(error) {})) // WaitForSync says it
		// A handler of it: waiting for the registration alone, as for
		// client-go's reg.HasSynced, must say why as well.
		ofFailing := failing.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{})
		defer start(t, failing)()

		other := newSource()
		other.Create(pod("ns", "b"))
		synced := informer.New[*corev1.Pod](other, informer.WithName[*corev1.Pod]("pods"))
		release := make(chan struct{})
		slow := synced.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{AddFunc: func(*corev1.Pod, bool) { <-release }})
		removed := synced.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{AddFunc: func(*corev1.Pod, bool) { <-release }})
		synced.RemoveEventHandler(removed) // before Run: it is never told of anything
		defer start(t, synced)()
		defer close(release)

		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		err := informer.WaitForSync(ctx, failing, ofFailing, synced, slow, removed)
		require.Error(t, err)
		assert.ErrorIs(t, err, denied, "an informer's reason is its last error")
		assert.ErrorIs(t, err, context.DeadlineExceeded, "a handler still busy is waited for until ctx ends")
		assert.Equal(t, "caches not synced: "+
			"pods in ns: listing pods in ns (streaming): 403 Forbidden (still retrying: context deadline exceeded)\n"+
			"pods in ns, listener 1 (processor.HandlerFuncs[*k8s.io/api/core/v1.Pod]): its informer has not synced: "+
			"listing pods in ns (streaming): 403 Forbidden (still retrying: context deadline exceeded)\n"+
			"pods, listener 1 (processor.HandlerFuncs[*k8s.io/api/core/v1.Pod]): not synced yet: context deadline exceeded\n"+
			"pods, listener 2 (processor.HandlerFuncs[*k8s.io/api/core/v1.Pod]): stopped before it synced", err.Error())
		err = informer.WaitForSync(ctx, ofFailing)
		assert.ErrorIs(t, err, denied, "a registration's reason is its informer's last error")
	})
}

// An informer that keeps failing is waited for until ctx ends: the error
// says why it has not synced, and that it was the caller's deadline that
// ended the wait (not the informer stopping).
func TestWaitForSyncKeepsTheCallersDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf, denied := deniedInformer(t)
		defer start(t, inf)()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		err := informer.WaitForSync(ctx, inf)
		assert.ErrorIs(t, err, denied)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

// deniedInformer returns an informer named "pods" whose first 20 lists
// and watches fail with denied, and which reports them to no one.
func deniedInformer(t *testing.T) (_ *informer.SharedIndexInformer[*corev1.Pod], denied error) {
	src := newSource()
	denied = errors.New("403 Forbidden")
	for range 20 {
		src.FailList(denied)
		src.FailWatch(denied)
	}
	inf := informer.New[*corev1.Pod](src, informer.WithName[*corev1.Pod]("pods"))
	require.NoError(t, inf.SetWatchErrorHandler(func(error) {}))
	return inf, denied
}

// One ctx given to Run and to the wait, cancelled as a program stops:
// errors.Is finds it whether the informer had stopped by the time the wait
// looked or not. It was found only while the informer was still retrying,
// so a program that treats context.Canceled as a clean stop reported the
// informer's 403 instead.
func TestWaitForSyncFindsTheContextOfAStoppedInformer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf, denied := deniedInformer(t)
		ctx, cancel := context.WithCancel(t.Context())
		go inf.Run(ctx)
		time.Sleep(time.Second)
		cancel()
		<-inf.Stopped()
		err := informer.WaitForSync(ctx, inf)
		assert.ErrorIs(t, err, denied)
		assert.ErrorIs(t, err, context.Canceled)

		never := informer.New[*corev1.Pod](blockingLW{}, informer.WithName[*corev1.Pod]("quiet"))
		ctx, cancel = context.WithCancel(t.Context())
		go never.Run(ctx)
		synctest.Wait()
		cancel()
		<-never.Stopped()
		err = informer.WaitForSync(ctx, never)
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorContains(t, err, "stopped before it synced")
	})
}

// With many caches not synced, the error says the first ten reasons and
// how many more there are; errors.Is still finds every one.
func TestWaitForSyncSaysTenReasons(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var syncers []informer.Syncer
		var last error
		for i := range 25 {
			src := newSource()
			last = fmt.Errorf("403 Forbidden %d", i)
			for range 20 {
				src.FailList(last)
				src.FailWatch(last)
			}
			inf := informer.New[*corev1.Pod](src, informer.WithName[*corev1.Pod](fmt.Sprint("pods ", i)))
			require.NoError(t, inf.SetWatchErrorHandler(func(error) {}))
			defer start(t, inf)()
			syncers = append(syncers, inf)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		err := informer.WaitForSync(ctx, syncers...)
		assert.ErrorIs(t, err, last, "the 25th reason, not said")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		lines := strings.Split(err.Error(), "\n")
		assert.Len(t, lines, 11)
		assert.Equal(t, "(and 15 more)", lines[10])
		assert.Contains(t, lines[0], "caches not synced: pods 0: ")
	})
}

// blockingLW lists and watches nothing until its context ends, without an
// error: an informer over it neither syncs nor says why.
type blockingLW struct{}

func (blockingLW) List(ctx context.Context, _ reflector.ListOptions, _ func(*corev1.Pod) error) (reflector.ListMeta, error) {
	<-ctx.Done()
	return reflector.ListMeta{}, ctx.Err()
}

func (blockingLW) Watch(ctx context.Context, _ reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// WaitForSync stops waiting for an informer once it has stopped.
func TestWaitForSyncStopsWaitingForAStoppedInformer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf := informer.New[*corev1.Pod](blockingLW{}, informer.WithName[*corev1.Pod]("pods"))
		runCtx, stopRun := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- inf.Run(runCtx) }()
		synctest.Wait()
		select {
		case <-inf.Stopped():
			t.Fatal("Stopped closed while Run runs")
		default:
		}
		stopRun()
		require.NoError(t, <-done)
		<-inf.Stopped()
		// The wait's own context never ends: only Stopped can end it.
		err := informer.WaitForSync(t.Context(), inf)
		assert.EqualError(t, err, "caches not synced: pods: stopped before it synced")

		broken := informer.New[*corev1.Pod](nil, informer.WithName[*corev1.Pod]("nothing"))
		require.Error(t, broken.Run(t.Context()))
		err = informer.WaitForSync(t.Context(), broken)
		assert.EqualError(t, err, "caches not synced: nothing: informer: the ListerWatcher is nil (stopped before it synced)")
	})
}

// never is a Syncer of one's own, with no name: it never syncs.
type never struct{}

func (never) Synced() <-chan struct{} { return make(chan struct{}) }

// nilSynced is a Syncer whose channel is nil, which would never be closed.
type nilSynced struct{}

func (nilSynced) Synced() <-chan struct{} { return nil }

func TestWaitForSyncNamesASyncerWithoutAName(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := informer.WaitForSync(ctx, never{})
	assert.EqualError(t, err, "caches not synced: syncer 1 (informer_test.never): not synced yet: context canceled")
}

func TestWaitForSyncRefusesNils(t *testing.T) {
	inf := informer.New[*corev1.Pod](newSource())
	var ctx context.Context
	assert.ErrorContains(t, informer.WaitForSync(ctx, inf), "nil context")
	var reg *informer.Registration[*corev1.Pod]
	assert.ErrorContains(t, informer.WaitForSync(t.Context(), inf, reg), "syncer 2 of 2 is nil")
	assert.ErrorContains(t, informer.WaitForSync(t.Context(), nil), "syncer 1 of 1 is nil")
	// Refused at once, not waited for until the context ends.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	assert.EqualError(t, informer.WaitForSync(ctx, nilSynced{}),
		"informer: WaitForSync: syncer 1 (informer_test.nilSynced) has a nil Synced channel")
	var zero informer.Registration[*corev1.Pod]
	assert.False(t, zero.HasSynced())
	assert.EqualError(t, informer.WaitForSync(ctx, inf, &zero),
		"informer: WaitForSync: a zero Registration (not made by AddEventHandler) has a nil Synced channel")
	inf.RemoveEventHandler(&zero) // harmless
}
