package fakelw_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/fakelw"
	"github.com/listwatch/listwatch/reflector"
)

func labeled(ns, name, app string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}}}
}

// next is the next event as "TYPE ns/name@rv app", or "ERROR message".
func next(t *testing.T, w reflector.Watcher[*corev1.Pod]) string {
	t.Helper()
	ev, err := w.Next()
	require.NoError(t, err)
	if ev.Type == reflector.Error {
		return "ERROR " + ev.Status.Message
	}
	return string(ev.Type) + " " + ev.Object.Namespace + "/" + ev.Object.Name + "@" + ev.Object.ResourceVersion + " " + ev.Object.Labels["app"]
}

// A filtered view serves what a server serves for a namespace and a
// selector: lists and initial events of the matching objects only, and
// watch events that tell an object entering or leaving the selection as
// ADDED or DELETED.
func TestFiltered(t *testing.T) {
	// In a bubble, an expected event that does not come fails the test
	// at once (every goroutine blocked) instead of hanging it.
	synctest.Test(t, func(t *testing.T) {
		src := fakelw.New(func() *corev1.Pod { return &corev1.Pod{} })
		src.Create(labeled("a", "p1", "web")) // 1
		src.Create(labeled("a", "p2", "db"))  // 2
		src.Create(labeled("b", "p3", "web")) // 3
		src.Create(labeled("a", "p4", "web")) // 4
		lw := src.Filtered(func(p *corev1.Pod) bool { return p.Namespace == "a" && p.Labels["app"] == "web" })
		ctx := t.Context()

		var listed []string
		meta, err := lw.List(ctx, reflector.ListOptions{Limit: 1}, func(p *corev1.Pod) error { listed = append(listed, p.Name); return nil })
		require.NoError(t, err)
		assert.Equal(t, "4", meta.ResourceVersion)
		require.NotEmpty(t, meta.Continue, "a page of one of two matching objects")
		meta, err = lw.List(ctx, reflector.ListOptions{Limit: 1, Continue: meta.Continue}, func(p *corev1.Pod) error { listed = append(listed, p.Name); return nil })
		require.NoError(t, err)
		// b/p3 follows a full page: as a server's, the list goes on to
		// an empty last page.
		require.NotEmpty(t, meta.Continue, "an object, not matching, follows")
		meta, err = lw.List(ctx, reflector.ListOptions{Limit: 1, Continue: meta.Continue}, func(p *corev1.Pod) error { listed = append(listed, p.Name); return nil })
		require.NoError(t, err)
		assert.Empty(t, meta.Continue)
		assert.Equal(t, []string{"p1", "p4"}, listed)

		stream, err := lw.Watch(ctx, reflector.WatchOptions{SendInitialEvents: true, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowBookmarks: true})
		require.NoError(t, err)
		defer stream.Close()
		assert.Equal(t, "ADDED a/p1@1 web", next(t, stream))
		assert.Equal(t, "ADDED a/p4@4 web", next(t, stream))
		ev, err := stream.Next()
		require.NoError(t, err)
		assert.Equal(t, reflector.Bookmark, ev.Type)

		// A watch from "0" begins with the matching objects only, too.
		fromZero, err := lw.Watch(ctx, reflector.WatchOptions{ResourceVersion: "0"})
		require.NoError(t, err)
		defer fromZero.Close()
		assert.Equal(t, "ADDED a/p1@1 web", next(t, fromZero))
		assert.Equal(t, "ADDED a/p4@4 web", next(t, fromZero))

		w, err := lw.Watch(ctx, reflector.WatchOptions{ResourceVersion: "4"})
		require.NoError(t, err)
		defer w.Close()
		src.Update(labeled("a", "p1", "db"))  // 5: leaves
		src.Update(labeled("a", "p2", "web")) // 6: enters
		src.Update(labeled("b", "p3", "api")) // 7: never matched
		src.Update(labeled("a", "p4", "web")) // 8: stays
		src.Delete("a/p2")                    // 9
		src.Delete("a/p1")                    // 10: not matching when deleted
		assert.Equal(t, "DELETED a/p1@5 web", next(t, w), "its previous state, at the change's resourceVersion")
		assert.Equal(t, "ADDED a/p2@6 web", next(t, w))
		assert.Equal(t, "MODIFIED a/p4@8 web", next(t, w))
		assert.Equal(t, "DELETED a/p2@9 web", next(t, w))
		assert.Equal(t, "DELETED a/p1@5 web", next(t, fromZero))
		// The DELETED of an object that left is a copy: the state it
		// left from keeps its resourceVersion.
		got, _, err := page(t, src, reflector.ListOptions{ResourceVersion: "4", ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		require.NoError(t, err)
		assert.Equal(t, []string{"a/p1@1", "a/p2@2", "a/p4@4", "b/p3@3"}, got)

		// The history gives a later watch the same events.
		again, err := lw.Watch(ctx, reflector.WatchOptions{ResourceVersion: "4"})
		require.NoError(t, err)
		defer again.Close()
		for _, want := range []string{"DELETED a/p1@5 web", "ADDED a/p2@6 web", "MODIFIED a/p4@8 web", "DELETED a/p2@9 web"} {
			assert.Equal(t, want, next(t, again))
		}
	})
}
