package apisim_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/apisim"
)

// watchFrom3 returns a server with three pods and a fault for the next
// pods watch, and the path of a watch that starts with the three pods.
func watchFrom3(t *testing.T, f apisim.Fault, opts ...apisim.Option) (*apisim.Server, string) {
	t.Helper()
	s := start(t, opts...)
	createPods(t, s, "default", 3)
	s.Inject(apisim.Match{Verb: apisim.VerbWatch, Resource: "pods"}, f, 1)
	return s, "/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=0"
}

// rawLines opens a watch and returns its body as lines.
func rawLines(t *testing.T, s *apisim.Server, path string) *bufio.Reader {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+path, nil)
	require.NoError(t, err)
	resp, err := s.Client().Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return bufio.NewReader(resp.Body)
}

func TestFaultsOnWatchStreams(t *testing.T) {
	replay := "/api/v1/pods?watch=1&resourceVersion=0&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
	for _, tc := range []struct {
		name  string
		fault apisim.Fault
		check func(t *testing.T, w *stream)
	}{
		{"drop connection after 2", apisim.DropConnection().After(2), func(t *testing.T, w *stream) {
			w.next(t)
			w.next(t)
			assert.ErrorIs(t, w.end(t), io.ErrUnexpectedEOF)
		}},
		{"drop connection at once", apisim.DropConnection(), func(t *testing.T, w *stream) {
			assert.ErrorIs(t, w.end(t), io.ErrUnexpectedEOF)
		}},
		{"error event after 1", apisim.ErrorEvent(http.StatusGone, metav1.StatusReasonExpired).After(1), func(t *testing.T, w *stream) {
			assert.Equal(t, "ADDED", w.next(t).Type)
			e := w.next(t)
			require.Equal(t, "ERROR", e.Type)
			st := e.status(t)
			assert.Equal(t, int32(410), st.Code)
			assert.Equal(t, metav1.StatusReasonExpired, st.Reason)
			assert.Equal(t, "Status", st.Kind)
			assert.Equal(t, io.EOF, w.end(t))
		}},
		{"unknown event type", apisim.UnknownEventType().After(1), func(t *testing.T, w *stream) {
			assert.Equal(t, "ADDED", w.next(t).Type)
			assert.Equal(t, "UNKNOWN", w.next(t).Type)
			assert.Equal(t, "ADDED", w.next(t).Type)
		}},
		{"wrong kind", apisim.WrongKind(), func(t *testing.T, w *stream) {
			o := w.next(t).obj(t)
			assert.Equal(t, "ConfigMap", o.GetKind())
			assert.Equal(t, "Pod", w.next(t).obj(t).GetKind())
		}},
		{"missing name", apisim.MissingName(), func(t *testing.T, w *stream) {
			o := w.next(t).obj(t)
			assert.Empty(t, o.GetName())
			assert.NotEmpty(t, o.GetNamespace())
		}},
		{"missing metadata", apisim.MissingMetadata(), func(t *testing.T, w *stream) {
			e := w.next(t)
			var m map[string]any
			require.NoError(t, json.Unmarshal(e.Object, &m))
			assert.NotContains(t, m, "metadata")
			assert.Contains(t, m, "spec")
		}},
		{"empty resourceVersion", apisim.EmptyResourceVersion(), func(t *testing.T, w *stream) {
			assert.Empty(t, w.next(t).rv(t))
		}},
		{"decreasing resourceVersion", apisim.DecreasingResourceVersion().After(1), func(t *testing.T, w *stream) {
			first := w.next(t).rv(t)
			assert.Equal(t, rvPlus(t, first, -1), w.next(t).rv(t))
			assert.Equal(t, rvPlus(t, first, 2), w.next(t).rv(t))
		}},
		{"invalid resourceVersion", apisim.InvalidResourceVersion().After(1), func(t *testing.T, w *stream) {
			first := w.next(t).rv(t)
			assert.Equal(t, "not-a-number", w.next(t).rv(t))
			assert.Equal(t, rvPlus(t, first, 2), w.next(t).rv(t))
		}},
		{"large object", apisim.LargeObject(200_000), func(t *testing.T, w *stream) {
			e := w.next(t)
			assert.GreaterOrEqual(t, len(e.Object), 200_000)
			assert.Equal(t, "p0", e.obj(t).GetName())
			assert.Less(t, len(w.next(t).Object), 10_000)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := start(t, apisim.WithBookmarkInterval(0))
			createPods(t, s, "default", 3)
			s.Inject(apisim.Match{Verb: apisim.VerbWatch}, tc.fault, 1)
			tc.check(t, watch(t, s, replay))
		})
	}
}

func TestTruncateAndMalformedFrames(t *testing.T) {
	s, path := watchFrom3(t, apisim.TruncateFrame().After(1))
	r := rawLines(t, s, path)
	line, err := r.ReadBytes('\n')
	require.NoError(t, err)
	assert.True(t, json.Valid(line))
	half, err := r.ReadBytes('\n')
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.NotEmpty(t, half)
	assert.False(t, json.Valid(half))

	s, path = watchFrom3(t, apisim.MalformedFrame().After(1))
	r = rawLines(t, s, path)
	var valid []bool
	for range 4 {
		line, err := r.ReadBytes('\n')
		require.NoError(t, err)
		valid = append(valid, json.Valid(line))
	}
	assert.Equal(t, []bool{true, false, true, true}, valid, "the stream goes on after the bad frame")
}

// TestSilentAfterHeaders checks that a silent watch sends its first events
// and then nothing, though a sibling watch without the fault receives the
// event the silent one holds back; and that a silent list sends its
// headers and no body.
func TestSilentAfterHeaders(t *testing.T) {
	s, path := watchFrom3(t, apisim.SilentAfterHeaders().After(1))
	w := watch(t, s, path)
	assert.Equal(t, "ADDED", w.next(t).Type)
	sibling := watch(t, s, path) // the fault applies to one watch only
	for range 3 {
		assert.Equal(t, "ADDED", sibling.next(t).Type)
	}
	createPods(t, s, "other", 1)
	e := sibling.next(t)
	assert.Equal(t, "ADDED", e.Type, "the sibling watch receives the new pod")
	assert.Equal(t, "other", e.obj(t).GetNamespace())
	select {
	case e := <-w.events:
		t.Fatalf("a silent stream delivered %s", e.Type)
	case <-time.After(100 * time.Millisecond):
	}

	s.Inject(apisim.Match{Verb: apisim.VerbList}, apisim.SilentAfterHeaders(), 1)
	resp := getCancelledAfter(t, s, "/api/v1/pods", 100*time.Millisecond)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the headers arrive")
	_, err := io.ReadAll(resp.Body)
	assert.ErrorIs(t, err, context.Canceled, "and nothing after them")
}

// getCancelledAfter sends a GET and, once its answer's headers have come
// (however long a loaded machine takes, up to 10 s), cancels it after d:
// what the body gave by then is what the server sent in d.
func getCancelledAfter(t *testing.T, s *apisim.Server, path string, d time.Duration) *http.Response {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+path, nil)
	noHeaders := time.AfterFunc(10*time.Second, cancel)
	resp, err := s.Client().Do(req)
	noHeaders.Stop()
	require.NoError(t, err, "the answer's headers within 10 s")
	time.AfterFunc(d, cancel)
	return resp
}

func TestTrickleList(t *testing.T) {
	s := start(t)
	createPods(t, s, "default", 1)
	s.Inject(apisim.Match{Verb: apisim.VerbList}, apisim.TrickleList(10*time.Millisecond), 1)
	resp := getCancelledAfter(t, s, "/api/v1/pods", 100*time.Millisecond)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Less(t, len(b), 20, "a few bytes only")

	s.Inject(apisim.Match{Verb: apisim.VerbList, Resource: "configmaps"}, apisim.TrickleList(time.Microsecond), 1)
	l := getList(t, s, "/api/v1/configmaps")
	assert.Equal(t, "ConfigMapList", l.Kind, "a trickled body is still a whole list")
}

func TestDropConnectionDuringList(t *testing.T) {
	s := start(t)
	createPods(t, s, "default", 3)
	s.Inject(apisim.Match{Verb: apisim.VerbList}, apisim.DropConnection().After(1), 1)
	resp, err := s.Client().Get(s.URL() + "/api/v1/pods")
	require.NoError(t, err)
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)

	s.Inject(apisim.Match{Verb: apisim.VerbList}, apisim.MissingName().After(2), 1)
	l := getList(t, s, "/api/v1/pods")
	assert.Equal(t, []string{"p0", "p1", ""}, l.names(), "mutations apply to list items too")
}

// Answer sends its bytes as they are, in the server's place.
func TestAnswerFault(t *testing.T) {
	s := start(t)
	body := []byte(`{}`)
	f := apisim.Answer(http.StatusOK, "application/json", body)
	body[0] = 'x' // copied: the fault still sends {}
	assert.Equal(t, "answer 200", f.String())
	s.Inject(apisim.Match{Verb: apisim.VerbList, Resource: "pods"}, f, 1)
	resp, got := get(t, s, "/api/v1/pods")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	assert.Equal(t, "{}", string(got))
	_, got = get(t, s, "/api/v1/pods")
	assert.Contains(t, string(got), `"items":[`, "once only: then the server answers")
}

func TestStatusFaults(t *testing.T) {
	s := start(t)
	m := apisim.Match{Verb: apisim.VerbList, Resource: "pods"}

	s.Inject(m, apisim.TooManyRequests(3), 1)
	resp, body := get(t, s, "/api/v1/pods")
	st := status(t, resp, body, http.StatusTooManyRequests)
	assert.Equal(t, metav1.StatusReasonTooManyRequests, st.Reason)
	assert.Equal(t, "3", resp.Header.Get("Retry-After"))
	assert.Equal(t, int32(3), st.Details.RetryAfterSeconds)

	s.Inject(m, apisim.TooManyRequestsPlain(2), 1)
	resp, body = get(t, s, "/api/v1/pods")
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Equal(t, "2", resp.Header.Get("Retry-After"))
	assert.Equal(t, "Too many requests, please try again later.\n", string(body))

	s.Inject(m, apisim.TooManyRequestsWithoutRetryAfter(), 1)
	resp, body = get(t, s, "/api/v1/pods")
	st = status(t, resp, body, http.StatusTooManyRequests)
	assert.Empty(t, resp.Header.Get("Retry-After"))
	assert.Nil(t, st.Details)

	burst := s.Inject(m, apisim.ServerError(http.StatusInternalServerError), 2)
	for range 2 {
		resp, body = get(t, s, "/api/v1/pods")
		assert.Equal(t, metav1.StatusReasonInternalError, status(t, resp, body, 500).Reason)
	}
	resp, _ = get(t, s, "/api/v1/pods")
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the burst is over")
	assert.Equal(t, 2, burst.Hits())

	s.Inject(m, apisim.ServerError(http.StatusServiceUnavailable), 1)
	resp, body = get(t, s, "/api/v1/pods")
	assert.Equal(t, metav1.StatusReasonServiceUnavailable, status(t, resp, body, 503).Reason)

	s.Inject(apisim.Match{Verb: apisim.VerbList}, apisim.ServerError(http.StatusInternalServerError), 1)
	watch(t, s, "/api/v1/configmaps?watch=1").close() // a 200: the verb must match
}

func TestInjectionMatchingAndRemoval(t *testing.T) {
	s := start(t)
	forever := s.Inject(apisim.Match{
		Verb:    apisim.VerbList,
		Request: func(r *http.Request) bool { return r.URL.Query().Get("labelSelector") != "" },
	}, apisim.ServerError(http.StatusServiceUnavailable), 0)

	resp, _ := get(t, s, "/api/v1/pods")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	for range 3 {
		resp, _ = get(t, s, "/api/v1/pods?labelSelector=a%3Db")
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	}
	assert.Equal(t, 3, forever.Hits())
	forever.Remove()
	resp, _ = get(t, s, "/api/v1/pods?labelSelector=a%3Db")
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	cms := s.Inject(apisim.Match{Resource: "configmaps"}, apisim.ServerError(http.StatusInternalServerError), 1)
	resp, _ = get(t, s, "/api/v1/pods")
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the resource must match")
	resp, _ = get(t, s, "/api/v1/configmaps")
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	assert.Equal(t, 1, cms.Hits())
	assert.Equal(t, "status 503", apisim.ServerError(503).String())
	assert.Equal(t, "drop-connection after 3", apisim.DropConnection().After(3).String())
}

// TestHoldBlocksUntilReleased checks that a held request is answered only
// after its gate is released: the response's goroutine checks that
// released, closed just before Release, was closed when the answer came.
// Before releasing, another request (the injection holds one) goes through
// and is answered, so a held request that was not held would have had the
// time to answer too.
func TestHoldBlocksUntilReleased(t *testing.T) {
	s := start(t)
	gate := apisim.NewGate()
	s.Inject(apisim.Match{Verb: apisim.VerbList}, apisim.Hold(gate), 1)
	released := make(chan struct{})
	type answer struct {
		code          int
		kind          string // of the body: the request was served
		afterReleased bool
	}
	answers := make(chan answer, 1)
	go func() {
		resp, err := s.Client().Get(s.URL() + "/api/v1/pods")
		var a answer
		select {
		case <-released:
			a.afterReleased = true
		default:
		}
		if err == nil {
			var l list
			_ = json.NewDecoder(resp.Body).Decode(&l)
			resp.Body.Close()
			a.code, a.kind = resp.StatusCode, l.Kind
		}
		answers <- a
	}()
	<-gate.Entered()
	resp, _ := get(t, s, "/api/v1/pods")
	require.Equal(t, http.StatusOK, resp.StatusCode, "a request after the held one is not held")
	close(released)
	gate.Release()
	a := <-answers
	assert.Equal(t, http.StatusOK, a.code)
	assert.Equal(t, "PodList", a.kind, "released, the request is served")
	assert.True(t, a.afterReleased, "the held request was answered before the gate was released")
	gate.Release() // idempotent
}

func TestCloseEndsHeldAndSilentRequests(t *testing.T) {
	s := apisim.New(apisim.WithResources(apisim.Pods()))
	require.NoError(t, s.Start())
	gate := apisim.NewGate()
	s.Inject(apisim.Match{Verb: apisim.VerbList}, apisim.Hold(gate), 1)
	s.Inject(apisim.Match{Verb: apisim.VerbWatch}, apisim.SilentAfterHeaders(), 1)
	errs := make(chan error, 2)
	go func() {
		resp, err := s.Client().Get(s.URL() + "/api/v1/pods")
		if err == nil {
			resp.Body.Close()
		}
		errs <- err
	}()
	<-gate.Entered()
	resp, err := s.Client().Get(s.URL() + "/api/v1/pods?watch=1")
	require.NoError(t, err)
	defer resp.Body.Close()
	s.Close() // must not hang on the held list nor on the silent watch
	<-errs
	_, err = io.ReadAll(resp.Body)
	_ = err // the silent stream ends when the server closes
}

// Bookmarks do not count towards After(n): after three initial events and
// the initial-events-end bookmark, the next event is the fourth.
func TestBookmarksDoNotCountTowardsAfter(t *testing.T) {
	s := start(t, apisim.WithBookmarkInterval(0))
	createPods(t, s, "default", 3)
	s.Inject(apisim.Match{Verb: apisim.VerbWatch}, apisim.UnknownEventType().After(3), 1)
	w := watch(t, s, "/api/v1/pods?watch=1&allowWatchBookmarks=true")
	for range 3 {
		assert.Equal(t, "ADDED", w.next(t).Type)
	}
	assert.Equal(t, "BOOKMARK", w.next(t).Type)
	createPods(t, s, "other", 1)
	assert.Equal(t, "UNKNOWN", w.next(t).Type)
}
