package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/internal/bench/fixture"
	"github.com/listwatch/listwatch/internal/wire"
)

// These tests read what the server writes with listwatch's own decoders,
// which follow kube-apiserver's formats; client-go reads it in every
// benchmark run.

const objects, events = 1200, 30

func newTestServer(t *testing.T) *httptest.Server {
	t.Helper()
	k, err := fixture.KindOf("pods")
	if err != nil {
		t.Fatal(err)
	}
	s, err := newServer(k, objects, events, 100, 0, []string{"json", "protobuf"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts
}

func get(t *testing.T, ts *httptest.Server, q url.Values, accept string) io.ReadCloser {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/api/v1/pods?"+q.Encode(), nil)
	req.Header.Set("Accept", accept)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", req.URL, resp.Status)
	}
	return resp.Body
}

func codec(t *testing.T) *wire.Codec[*corev1.Pod] {
	c, err := wire.TypedCodec[*corev1.Pod](corev1.SchemeGroupVersion.WithKind("Pod"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPagedList lists in pages of 500 in both formats and checks that every
// object arrives once, in order, with the list's resourceVersion.
func TestPagedList(t *testing.T) {
	ts := newTestServer(t)
	for _, accept := range []string{"application/json", "application/vnd.kubernetes.protobuf, application/json"} {
		t.Run(accept, func(t *testing.T) {
			var names []string
			cont := ""
			for pages := 0; ; pages++ {
				q := url.Values{"limit": {"500"}}
				if cont != "" {
					q.Set("continue", cont)
				}
				body := get(t, ts, q, accept)
				add := func(p *corev1.Pod) error { names = append(names, p.Name); return nil }
				var meta wire.ListMeta
				var err error
				if accept == "application/json" {
					meta, err = wire.DecodeJSONList(body, codec(t), 0, add)
				} else {
					meta, err = wire.DecodeProtobufList(body, codec(t), 0, add)
				}
				body.Close()
				if err != nil {
					t.Fatalf("page %d: %v", pages, err)
				}
				if want := fmt.Sprint(fixture.ListRV(objects)); meta.ResourceVersion != want {
					t.Fatalf("list resourceVersion %q, want %q", meta.ResourceVersion, want)
				}
				if cont = meta.Continue; cont == "" {
					break
				}
			}
			if len(names) != objects {
				t.Fatalf("listed %d objects, want %d", len(names), objects)
			}
			for i, n := range names {
				if n != fixture.Pod(i).Name {
					t.Fatalf("object %d is %s, want %s", i, n, fixture.Pod(i).Name)
				}
			}
		})
	}
}

// TestStreamingListThenReplay reads a streaming list, its bookmark and the
// whole replay, in both formats.
func TestStreamingListThenReplay(t *testing.T) {
	ts := newTestServer(t)
	for _, accept := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
		t.Run(accept, func(t *testing.T) {
			q := url.Values{"watch": {"1"}, "sendInitialEvents": {"true"}, "allowWatchBookmarks": {"true"},
				"resourceVersionMatch": {"NotOlderThan"}, "benchClose": {"1"}}
			body := get(t, ts, q, accept)
			defer body.Close()
			var next func() (wire.Event[*corev1.Pod], error)
			if accept == "application/json" {
				next = wire.NewJSONWatchDecoder(body, codec(t), 0).Next
			} else {
				next = wire.NewProtobufWatchDecoder(body, codec(t), 0).Next
			}
			var added, modified int
			bookmarked := false
			for {
				ev, err := next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("after %d added, %d modified: %v", added, modified, err)
				}
				switch ev.Type {
				case wire.Added:
					if bookmarked {
						t.Fatal("ADDED after the bookmark")
					}
					added++
				case wire.Bookmark:
					if ev.Object.Annotations["k8s.io/initial-events-end"] != "true" || ev.Object.ResourceVersion != fmt.Sprint(fixture.ListRV(objects)) {
						t.Fatalf("bookmark %+v", ev.Object.ObjectMeta)
					}
					bookmarked = true
				case wire.Modified:
					want := fmt.Sprint(fixture.ListRV(objects) + uint64(modified) + 1)
					if ev.Object.ResourceVersion != want {
						t.Fatalf("event %d has resourceVersion %s, want %s", modified, ev.Object.ResourceVersion, want)
					}
					if ev.Object.Name != fixture.Pod(modified%100).Name {
						t.Fatalf("event %d is for %s", modified, ev.Object.Name)
					}
					modified++
				default:
					t.Fatalf("unexpected %s event", ev.Type)
				}
			}
			if added != objects || !bookmarked || modified != events {
				t.Fatalf("got %d added, bookmark %v, %d modified; want %d, true, %d", added, bookmarked, modified, objects, events)
			}
		})
	}
}

// TestWatchResumes checks that a watch from a resourceVersion in the middle
// of the replay gets only the events after it.
func TestWatchResumes(t *testing.T) {
	ts := newTestServer(t)
	from := fixture.ListRV(objects) + 10
	q := url.Values{"watch": {"1"}, "resourceVersion": {fmt.Sprint(from)}, "benchClose": {"1"}}
	body := get(t, ts, q, "application/json")
	defer body.Close()
	dec := wire.NewJSONWatchDecoder(body, codec(t), 0)
	n := 0
	for ; ; n++ {
		ev, err := dec.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 && ev.Object.ResourceVersion != fmt.Sprint(from+1) {
			t.Fatalf("first event at %s, want %d", ev.Object.ResourceVersion, from+1)
		}
	}
	if n != events-10 {
		t.Fatalf("%d events, want %d", n, events-10)
	}
}
