package fakelw_test

import (
	"context"
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
// kube-apiserver's does, compacted history or not, and with no bookmark at
// its end.
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
