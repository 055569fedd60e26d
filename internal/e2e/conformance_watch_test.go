package e2e

import (
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// initialEventsEnd is the annotation of the bookmark that ends the initial
// events of a streaming list.
const initialEventsEnd = "k8s.io/initial-events-end"

// isInitialEventsEnd reports whether ev is the bookmark that ends the
// initial events.
func isInitialEventsEnd(ev watchEvent) bool {
	if ev.Type != "BOOKMARK" {
		return false
	}
	meta, _ := ev.Object["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	return ann[initialEventsEnd] == "true"
}

// eventTypes lists the types of events, in order.
func eventTypes(events []watchEvent) []string {
	var out []string
	for _, ev := range events {
		out = append(out, ev.Type)
	}
	return out
}

func TestConformanceWatchBookmarks(t *testing.T) {
	t.Parallel()
	const ns = "conf-watch-bookmarks"
	a := adminAPI(t, shared)
	rec := newRecorder(t, "watch-bookmarks", "A watch with allowWatchBookmarks=true and timeoutSeconds=5: an event, the bookmark the server sends 2 s before the timeout, then the clean end of the stream. Then the same without allowWatchBookmarks.")
	a.createNamespace(ns)
	a.createPod(ns, "alpha", nil)
	listRV := a.listRV(ns)

	path := "/api/v1/namespaces/" + ns + "/pods?watch=true&allowWatchBookmarks=true&timeoutSeconds=5&resourceVersion=" + listRV
	w := a.watch(path, "")
	bravoRV := a.createPod(ns, "bravo", nil)
	events, end := w.collect(20*time.Second, nil)
	rec.watched("bookmarks on, timeoutSeconds=5", path, "", w, events, end)
	require.Equal(t, "EOF", end)
	require.GreaterOrEqual(t, len(events), 2)
	require.Equal(t, []string{"ADDED", "BOOKMARK"}, eventTypes(events)[:2])
	bookmark := events[1]
	rec.fact("bookmark resourceVersion >= the last event's", parseRV(t, resourceVersion(bookmark.Object)) >= parseRV(t, bravoRV))
	recordTiming(t, "bookmark of a watch with timeoutSeconds=5, after the request", bookmark.at)
	recordTiming(t, "end of a watch with timeoutSeconds=5, after the request", time.Since(w.start))
	assert.InDelta(t, 3, bookmark.at.Seconds(), 2, "the bookmark comes 2 s before the deadline")

	path = "/api/v1/namespaces/" + ns + "/pods?watch=true&timeoutSeconds=2&resourceVersion=" + listRV
	w = a.watch(path, "")
	events, end = w.collect(20*time.Second, nil)
	rec.watched("bookmarks off, timeoutSeconds=2: the events since the resourceVersion, then the end", path, "", w, events, end)
}

// TestConformanceBookmarkInterval measures when the first bookmark of a
// watch without timeoutSeconds arrives (the server's default deadline is
// far away, so this is its periodic bookmark), and meanwhile watches what a
// watch from a too-large resourceVersion gets in the same time.
//
// The watch cache sends a periodic bookmark only if its resourceVersion is
// newer than the watch's (cacheWatcher.process), so the test writes a pod
// the watch does not see, in another namespace, rather than count on other
// tests to move the pods' resourceVersion within the minute.
func TestConformanceBookmarkInterval(t *testing.T) {
	t.Parallel()
	const ns = "conf-bookmark-interval"
	a := adminAPI(t, shared)
	a.createNamespace(ns)
	a.createNamespace(ns + "-elsewhere")
	path := "/api/v1/namespaces/" + ns + "/pods?watch=true&allowWatchBookmarks=true&resourceVersion=" + a.listRV(ns)
	w := a.watch(path, "")
	tooLarge := a.watch("/api/v1/namespaces/"+ns+"/pods?watch=true&allowWatchBookmarks=true&resourceVersion="+tooLargeRV, "")
	require.Equal(t, http.StatusOK, w.status)
	require.Equal(t, http.StatusOK, tooLarge.status)
	a.createPod(ns+"-elsewhere", "mover", nil)
	ev, ok := w.next(100 * time.Second)
	require.True(t, ok, "no bookmark within 100 s")
	require.Equal(t, "BOOKMARK", ev.Type)
	recordTiming(t, "first periodic bookmark of a watch without timeoutSeconds", ev.at)
	assert.InDelta(t, 60, ev.at.Seconds(), 5)

	events, end := tooLarge.collect(5*time.Second, func(watchEvent) bool { return true })
	note := fmt.Sprintf("after %v: %d events (%v), %s", time.Since(tooLarge.start).Round(time.Second), len(events), eventTypes(events), end)
	if len(events) > 0 {
		note += fmt.Sprintf("; first after %v", events[0].at.Round(10*time.Millisecond))
	}
	recordNote(t, "too-large resourceVersion watch with bookmarks, no timeoutSeconds", note)
	assert.Empty(t, events, "a watch from a resourceVersion the server has not reached gets nothing, not even bookmarks")
}

func TestConformanceWatchInitialEvents(t *testing.T) {
	t.Parallel()
	const ns = "conf-initial-events"
	a := adminAPI(t, shared)
	rec := newRecorder(t, "watch-initial-events", "Streaming lists: sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true sends the state as ADDED events, then a BOOKMARK annotated k8s.io/initial-events-end, then live events. Then the parameter combinations the server refuses.")
	a.createNamespace(ns)
	for _, name := range []string{"alpha", "bravo", "charlie"} {
		a.createPod(ns, name, nil)
	}
	listRV := a.listRV(ns)
	base := "/api/v1/namespaces/" + ns + "/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
	for i, c := range []struct{ step, rv string }{
		{"no resourceVersion (a consistent read)", ""},
		{"resourceVersion of a list", listRV},
		{"resourceVersion=0", "0"},
	} {
		path := base
		if c.rv != "" {
			path += "&resourceVersion=" + c.rv
		}
		w := a.watch(path, "")
		events, end := w.collect(20*time.Second, isInitialEventsEnd)
		require.Equal(t, "stop", end, "no initial-events-end bookmark: %v", eventTypes(events))
		last := events[len(events)-1]
		recordTiming(t, "initial-events-end bookmark, "+c.step, last.at)
		rec.fact(c.step+": end bookmark resourceVersion >= list resourceVersion", parseRV(t, resourceVersion(last.Object)) >= parseRV(t, listRV))
		if i == 0 {
			// Live events follow the bookmark (and perhaps a plain
			// bookmark, which collapseBookmarks leaves out).
			a.createPod(ns, "delta", nil)
			more, moreEnd := w.collect(10*time.Second, func(ev watchEvent) bool { return ev.Type != "BOOKMARK" })
			events = append(events, more...)
			end = moreEnd
		}
		rec.watched(c.step, path, "", w, events, end)
	}

	for _, c := range []struct{ step, query string }{
		{"without allowWatchBookmarks", "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=2"},
		{"without resourceVersionMatch", "watch=true&sendInitialEvents=true&allowWatchBookmarks=true&timeoutSeconds=2"},
		{"with resourceVersionMatch=Exact", "watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=Exact&resourceVersion=" + listRV + "&timeoutSeconds=2"},
		{"on a LIST (no watch=true)", "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"},
		{"sendInitialEvents=false with resourceVersionMatch=NotOlderThan", "watch=true&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=" + listRV + "&timeoutSeconds=2"},
	} {
		path := "/api/v1/namespaces/" + ns + "/pods?" + c.query
		w := a.watch(path, "")
		events, end := w.collect(20*time.Second, nil)
		rec.watched(c.step, path, "", w, events, end)
	}
}

func TestConformanceWatchLabelSelector(t *testing.T) {
	t.Parallel()
	const ns = "conf-label-selector"
	a := adminAPI(t, shared)
	rec := newRecorder(t, "watch-label-selector", "A watch with labelSelector=app=web: a pod relabelled out of the selector, then one relabelled into it.")
	a.createNamespace(ns)
	a.createPod(ns, "alpha", map[string]string{"app": "web"})
	a.createPod(ns, "bravo", map[string]string{"app": "db"})
	listRV := a.listRV(ns)

	path := "/api/v1/namespaces/" + ns + "/pods?watch=true&labelSelector=app%3Dweb&resourceVersion=" + listRV
	w := a.watch(path, "")
	leftRV := a.labelPod(ns, "alpha", map[string]any{"app": "db"})
	enteredRV := a.labelPod(ns, "bravo", map[string]any{"app": "web"})
	n := 0
	events, end := w.collect(10*time.Second, func(watchEvent) bool { n++; return n == 2 })
	rec.watched("alpha leaves the selector, bravo enters it", path, "", w, events, end)
	require.Equal(t, []string{"DELETED", "ADDED"}, eventTypes(events))
	labels := func(obj map[string]any) any {
		meta, _ := obj["metadata"].(map[string]any)
		return meta["labels"]
	}
	rec.fact("DELETED object's labels (the state before the change)", labels(events[0].Object))
	rec.fact("DELETED resourceVersion == the update's", resourceVersion(events[0].Object) == leftRV)
	rec.fact("ADDED resourceVersion == the update's", resourceVersion(events[1].Object) == enteredRV)
}

func TestConformanceWatchTooLargeResourceVersion(t *testing.T) {
	t.Parallel()
	const ns = "conf-too-large-watch"
	a := adminAPI(t, shared)
	rec := newRecorder(t, "too-large-rv-watch", "WATCH from a resourceVersion far beyond the current one: each read for up to 10 s; the times are in timings.json (see also the long watch in TestConformanceBookmarkInterval).")
	a.createNamespace(ns)
	a.createPod(ns, "alpha", nil)
	for _, c := range []struct{ step, query string }{
		{"plain watch", "watch=true&resourceVersion=" + tooLargeRV},
		{"with bookmarks", "watch=true&allowWatchBookmarks=true&resourceVersion=" + tooLargeRV},
		{"with bookmarks and timeoutSeconds=5", "watch=true&allowWatchBookmarks=true&timeoutSeconds=5&resourceVersion=" + tooLargeRV},
		{"streaming list", "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=" + tooLargeRV},
	} {
		path := "/api/v1/namespaces/" + ns + "/pods?" + c.query
		w := a.watch(path, "")
		events, end := w.collect(10*time.Second, nil)
		switch {
		case len(events) > 0:
			recordTiming(t, "too-large resourceVersion watch, "+c.step+": first event after", events[0].at)
		case end == "EOF":
			recordTiming(t, "too-large resourceVersion watch, "+c.step+": no event, the end after", time.Since(w.start))
		}
		rec.watched(c.step, path, "", w, events, end)
	}
}

func TestConformanceWatchTooOldResourceVersion(t *testing.T) {
	t.Parallel()
	const ns = "conf-too-old-watch"
	a := adminAPI(t, shared)
	rec := newRecorder(t, "too-old-rv-watch", "WATCH and LIST from resourceVersion=1 on a cluster whose etcd never compacts (--etcd-compaction-interval=0): nothing is too old. See compaction-*.json for compacted versions.")
	a.createNamespace(ns)
	for _, c := range []struct{ step, query string }{
		{"plain watch", "watch=true&resourceVersion=1"},
		{"with bookmarks", "watch=true&allowWatchBookmarks=true&resourceVersion=1"},
		{"streaming list", "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=1"},
	} {
		path := "/api/v1/namespaces/" + ns + "/pods?" + c.query
		w := a.watch(path, "")
		events, end := w.collect(3*time.Second, nil)
		rec.watched(c.step+" (read for 3 s)", path, "", w, events, end)
	}
	path := "/api/v1/namespaces/" + ns + "/pods?resourceVersion=1&resourceVersionMatch=Exact"
	rec.plain("LIST at resourceVersion=1, Exact", "GET", path, "", a.do("GET", path, "", nil))
	path = "/api/v1/namespaces/" + ns + "/pods?resourceVersion=1&resourceVersionMatch=NotOlderThan"
	rec.plain("LIST at resourceVersion=1, NotOlderThan", "GET", path, "", a.do("GET", path, "", nil))
}

func TestConformanceProtobufWatch(t *testing.T) {
	t.Parallel()
	const ns = "conf-protobuf-watch"
	a := adminAPI(t, shared)
	rec := newRecorder(t, "protobuf-watch", "WATCH in protobuf: Content-Type and the frames (4-byte big-endian length, then a WatchEvent whose object is k8s\\x00 + runtime.Unknown).")
	a.createNamespace(ns)
	a.createPod(ns, "alpha", map[string]string{"app": "proto"})
	listRV := a.listRV(ns)

	record := func(step, path, accept string, act func(), max int, stop func(string, map[string]any) bool) {
		resp := a.stream(path, accept)
		out := response{Status: resp.StatusCode, Headers: pickHeaders(resp.Header)}
		if act != nil {
			act()
		}
		if resp.StatusCode == http.StatusOK {
			out.Events, out.End = readProtobufFrames(resp.Body, max, stop)
		} else {
			body, _ := io.ReadAll(resp.Body)
			out.Body = describeProtobuf(body)
		}
		rec.custom(step, "GET", path, accept, out)
	}
	isEnd := func(typ string, obj map[string]any) bool {
		meta, _ := obj["metadata"].(map[string]any)
		ann, _ := meta["annotations"].(map[string]any)
		return typ == "BOOKMARK" && ann[initialEventsEnd] == "true"
	}

	path := "/api/v1/namespaces/" + ns + "/pods?watch=true&allowWatchBookmarks=true&timeoutSeconds=4&resourceVersion=" + listRV
	record("watch with bookmarks, an event, the bookmark, the end", path, "application/vnd.kubernetes.protobuf",
		func() { a.createPod(ns, "bravo", map[string]string{"app": "proto"}) }, 10, nil)
	path = "/api/v1/namespaces/" + ns + "/pods?watch=true&timeoutSeconds=1&resourceVersion=" + listRV
	record("Accept with ;stream=watch", path, "application/vnd.kubernetes.protobuf;stream=watch", nil, 10, nil)
	path = "/api/v1/namespaces/" + ns + "/pods?watch=true&timeoutSeconds=1&resourceVersion=" + listRV
	record("client-go's protobuf Accept", path, "application/vnd.kubernetes.protobuf,application/json", nil, 10, nil)
	path = "/api/v1/namespaces/" + ns + "/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
	record("streaming list in protobuf", path, "application/vnd.kubernetes.protobuf", nil, 10, isEnd)
	path = "/api/v1/namespaces/" + ns + "/pods?watch=true&timeoutSeconds=1&resourceVersion=" + listRV
	record("watch as PartialObjectMetadata in protobuf", path, "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", nil, 10, nil)
	path = "/api/v1/namespaces/" + ns + "/pods?watch=true&timeoutSeconds=1&resourceVersion=" + listRV
	record("invalid parameters in protobuf", path+"&resourceVersionMatch=Exact", "application/vnd.kubernetes.protobuf", nil, 10, nil)
}

func TestConformancePartialObjectMetadataWatch(t *testing.T) {
	t.Parallel()
	const ns = "conf-partial-watch"
	a := adminAPI(t, shared)
	rec := newRecorder(t, "partial-metadata-watch", "WATCH asking for PartialObjectMetadata in JSON: events, bookmarks and the initial-events-end bookmark in metadata-only form.")
	a.createNamespace(ns)
	a.createPod(ns, "alpha", map[string]string{"app": "meta"})
	listRV := a.listRV(ns)
	const accept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"

	path := "/api/v1/namespaces/" + ns + "/pods?watch=true&allowWatchBookmarks=true&timeoutSeconds=4&resourceVersion=" + listRV
	w := a.watch(path, accept)
	a.createPod(ns, "bravo", map[string]string{"app": "meta"})
	events, end := w.collect(20*time.Second, nil)
	rec.watched("an event, the bookmark, the end", path, accept, w, events, end)

	path = "/api/v1/namespaces/" + ns + "/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
	w = a.watch(path, accept)
	events, end = w.collect(20*time.Second, isInitialEventsEnd)
	rec.watched("streaming list", path, accept, w, events, end)

	path = "/api/v1/namespaces/" + ns + "/pods?watch=true&timeoutSeconds=1&resourceVersion=" + listRV
	w = a.watch(path, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
	events, end = w.collect(10*time.Second, nil)
	rec.watched("asking for the list form", path, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", w, events, end)
}
