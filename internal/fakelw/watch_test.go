package fakelw_test

import (
	"context"
	"errors"
	"io"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/fakelw"
	"github.com/listwatch/listwatch/reflector"
)

// A streaming list ends its initial events with a bookmark only for a
// watch that allows bookmarks, as kube-apiserver's does.
func TestInitialEventsEndOnlyWithBookmarks(t *testing.T) {
	src := fakelw.New(func() *corev1.Pod { return &corev1.Pod{} })
	src.Create(labeled("ns", "a", "web")) // 1

	plain, err := src.Watch(t.Context(), reflector.WatchOptions{SendInitialEvents: true, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	require.NoError(t, err)
	defer plain.Close()
	withBookmarks, err := src.Watch(t.Context(), reflector.WatchOptions{SendInitialEvents: true, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowBookmarks: true})
	require.NoError(t, err)
	defer withBookmarks.Close()
	src.Create(labeled("ns", "b", "web")) // 2

	assert.Equal(t, "ADDED ns/a@1 web", next(t, plain))
	assert.Equal(t, "ADDED ns/b@2 web", next(t, plain), "no bookmark")
	assert.Equal(t, "ADDED ns/a@1 web", next(t, withBookmarks))
	assert.Equal(t, "BOOKMARK /@1 ", next(t, withBookmarks))
	assert.Equal(t, "ADDED ns/b@2 web", next(t, withBookmarks))
}

// A watch from resourceVersion "" or "0" begins with the current state, as
// kube-apiserver's does, compacted history or not; with bookmarks, the
// initial-events-end bookmark ends it, as kube-apiserver v1.37 makes such
// a watch a streaming list.
func TestWatchFromZeroBeginsWithTheState(t *testing.T) {
	for _, rv := range []string{"", "0"} {
		t.Run("rv="+rv, func(t *testing.T) {
			src := fakelw.New(func() *corev1.Pod { return &corev1.Pod{} })
			src.Create(labeled("ns", "a", "web")) // 1
			src.Create(labeled("ns", "b", "web")) // 2
			src.Update(labeled("ns", "a", "db"))  // 3
			src.Delete("ns/b")                    // 4
			src.Compact()

			w, err := src.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: rv, AllowBookmarks: true})
			require.NoError(t, err)
			defer w.Close()
			src.Update(labeled("ns", "a", "api")) // 5
			assert.Equal(t, "ADDED ns/a@3 db", next(t, w), "the current state, not the history")
			assert.Equal(t, "BOOKMARK /@4 ", next(t, w), "the end of the state")
			assert.Equal(t, "MODIFIED ns/a@5 api", next(t, w), "then the events after it")
		})
	}
}

// A read at a resourceVersion the Source has not reached gets
// kube-apiserver's answer, at once.
func TestTooLargeResourceVersionIsTheServersAnswer(t *testing.T) {
	src := fakelw.New(func() *corev1.Pod { return &corev1.Pod{} })
	src.Create(labeled("ns", "a", "web")) // 1
	_, listErr := src.List(t.Context(), reflector.ListOptions{ResourceVersion: "100"}, func(*corev1.Pod) error { return nil })
	_, watchErr := src.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: "100"})
	for _, err := range []error{listErr, watchErr} {
		var status *apierrors.StatusError
		require.ErrorAs(t, err, &status)
		assert.True(t, apierrors.IsTimeout(err), "%v", err)
		assert.Equal(t, "Timeout: Too large resource version: 100, current: 1", status.ErrStatus.Message)
		assert.Equal(t, &metav1.StatusDetails{
			RetryAfterSeconds: 1,
			Causes:            []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}},
		}, status.ErrStatus.Details)
	}
}

// A watch with timeoutSeconds ends cleanly after that long, as a server's:
// after a bookmark at the current resourceVersion if it allows them. One
// without goes on.
func TestWatchEndsAtItsTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := fakelw.New(func() *corev1.Pod { return &corev1.Pod{} })
		src.Create(labeled("ns", "a", "web")) // 1
		timed, err := src.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: "1", AllowBookmarks: true, TimeoutSeconds: 60})
		require.NoError(t, err)
		defer timed.Close()
		quiet, err := src.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: "1", TimeoutSeconds: 60})
		require.NoError(t, err)
		defer quiet.Close()
		forever, err := src.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: "1"})
		require.NoError(t, err)
		defer forever.Close()
		// Longer than a Duration holds: none, rather than wrapped into the
		// past (an end at once).
		huge, err := src.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: "1", TimeoutSeconds: math.MaxInt64})
		require.NoError(t, err)
		defer huge.Close()

		start := time.Now()
		time.Sleep(30 * time.Second)
		src.Create(labeled("ns", "b", "web")) // 2
		assert.Equal(t, "ADDED ns/b@2 web", next(t, timed))
		assert.Equal(t, "BOOKMARK /@2 ", next(t, timed))
		assert.Equal(t, time.Minute, time.Since(start))
		_, err = timed.Next()
		assert.ErrorIs(t, err, io.EOF, "a clean end")
		assert.Equal(t, "ADDED ns/b@2 web", next(t, quiet))
		_, err = quiet.Next()
		assert.ErrorIs(t, err, io.EOF, "no bookmark for a watch that does not allow them")

		time.Sleep(time.Hour)
		src.Create(labeled("ns", "c", "web")) // 3
		assert.Equal(t, "ADDED ns/b@2 web", next(t, forever))
		assert.Equal(t, "ADDED ns/c@3 web", next(t, forever), "no timeout: no end")
		assert.Equal(t, "ADDED ns/b@2 web", next(t, huge))
		assert.Equal(t, "ADDED ns/c@3 web", next(t, huge), "a timeout past 292 years: no end")
	})
}

// A watch whose context ended is over, closed or not: it queues nothing
// more (it used to keep every later change, for as long as the Source
// lived).
func TestWatchWhoseContextEndedTakesNoMoreEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := fakelw.New(func() *corev1.Pod { return &corev1.Pod{} })
		src.Create(labeled("ns", "a", "web")) // 1
		ctx, cancel := context.WithCancel(t.Context())
		w, err := src.Watch(ctx, reflector.WatchOptions{ResourceVersion: "1"})
		require.NoError(t, err)
		cancel()
		synctest.Wait()
		src.Create(labeled("ns", "b", "web")) // 2
		_, err = w.Next()
		assert.ErrorIs(t, err, context.Canceled)
		assert.NoError(t, w.Close())
	})
}

// A closed watch delivers nothing more, not even the events queued before
// Close; one that BreakWatches ends gives its error once its queue is
// read, as a stream cut off mid-way does.
func TestClosedOrBrokenWatchesEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := fakelw.New(func() *corev1.Pod { return &corev1.Pod{} })
		src.Create(labeled("ns", "a", "web")) // 1
		closed, err := src.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: "0"})
		require.NoError(t, err)
		require.NoError(t, closed.Close())
		_, err = closed.Next()
		assert.Error(t, err, "the queued ADDED is not delivered")

		broken, err := src.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: "0"})
		require.NoError(t, err)
		defer broken.Close()
		goaway := errors.New("http2: server sent GOAWAY and closed the connection")
		src.BreakWatches(goaway)
		src.Create(labeled("ns", "b", "web")) // 2: after the break
		assert.Equal(t, "ADDED ns/a@1 web", next(t, broken))
		_, err = broken.Next()
		assert.ErrorIs(t, err, goaway)
	})
}

// Update keeps the stored UID. The writes of a fakelw.Source are not
// checked: an Update of a key that is not stored creates it, ADDED.
func TestUpdateKeepsTheUIDOrCreates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := fakelw.New(func() *corev1.Pod { return &corev1.Pod{} })
		created := src.Create(labeled("ns", "a", "web")) // 1
		w, err := src.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: "1"})
		require.NoError(t, err)
		defer w.Close()
		updated := src.Update(labeled("ns", "a", "db")) // 2
		require.NotEmpty(t, created.UID)
		assert.Equal(t, created.UID, updated.UID)
		src.Update(labeled("ns", "b", "web")) // 3
		assert.Equal(t, "MODIFIED ns/a@2 db", next(t, w))
		assert.Equal(t, "ADDED ns/b@3 web", next(t, w))
	})
}

// Restore puts the Source back to a snapshot, as restoring etcd from a
// backup does: its objects and resourceVersion, its history up to the
// snapshot (a Compact since undone as far as the history goes), and no
// list under way; open watches end. A snapshot may be restored again.
func TestRestoreGoesBackToTheSnapshot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := fakelw.New(func() *corev1.Pod { return &corev1.Pod{} })
		src.Create(labeled("ns", "a", "web")) // 1
		src.Create(labeled("ns", "b", "web")) // 2
		snap := src.Snapshot()
		_, first, err := page(t, src, reflector.ListOptions{Limit: 1})
		require.NoError(t, err)
		open, err := src.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: "2"})
		require.NoError(t, err)
		defer open.Close()
		src.Update(labeled("ns", "a", "db"))  // 3
		src.Create(labeled("ns", "c", "web")) // 4

		src.Restore(snap)
		assert.Equal(t, "MODIFIED ns/a@3 db", next(t, open))
		assert.Equal(t, "ADDED ns/c@4 web", next(t, open))
		_, err = open.Next()
		assert.ErrorIs(t, err, io.EOF, "the server restarted")
		assert.Equal(t, "2", src.ResourceVersion())
		got, _, err := page(t, src, reflector.ListOptions{})
		require.NoError(t, err)
		assert.Equal(t, []string{"ns/a@1", "ns/b@2"}, got)
		_, _, err = page(t, src, reflector.ListOptions{Limit: 1, Continue: first.Continue})
		assert.True(t, apierrors.IsResourceExpired(err), "a list under way: %v", err)

		src.Create(labeled("ns", "d", "web")) // 3 again
		fromOne, err := src.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: "1"})
		require.NoError(t, err)
		defer fromOne.Close()
		assert.Equal(t, "ADDED ns/b@2 web", next(t, fromOne), "the history up to the snapshot is kept")
		assert.Equal(t, "ADDED ns/d@3 web", next(t, fromOne))

		src.Compact()
		src.Restore(snap)
		got, _, err = page(t, src, reflector.ListOptions{})
		require.NoError(t, err)
		assert.Equal(t, []string{"ns/a@1", "ns/b@2"}, got, "the snapshot is as it was taken")
		fromSnap, err := src.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: "2"})
		require.NoError(t, err)
		defer fromSnap.Close()
		src.Create(labeled("ns", "e", "web")) // 3 once more
		assert.Equal(t, "ADDED ns/e@3 web", next(t, fromSnap), "compacted at 3, restored to 2: a watch from 2 is served")
	})
}

// With AcceptFutureWatches, a watch from a resourceVersion the Source has
// not reached is accepted, as kube-apiserver's watch cache accepts it, and
// delivers only the events past it; a streaming list from there is still
// refused (the server waits for the resourceVersion, then answers 504).
func TestFutureWatchDeliversOnlyTheEventsPastIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := fakelw.New(func() *corev1.Pod { return &corev1.Pod{} })
		src.AcceptFutureWatches()
		src.Create(labeled("ns", "a", "web")) // 1
		w, err := src.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: "3"})
		require.NoError(t, err)
		defer w.Close()
		_, err = src.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: "3", SendInitialEvents: true,
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowBookmarks: true})
		assert.True(t, apierrors.IsTimeout(err), "a streaming list: %v", err)

		src.Create(labeled("ns", "b", "web")) // 2
		src.Create(labeled("ns", "c", "web")) // 3
		src.Create(labeled("ns", "d", "web")) // 4
		assert.Equal(t, "ADDED ns/d@4 web", next(t, w))
	})
}
