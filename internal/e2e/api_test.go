package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/e2e/cluster"
)

// api makes raw HTTP requests to an apiserver as one user: the truth is
// recorded without any client library in between.
type api struct {
	t      testing.TB
	base   string
	client *http.Client
}

// adminAPI returns an api for c's admin user.
func adminAPI(t testing.TB, c *cluster.Cluster) *api {
	client := c.HTTPClient(c.AdminToken())
	t.Cleanup(client.CloseIdleConnections)
	return &api{t: t, base: c.URL(), client: client}
}

// result is one complete HTTP exchange.
type result struct {
	status  int
	header  http.Header
	body    []byte
	elapsed time.Duration // from sending the request to the end of the body
}

// json decodes the body, failing the test if it is not JSON.
func (r result) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("decoding %q: %v", r.body, err)
	}
	return m
}

// do sends one request (body encoded as JSON if not nil) and reads the
// whole answer. accept, if not empty, is the Accept header.
func (a *api) do(method, path, accept string, body any) result {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			a.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	start := time.Now()
	resp, err := a.client.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return result{status: resp.StatusCode, header: resp.Header, body: data, elapsed: time.Since(start)}
}

// must sends a request that has to answer with status want and returns the
// decoded body.
func (a *api) must(method, path string, body any, want int) map[string]any {
	a.t.Helper()
	r := a.do(method, path, "", body)
	if r.status != want {
		a.t.Fatalf("%s %s: got %d, want %d: %s", method, path, r.status, want, r.body)
	}
	return r.json(a.t)
}

// createNamespace creates namespace ns.
func (a *api) createNamespace(ns string) {
	a.t.Helper()
	a.must("POST", "/api/v1/namespaces", map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns},
	}, http.StatusCreated)
}

// podManifest is a minimal pod; with no scheduler it stays Pending.
func podManifest(name string, labels map[string]string) map[string]any {
	meta := map[string]any{"name": name}
	if labels != nil {
		meta["labels"] = labels
	}
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata":   meta,
		"spec": map[string]any{"containers": []any{map[string]any{
			"name": "main", "image": "registry.k8s.io/pause:3.10",
		}}},
	}
}

// createPod creates a pod in ns and returns its resource version.
func (a *api) createPod(ns, name string, labels map[string]string) string {
	a.t.Helper()
	obj := a.must("POST", "/api/v1/namespaces/"+ns+"/pods", podManifest(name, labels), http.StatusCreated)
	return resourceVersion(obj)
}

// labelPod sets the labels of pod ns/name (a merge patch) and returns its
// new resource version.
func (a *api) labelPod(ns, name string, labels map[string]any) string {
	a.t.Helper()
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "PATCH", a.base+"/api/v1/namespaces/"+ns+"/pods/"+name, bytes.NewReader(b))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/merge-patch+json")
	resp, err := a.client.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		a.t.Fatalf("patching %s/%s: %d %s", ns, name, resp.StatusCode, data)
	}
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		a.t.Fatal(err)
	}
	return resourceVersion(obj)
}

// listRV returns the resource version of a consistent list of pods in ns.
func (a *api) listRV(ns string) string {
	a.t.Helper()
	return resourceVersion(a.must("GET", "/api/v1/namespaces/"+ns+"/pods", nil, http.StatusOK))
}

// resourceVersion returns obj's metadata.resourceVersion ("" if none).
func resourceVersion(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	rv, _ := meta["resourceVersion"].(string)
	return rv
}

// watchStream is an open watch: a goroutine decodes JSON events from the
// body into a channel until the body ends or close is called.
type watchStream struct {
	url    *url.URL
	status int
	header http.Header
	body   []byte // the whole body when the status is not 200
	start  time.Time
	events chan watchEvent
	end    error // why the stream ended; valid once events is closed
	cancel context.CancelFunc
	done   chan struct{}
}

// watchEvent is one decoded event and when it arrived.
type watchEvent struct {
	Type   string         `json:"type"`
	Object map[string]any `json:"object"`
	at     time.Duration  // since the request was sent
}

// watch opens a watch (path must carry watch=true) with the given Accept
// header (JSON if empty). The stream is closed when the test ends.
func (a *api) watch(path, accept string) *watchStream {
	a.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", a.base+path, nil)
	if err != nil {
		cancel()
		a.t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	w := &watchStream{url: req.URL, start: time.Now(), events: make(chan watchEvent, 1000), cancel: cancel, done: make(chan struct{})}
	resp, err := a.client.Do(req)
	if err != nil {
		cancel()
		a.t.Fatalf("watch %s: %v", path, err)
	}
	w.status, w.header = resp.StatusCode, resp.Header
	if resp.StatusCode != http.StatusOK {
		w.body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		close(w.events)
		close(w.done)
		return w
	}
	go func() {
		defer close(w.done)
		defer close(w.events)
		defer resp.Body.Close()
		dec := json.NewDecoder(bufio.NewReader(resp.Body))
		for {
			var ev watchEvent
			if err := dec.Decode(&ev); err != nil {
				w.end = err
				return
			}
			ev.at = time.Since(w.start)
			w.events <- ev
		}
	}()
	a.t.Cleanup(w.close)
	return w
}

// query returns the watch request's query parameters.
func (w *watchStream) query() url.Values { return w.url.Query() }

// next returns the next event, or ok=false if the stream ended or nothing
// came within timeout.
func (w *watchStream) next(timeout time.Duration) (watchEvent, bool) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case ev, ok := <-w.events:
		return ev, ok
	case <-timer.C:
		return watchEvent{}, false
	}
}

// collect reads events until stop returns true for the last one, the
// stream ends, or timeout passes; it reports how the collection ended:
// "stop", "EOF" (the server ended the stream cleanly), "error: ..." or
// "timeout".
func (w *watchStream) collect(timeout time.Duration, stop func(watchEvent) bool) ([]watchEvent, string) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var out []watchEvent
	for {
		select {
		case ev, ok := <-w.events:
			if !ok {
				if errors.Is(w.end, io.EOF) {
					return out, "EOF"
				}
				return out, fmt.Sprintf("error: %v", w.end)
			}
			out = append(out, ev)
			if stop != nil && stop(ev) {
				return out, "stop"
			}
		case <-deadline.C:
			return out, "timeout"
		}
	}
}

// close ends the stream and waits for its goroutine.
func (w *watchStream) close() {
	w.cancel()
	<-w.done
}

// stream opens a long request (a watch) and returns the response with its
// body unread; the body is closed when the test ends.
func (a *api) stream(path, accept string) *http.Response {
	a.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", a.base+path, nil)
	if err != nil {
		cancel()
		a.t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		cancel()
		a.t.Fatalf("GET %s: %v", path, err)
	}
	a.t.Cleanup(func() {
		cancel()
		resp.Body.Close()
	})
	return resp
}
