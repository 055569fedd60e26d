package apisim_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/apisim"
)

func TestWatchResumesFromResourceVersion(t *testing.T) {
	s := start(t)
	pods := apisim.Of[*corev1.Pod](s, apisim.Pods())
	p0, err := pods.Create(apisim.MakePod("default", "p0"))
	require.NoError(t, err)
	createPods(t, s, "other", 2)

	w := watch(t, s, "/api/v1/pods?watch=true&resourceVersion="+p0.ResourceVersion)
	for _, want := range []string{rvPlus(t, p0.ResourceVersion, 1), rvPlus(t, p0.ResourceVersion, 2)} {
		e := w.next(t)
		assert.Equal(t, "ADDED", e.Type)
		assert.Equal(t, want, e.rv(t))
	}
	p0.Labels["x"] = "1"
	updated, err := pods.Update(p0)
	require.NoError(t, err)
	e := w.next(t)
	assert.Equal(t, "MODIFIED", e.Type)
	assert.Equal(t, updated.ResourceVersion, e.rv(t))
	assert.Equal(t, int64(1), e.obj(t).GetGeneration(), "labels are metadata: no new generation")
}

func TestWatchWithoutResourceVersionStartsWithInitialEvents(t *testing.T) {
	s := start(t, apisim.WithBookmarkInterval(0))
	createPods(t, s, "default", 2)
	for _, rv := range []string{"", "0"} {
		w := watch(t, s, "/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion="+rv)
		assert.Equal(t, "ADDED", w.next(t).Type)
		assert.Equal(t, "ADDED", w.next(t).Type)
		e := w.next(t)
		require.Equal(t, "BOOKMARK", e.Type, "the WatchList default adds the initial-events-end bookmark")
		assert.Equal(t, map[string]string{"k8s.io/initial-events-end": "true"}, e.obj(t).GetAnnotations())
	}
}

// "00" is 0 but not "0": sendInitialEvents is not defaulted for it, and
// kube-apiserver takes the legacy path of a watch from 0: the current
// state as ADDED events, no bookmark, then live events.
func TestWatchFromAnotherSpellingOfZeroSendsTheStateWithoutBookmark(t *testing.T) {
	s := start(t, apisim.WithBookmarkInterval(0))
	createPods(t, s, "default", 2)
	w := watch(t, s, "/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion=00")
	assert.Equal(t, "ADDED", w.next(t).Type)
	assert.Equal(t, "ADDED", w.next(t).Type)
	createPods(t, s, "other", 1)
	e := w.next(t)
	assert.Equal(t, "ADDED", e.Type, "a live event, after no bookmark")
	assert.Equal(t, "other", e.obj(t).GetNamespace())
}

func TestWatchListEndsInitialEventsWithAnnotatedBookmark(t *testing.T) {
	s := start(t, apisim.WithBookmarkInterval(0))
	rv := createPods(t, s, "default", 3)
	w := watch(t, s, "/api/v1/namespaces/default/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=")
	var names []string
	for range 3 {
		e := w.next(t)
		require.Equal(t, "ADDED", e.Type)
		names = append(names, e.obj(t).GetName())
	}
	assert.Equal(t, []string{"p0", "p1", "p2"}, names)
	e := w.next(t)
	require.Equal(t, "BOOKMARK", e.Type)
	assert.JSONEq(t, `{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"`+rv+`",
		"annotations":{"k8s.io/initial-events-end":"true"}},"spec":{"containers":null},"status":{}}`, string(e.Object))

	createPods(t, s, "other", 1) // another namespace: filtered out
	p9, err := apisim.Of[*corev1.Pod](s, apisim.Pods()).Create(apisim.MakePod("default", "p9"))
	require.NoError(t, err)
	e = w.next(t)
	assert.Equal(t, "ADDED", e.Type, "then live events")
	assert.Equal(t, p9.ResourceVersion, e.rv(t))
}

func TestWatchListVariants(t *testing.T) {
	s := start(t, apisim.WithBookmarkInterval(0))
	createPods(t, s, "default", 1)
	pods := apisim.Of[*corev1.Pod](s, apisim.Pods())

	t.Run("without bookmarks: initial events, no closing bookmark", func(t *testing.T) {
		w := watch(t, s, "/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan")
		assert.Equal(t, "ADDED", w.next(t).Type)
		_, err := pods.Create(apisim.MakePod("default", "live-1"))
		require.NoError(t, err)
		e := w.next(t)
		assert.Equal(t, "ADDED", e.Type)
		assert.Equal(t, "live-1", e.obj(t).GetName())
	})
	t.Run("sendInitialEvents=false: live events only", func(t *testing.T) {
		w := watch(t, s, "/api/v1/pods?watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
		_, err := pods.Create(apisim.MakePod("default", "live-2"))
		require.NoError(t, err)
		e := w.next(t)
		assert.Equal(t, "ADDED", e.Type)
		assert.Equal(t, "live-2", e.obj(t).GetName())
	})
	for _, tc := range []struct{ query, message string }{
		{"sendInitialEvents=true", "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"},
		{"resourceVersionMatch=NotOlderThan&resourceVersion=1", "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			resp, body := get(t, s, "/api/v1/pods?watch=1&"+tc.query)
			st := status(t, resp, body, http.StatusUnprocessableEntity)
			assert.Equal(t, metav1.StatusReasonInvalid, st.Reason)
			assert.Contains(t, st.Message, tc.message)
		})
	}
}

func TestWatchFromTooOldResourceVersionGetsExpiredEvent(t *testing.T) {
	s := start(t, apisim.WithHistorySize(3))
	empty := s.ResourceVersion()
	last := createPods(t, s, "default", 6)
	windowStart := rvPlus(t, last, -3) // the history keeps the three writes after it

	w := watch(t, s, "/api/v1/pods?watch=1&resourceVersion="+empty)
	e := w.next(t)
	require.Equal(t, "ERROR", e.Type)
	st := e.status(t)
	assert.Equal(t, int32(http.StatusGone), st.Code)
	assert.Equal(t, metav1.StatusReasonExpired, st.Reason)
	assert.Equal(t, "too old resource version: "+empty+" ("+windowStart+")", st.Message)
	assert.Equal(t, io.EOF, w.end(t))

	w = watch(t, s, "/api/v1/pods?watch=1&resourceVersion="+windowStart)
	for i := 1; i <= 3; i++ {
		assert.Equal(t, rvPlus(t, windowStart, i), w.next(t).rv(t))
	}
}

func TestWatchPeriodicBookmarks(t *testing.T) {
	s := start(t, apisim.WithBookmarkInterval(10*time.Millisecond))
	rv := createPods(t, s, "default", 1)
	without := watch(t, s, "/api/v1/pods?watch=1&resourceVersion="+rv)
	with := watch(t, s, "/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion="+rv)

	rv = createPods(t, s, "other", 1)
	assert.Equal(t, "ADDED", without.next(t).Type, "no bookmark without allowWatchBookmarks")
	e := with.next(t)
	require.Equal(t, "ADDED", e.Type, "no bookmark before there is progress to tell")
	e = with.next(t)
	require.Equal(t, "BOOKMARK", e.Type)
	assert.JSONEq(t, `{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"`+rv+`"},"spec":{"containers":null},"status":{}}`, string(e.Object))

	rv = createPods(t, s, "third", 1)
	for {
		e = with.next(t)
		if e.Type == "BOOKMARK" && e.rv(t) == rv {
			break
		}
	}
}

// Like kube-apiserver's watch cache (cacheWatcher.process), the simulator
// sends no bookmark that is not newer than the resourceVersion a watch
// started from: on a resource nobody writes to, a watch gets none, periodic
// or before its timeout. Time is synctest's.
func TestNoBookmarkWithoutProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := apisim.New(apisim.WithResources(apisim.Pods()), apisim.WithBookmarkInterval(time.Second))
		defer s.Close()
		rv := createPods(t, s, "default", 1)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet,
			"/api/v1/pods?watch=1&timeoutSeconds=10&allowWatchBookmarks=true&resourceVersion="+rv, nil))
		assert.Empty(t, rec.Body.String(), "a watch that saw no progress in 10 s")
	})
}

// A bookmark the watcher's queue has no room for is dropped, as
// kube-apiserver drops it (cacheWatcher.nonblockingAdd): only an event
// that does not fit ends a watch.
func TestBookmarkThatDoesNotFitIsDropped(t *testing.T) {
	const buffer = 2
	s := start(t, apisim.WithWatchBuffer(buffer), apisim.WithBookmarkInterval(0))
	rv := s.ResourceVersion()
	s.Inject(apisim.Match{Verb: apisim.VerbWatch, Resource: "pods"}, apisim.SilentAfterHeaders(), 1) // the handler stops draining
	watch(t, s, "/api/v1/pods?watch=true&allowWatchBookmarks=true&resourceVersion="+rv)
	require.Eventually(t, func() bool { return s.Watchers(apisim.Pods()) == 1 }, 5*time.Second, time.Millisecond)
	createPods(t, s, "ns", buffer) // fills the queue
	require.Equal(t, 1, s.Watchers(apisim.Pods()), "the queue holds every event")
	s.SendBookmarks()
	assert.Equal(t, 1, s.Watchers(apisim.Pods()), "a bookmark that did not fit ended the watch")
	createPods(t, s, "other", 1)
	assert.Equal(t, 0, s.Watchers(apisim.Pods()), "an event that did not fit ends the watch")
}

func TestWatchTimeoutSecondsEndsTheStreamCleanly(t *testing.T) {
	s := start(t)
	w := watch(t, s, "/api/v1/pods?watch=1&resourceVersion=0&timeoutSeconds=1")
	assert.Equal(t, io.EOF, w.end(t))
}

func TestWatchSelectorExitAndEntry(t *testing.T) {
	s := start(t)
	pods := apisim.Of[*corev1.Pod](s, apisim.Pods())
	p := apisim.MakePod("default", "p")
	p.Labels = map[string]string{"app": "web"}
	p, err := pods.Create(p)
	require.NoError(t, err)
	other, err := pods.Create(apisim.MakePod("default", "other"))
	require.NoError(t, err)

	w := watch(t, s, "/api/v1/pods?watch=1&labelSelector=app%3Dweb&resourceVersion="+other.ResourceVersion)
	other.Labels["touched"] = "yes"
	_, err = pods.Update(other) // not matching before or after: not delivered
	require.NoError(t, err)

	p.Labels["app"] = "db"
	moved, err := pods.Update(p)
	require.NoError(t, err)
	e := w.next(t)
	require.Equal(t, "DELETED", e.Type)
	assert.Equal(t, moved.ResourceVersion, e.rv(t), "stamped with the change's RV")
	assert.Equal(t, "web", e.obj(t).GetLabels()["app"], "carries the last state that matched")

	moved.Labels["app"] = "web"
	back, err := pods.Update(moved)
	require.NoError(t, err)
	e = w.next(t)
	assert.Equal(t, "ADDED", e.Type)
	assert.Equal(t, back.ResourceVersion, e.rv(t))
}

func TestWatchDeletedCarriesTheDeletionResourceVersion(t *testing.T) {
	s := start(t)
	pods := apisim.Of[*corev1.Pod](s, apisim.Pods())
	p, err := pods.Create(apisim.MakePod("default", "p"))
	require.NoError(t, err)
	w := watch(t, s, "/api/v1/namespaces/default/pods?watch=1&resourceVersion="+p.ResourceVersion)
	gone, err := pods.Delete("default", "p")
	require.NoError(t, err)
	e := w.next(t)
	require.Equal(t, "DELETED", e.Type)
	assert.Equal(t, gone.ResourceVersion, e.rv(t))
	assert.NotEqual(t, p.ResourceVersion, gone.ResourceVersion)
	assert.Equal(t, string(p.UID), string(e.obj(t).GetUID()))

	_, err = pods.Get("default", "p")
	assert.Error(t, err)
}

func TestWatchEventsStrictlyIncreaseUnderConcurrentWrites(t *testing.T) {
	s := start(t)
	w := watch(t, s, "/api/v1/configmaps?watch=1&resourceVersion=0&sendInitialEvents=false&resourceVersionMatch=NotOlderThan")
	cms := apisim.Of[*corev1.ConfigMap](s, apisim.ConfigMaps())
	const writers, each = 4, 50
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			for j := range each {
				_, err := cms.Create(apisim.MakeConfigMap("default", "cm-"+strconv.Itoa(i)+"-"+strconv.Itoa(j), 10))
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	last := 0
	for range writers * each {
		rv, err := strconv.Atoi(w.next(t).rv(t))
		require.NoError(t, err)
		require.Greater(t, rv, last)
		last = rv
	}
}

func TestWatchOnOneObjectAndLegacyWatchPath(t *testing.T) {
	s := start(t)
	rv := createPods(t, s, "default", 2)
	pods := apisim.Of[*corev1.Pod](s, apisim.Pods())
	for _, path := range []string{
		"/api/v1/namespaces/default/pods?watch=1&fieldSelector=metadata.name%3Dp1&resourceVersion=" + rv,
		"/api/v1/watch/namespaces/default/pods/p1?resourceVersion=" + rv,
	} {
		w := watch(t, s, path)
		for _, name := range []string{"p0", "p1"} {
			p, err := pods.Get("default", name)
			require.NoError(t, err)
			p.Labels["n"] = path[len(path)-3:] + name
			_, err = pods.Update(p)
			require.NoError(t, err)
		}
		e := w.next(t)
		assert.Equal(t, "MODIFIED", e.Type)
		assert.Equal(t, "p1", e.obj(t).GetName())
	}
}

func TestWatchFromFutureResourceVersion(t *testing.T) {
	t.Run("waits like the watch cache", func(t *testing.T) {
		s := start(t)
		rv := createPods(t, s, "default", 1)
		n, _ := strconv.Atoi(rv)
		w := watch(t, s, "/api/v1/pods?watch=1&resourceVersion="+strconv.Itoa(n+2))
		createPods(t, s, "other", 3) // RVs n+1, n+2, n+3
		assert.Equal(t, strconv.Itoa(n+3), w.next(t).rv(t))
	})
	t.Run("fails like --watch-cache=false", func(t *testing.T) {
		s := start(t, apisim.WithFutureWatchError(), apisim.WithTooLargeWait(20*time.Millisecond))
		w := watch(t, s, "/api/v1/pods?watch=1&resourceVersion=100")
		st := w.next(t).status(t)
		assert.Equal(t, int32(http.StatusGatewayTimeout), st.Code)
		assert.Equal(t, metav1.CauseTypeResourceVersionTooLarge, st.Details.Causes[0].Type)
		assert.Equal(t, io.EOF, w.end(t))
	})
	t.Run("streaming list fails after the wait", func(t *testing.T) {
		s := start(t, apisim.WithTooLargeWait(20*time.Millisecond))
		w := watch(t, s, "/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=100")
		e := w.next(t)
		require.Equal(t, "ERROR", e.Type)
		assert.Equal(t, metav1.StatusReasonTimeout, e.status(t).Reason)
	})
}

func TestRestartEndsWatchesAndForgetsHistory(t *testing.T) {
	s := start(t)
	rv := createPods(t, s, "default", 3)
	first := getList(t, s, "/api/v1/pods?limit=1")
	w := watch(t, s, "/api/v1/pods?watch=1&resourceVersion="+rv)
	createPods(t, s, "other", 1)
	assert.Equal(t, "ADDED", w.next(t).Type)

	s.Restart()
	assert.Equal(t, io.EOF, w.end(t), "watches end cleanly")
	assert.Zero(t, s.Watchers(apisim.Pods()))

	w = watch(t, s, "/api/v1/pods?watch=1&resourceVersion="+rv)
	assert.Equal(t, metav1.StatusReasonExpired, w.next(t).status(t).Reason, "history before the restart is gone")
	w = watch(t, s, "/api/v1/pods?watch=1&resourceVersion="+s.ResourceVersion())
	createPods(t, s, "third", 1)
	assert.Equal(t, "ADDED", w.next(t).Type, "the current RV still works")

	next := getList(t, s, "/api/v1/pods?limit=10&continue="+first.Metadata.Continue)
	assert.Len(t, next.Items, 2, "etcd still has the snapshot: paging goes on")
}

func TestCompactExpiresOlderWatches(t *testing.T) {
	s := start(t)
	rv := createPods(t, s, "default", 2)
	createPods(t, s, "other", 1)
	s.Compact()
	w := watch(t, s, "/api/v1/pods?watch=1&resourceVersion="+rv)
	assert.Equal(t, metav1.StatusReasonExpired, w.next(t).status(t).Reason)
	w = watch(t, s, "/api/v1/pods?watch=1&resourceVersion="+s.ResourceVersion())
	createPods(t, s, "third", 1)
	assert.Equal(t, "ADDED", w.next(t).Type)
}

func TestDropEventsLosesEventsInTransitOnly(t *testing.T) {
	s := start(t)
	rv := createPods(t, s, "default", 1)
	w := watch(t, s, "/api/v1/pods?watch=1&resourceVersion="+rv)
	require.NoError(t, s.DropEvents(apisim.Pods(), 1))
	createPods(t, s, "other", 2) // other/p0 is lost, other/p1 arrives
	e := w.next(t)
	assert.Equal(t, "p1", e.obj(t).GetName())

	w = watch(t, s, "/api/v1/pods?watch=1&resourceVersion="+rv)
	assert.Equal(t, "p0", w.next(t).obj(t).GetName(), "the history has it")
}

func TestSlowWatcherIsTerminated(t *testing.T) {
	s := start(t, apisim.WithWatchBuffer(2))
	rv := createPods(t, s, "default", 1)
	// A stalled watch handler stops draining its queue.
	s.Inject(apisim.Match{Verb: apisim.VerbWatch}, apisim.SilentAfterHeaders(), 1)
	_ = watch(t, s, "/api/v1/pods?watch=1&resourceVersion="+rv)
	require.Equal(t, 1, s.Watchers(apisim.Pods()))
	createPods(t, s, "other", 3)
	assert.Zero(t, s.Watchers(apisim.Pods()), "the third event overflowed the queue of two")
}

func TestTimersCompactAndEndWatches(t *testing.T) {
	s := start(t, apisim.WithCompactionInterval(10*time.Millisecond), apisim.WithWatchTimeout(50*time.Millisecond))
	old := createPods(t, s, "default", 1)
	createPods(t, s, "other", 1)
	require.Eventually(t, func() bool {
		resp, _ := get(t, s, "/api/v1/pods?resourceVersionMatch=Exact&resourceVersion="+old)
		return resp.StatusCode == http.StatusGone
	}, 5*time.Second, 5*time.Millisecond, "the compaction timer runs")

	w := watch(t, s, "/api/v1/nodes?watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan")
	assert.Equal(t, io.EOF, w.end(t), "WithWatchTimeout ends watches without timeoutSeconds")
}

func TestBookmarkTwoSecondsBeforeTheTimeout(t *testing.T) {
	s := start(t, apisim.WithBookmarkInterval(0), apisim.WithWatchTimeout(2100*time.Millisecond))
	rv := createPods(t, s, "default", 1)
	w := watch(t, s, "/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion="+rv)
	rv = createPods(t, s, "other", 1)
	require.Equal(t, "ADDED", w.next(t).Type)
	e := w.next(t)
	require.Equal(t, "BOOKMARK", e.Type, "like kube-apiserver, a bookmark 2 s before the end")
	assert.Equal(t, rv, e.rv(t))
	assert.Equal(t, io.EOF, w.end(t))
}

// kube-apiserver sends the bookmark 2 s before a watch's timeout only to
// watches that allow bookmarks. Time is synctest's: the watch goes straight
// to ServeHTTP, which returns at the timeout.
func TestPreTimeoutBookmarkOnlyWhenAllowed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := apisim.New(apisim.WithResources(apisim.Pods()))
		defer s.Close()
		rv := createPods(t, s, "default", 1)
		for allow, want := range map[string][]string{"true": {"ADDED", "BOOKMARK"}, "false": {"ADDED"}} {
			done := make(chan struct{})
			go func() { // a write while the watch is open: progress to tell
				defer close(done)
				time.Sleep(time.Second)
				createPods(t, s, "ns-"+allow, 1)
			}()
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet,
				"/api/v1/pods?watch=1&timeoutSeconds=10&resourceVersion="+rv+"&allowWatchBookmarks="+allow, nil))
			<-done
			var types []string
			for line := range bytes.Lines(rec.Body.Bytes()) {
				var e event
				require.NoError(t, json.Unmarshal(line, &e))
				types = append(types, e.Type)
			}
			assert.Equal(t, want, types, "allowWatchBookmarks=%s", allow)
			rv = s.ResourceVersion()
		}
	})
}

// A watch from a resourceVersion ahead of the server gets no periodic
// bookmark until the server reaches it: a bookmark older than the RV asked
// for would move the client back.
func TestPeriodicBookmarksNotBelowTheRequestedResourceVersion(t *testing.T) {
	s := start(t, apisim.WithBookmarkInterval(5*time.Millisecond))
	rv := createPods(t, s, "default", 1)
	n, _ := strconv.Atoi(rv)
	future := watch(t, s, "/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion="+strconv.Itoa(n+2))
	witness := watch(t, s, "/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion="+rv)
	createPods(t, s, "other", 1) // n+1
	require.Equal(t, "ADDED", witness.next(t).Type)
	// The witness's bookmark at n+1 comes from a tick that also saw the
	// future watch, while the server was below the RV it asked for.
	require.Equal(t, "BOOKMARK", witness.next(t).Type)

	createPods(t, s, "third", 2) // n+2, n+3
	for {
		e := future.next(t)
		got, _ := strconv.Atoi(e.rv(t))
		require.GreaterOrEqual(t, got, n+2, "a %s event below the requested resourceVersion", e.Type)
		if e.Type == "ADDED" {
			assert.Equal(t, n+3, got)
			return
		}
	}
}

// kube-apiserver refuses a watch on one object whose fieldSelector names
// another object.
func TestWatchOnOneObjectRefusesAnotherName(t *testing.T) {
	s := start(t)
	createPods(t, s, "default", 2)
	resp, body := get(t, s, "/api/v1/watch/namespaces/default/pods/p1?timeoutSeconds=1&fieldSelector=metadata.name%3Dp0") // timeoutSeconds: a stream served by mistake ends
	st := status(t, resp, body, http.StatusBadRequest)
	assert.Equal(t, metav1.StatusReasonBadRequest, st.Reason)
	assert.Equal(t, "fieldSelector metadata.name doesn't match requested name", st.Message)

	w := watch(t, s, "/api/v1/watch/namespaces/default/pods/p1?fieldSelector=metadata.name%3Dp1")
	assert.Equal(t, "p1", w.next(t).obj(t).GetName())
}
