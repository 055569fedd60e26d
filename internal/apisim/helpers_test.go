package apisim_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/listwatch/listwatch/internal/apisim"
)

// widgets is the custom resource of the tests.
var widgets = apisim.CustomResource("example.com", "v1", "widgets", "Widget", true)

// start returns a started server with pods, configmaps, nodes and widgets.
func start(t *testing.T, opts ...apisim.Option) *apisim.Server {
	t.Helper()
	opts = append([]apisim.Option{apisim.WithResources(apisim.Pods(), apisim.ConfigMaps(), apisim.Nodes(), widgets)}, opts...)
	s := apisim.New(opts...)
	require.NoError(t, s.Start())
	t.Cleanup(s.Close)
	return s
}

// do sends a request and returns the response with its body read.
func do(t *testing.T, s *apisim.Server, method, path string, body io.Reader, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL()+path, body)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

func get(t *testing.T, s *apisim.Server, path string, header ...string) (*http.Response, []byte) {
	t.Helper()
	return do(t, s, http.MethodGet, path, nil, header...)
}

// list is a decoded JSON list.
type list struct {
	Kind       string
	APIVersion string
	Metadata   metav1.ListMeta
	Items      []listItem
}

// listItem is an item of a JSON list. Those of a built-in kind carry no
// kind, as kube-apiserver writes them, which unstructured.Unstructured's
// own UnmarshalJSON refuses.
type listItem struct{ unstructured.Unstructured }

func (it *listItem) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &it.Object) }

func (l list) names() []string {
	out := make([]string, len(l.Items))
	for i, it := range l.Items {
		out[i] = it.GetName()
	}
	return out
}

func getList(t *testing.T, s *apisim.Server, path string) list {
	t.Helper()
	resp, body := get(t, s, path)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var l list
	require.NoError(t, json.Unmarshal(body, &l))
	return l
}

// status decodes a Status response and checks its HTTP code.
func status(t *testing.T, resp *http.Response, body []byte, code int) metav1.Status {
	t.Helper()
	require.Equal(t, code, resp.StatusCode, string(body))
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var st metav1.Status
	require.NoError(t, json.Unmarshal(body, &st), string(body))
	require.Equal(t, "Status", st.Kind)
	require.Equal(t, "v1", st.APIVersion)
	require.Equal(t, int32(code), st.Code)
	return st
}

// event is a decoded JSON watch event.
type event struct {
	Type   string
	Object json.RawMessage
}

func (e event) obj(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON(e.Object), string(e.Object))
	return u
}

func (e event) rv(t *testing.T) string { return e.obj(t).GetResourceVersion() }

func (e event) status(t *testing.T) metav1.Status {
	t.Helper()
	var st metav1.Status
	require.NoError(t, json.Unmarshal(e.Object, &st))
	return st
}

// stream is an open JSON watch read by a goroutine into a channel, so
// that tests wait for events with a deadline instead of sleeping.
type stream struct {
	resp   *http.Response
	events chan event
	err    chan error // the read error that ended the stream (io.EOF: clean end)
	cancel context.CancelFunc
	done   chan struct{}
}

func watch(t *testing.T, s *apisim.Server, path string, header ...string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+path, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.Client().Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	st := &stream{resp: resp, events: make(chan event, 100000), err: make(chan error, 1), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(st.done)
		defer close(st.events)
		r := bufio.NewReaderSize(resp.Body, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				st.err <- err
				return
			}
			var e event
			if err := json.Unmarshal(line, &e); err != nil {
				st.err <- err
				return
			}
			st.events <- e
		}
	}()
	t.Cleanup(st.close)
	return st
}

func (st *stream) close() {
	st.cancel()
	_ = st.resp.Body.Close()
	<-st.done
}

// next returns the next event, failing the test after 5 s.
func (st *stream) next(t *testing.T) event {
	t.Helper()
	select {
	case e, ok := <-st.events:
		if !ok {
			t.Fatalf("watch ended: %v", <-st.err)
		}
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no watch event within 5s")
	}
	return event{}
}

// end waits for the stream to end and returns the read error (io.EOF for
// a clean end), failing the test if an event arrives first.
func (st *stream) end(t *testing.T) error {
	t.Helper()
	select {
	case e, ok := <-st.events:
		if ok {
			t.Fatalf("expected the end of the stream, got a %s event", e.Type)
		}
		return <-st.err
	case <-time.After(5 * time.Second):
		t.Fatal("watch did not end within 5s")
	}
	return nil
}

// createPods creates pods p0..p{n-1} in namespace ns and returns the RV
// of the last one.
func createPods(t *testing.T, s *apisim.Server, ns string, n int) string {
	t.Helper()
	pods := apisim.Of[*corev1.Pod](s, apisim.Pods())
	var rv string
	for i := range n {
		p, err := pods.Create(apisim.MakePod(ns, "p"+strconv.Itoa(i)))
		require.NoError(t, err)
		rv = p.ResourceVersion
	}
	return rv
}

// rvPlus returns the resourceVersion n writes after rv (before it when n
// is negative): tests name resourceVersions relative to ones the server
// returned, not by their absolute values.
func rvPlus(t *testing.T, rv string, n int) string {
	t.Helper()
	v, err := strconv.ParseInt(rv, 10, 64)
	require.NoError(t, err)
	return strconv.FormatInt(v+int64(n), 10)
}

// newWidget returns a custom resource object.
func newWidget(namespace, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"namespace": namespace, "name": name, "labels": map[string]any{"app": "w"}},
		"spec":     map[string]any{"color": "blue"},
	}}
}
