package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/listwatch/listwatch/internal/e2e/cluster"
)

// TestConformanceCompaction records what an apiserver with its watch cache
// (the default) answers for resource versions etcd has compacted away.
func TestConformanceCompaction(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	rec := newRecorder(t, "compaction-watchcache",
		"A cluster with the watch cache on (the default): resource versions compacted in etcd (a direct etcd compaction, the apiserver not told) used to continue a list, to list and to watch; then the same after an apiserver restart, which starts a new watch cache.")
	recordCompaction(t, c, rec, true)
}

// TestConformanceCompactionWithoutWatchCache is the same with
// --watch-cache=false: every read goes to etcd.
func TestConformanceCompactionWithoutWatchCache(t *testing.T) {
	t.Parallel()
	c := startCluster(t, "--watch-cache=false")
	recordCompaction(t, c, newRecorder(t, "compaction-no-watchcache",
		"A cluster with --watch-cache=false: resource versions compacted in etcd used to continue a list, to list and to watch."), false)
}

// recordCompaction writes pods, compacts etcd past the first list's
// resource version, then records reads at the compacted version; with
// restart, it restarts the apiserver and records reads from before.
func recordCompaction(t *testing.T, c *cluster.Cluster, rec *recorder, restart bool) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	const ns = "conf-compaction"
	a := adminAPI(t, c)
	a.createNamespace(ns)
	for _, name := range []string{"alpha", "bravo", "charlie"} {
		a.createPod(ns, name, nil)
	}
	page := a.must("GET", "/api/v1/namespaces/"+ns+"/pods?limit=1", nil, http.StatusOK)
	token, oldRV := continueOf(page), resourceVersion(page)
	require.NotEmpty(t, token)
	// Two writes, so that watching from oldRV (which starts at oldRV+1)
	// needs a compacted revision too.
	a.createPod(ns, "delta", nil)
	a.createPod(ns, "echo", nil)
	rev, err := c.EtcdRevision(ctx)
	require.NoError(t, err)
	require.Greater(t, rev, int64(parseRV(t, oldRV))+1)
	require.NoError(t, c.CompactEtcd(ctx, rev))
	rec.fact("compacted at etcd's revision after the writes", true)

	path := "/api/v1/namespaces/" + ns + "/pods?limit=1&continue=" + url.QueryEscape(token)
	res := a.do("GET", path, "", nil)
	rec.plain("continue a list whose resourceVersion was compacted", "GET", path, "", res)
	if res.status == http.StatusGone {
		if next := continueOf(res.json(t)); next != "" {
			rec.fact("410's continue token decoded", decodeContinue(t, next, oldRV))
			path := "/api/v1/namespaces/" + ns + "/pods?limit=1&continue=" + url.QueryEscape(next)
			res := a.do("GET", path, "", nil)
			rec.plain("follow the continue token the 410 offers", "GET", path, "", res)
		}
	}

	base := "/api/v1/namespaces/" + ns + "/pods?"
	for _, c := range []struct{ step, query string }{
		{"LIST at the compacted resourceVersion, Exact", "resourceVersion=" + oldRV + "&resourceVersionMatch=Exact"},
		{"LIST at the compacted resourceVersion, Exact, limit=1", "limit=1&resourceVersion=" + oldRV + "&resourceVersionMatch=Exact"},
		{"LIST at the compacted resourceVersion, NotOlderThan", "resourceVersion=" + oldRV + "&resourceVersionMatch=NotOlderThan"},
		{"LIST at the compacted resourceVersion, no resourceVersionMatch, limit=1", "limit=1&resourceVersion=" + oldRV},
		{"LIST at resourceVersion=1, Exact", "resourceVersion=1&resourceVersionMatch=Exact"},
	} {
		rec.plain(c.step, "GET", base+c.query, "", a.do("GET", base+c.query, "", nil))
	}

	watch := func(step, query string) {
		w := a.watch(base+query, "")
		events, end := w.collect(3*time.Second, nil)
		if end == "EOF" && len(events) > 0 && events[len(events)-1].Type == "ERROR" {
			last := events[len(events)-1]
			recordTiming(t, rec.g.Case+": "+step+": ERROR event after", last.at)
			if msg, _ := last.Object["message"].(string); strings.HasPrefix(msg, "too old resource version: ") {
				var asked, oldest uint64
				_, err := fmt.Sscanf(msg, "too old resource version: %d (%d)", &asked, &oldest)
				require.NoError(t, err, "message %q", msg)
				rec.fact(step+": message's first number is the requested resourceVersion", strconv.FormatUint(asked, 10) == w.query().Get("resourceVersion") || (asked == 0 && w.query().Get("resourceVersion") == "1"))
				rec.fact(step+": message's second number > the first", oldest > asked)
			}
		}
		rec.watched(step+" (read for 3 s)", base+query, "", w, events, end)
	}
	for _, c := range []struct{ step, query string }{
		{"WATCH from the compacted resourceVersion", "watch=true&resourceVersion=" + oldRV},
		{"WATCH from the compacted resourceVersion, bookmarks on", "watch=true&allowWatchBookmarks=true&resourceVersion=" + oldRV},
		{"WATCH from resourceVersion=1", "watch=true&resourceVersion=1"},
		{"streaming list from the compacted resourceVersion", "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=" + oldRV},
		{"streaming list from resourceVersion=1", "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=1"},
	} {
		watch(c.step, c.query)
	}

	path = base + "watch=true&resourceVersion=1"
	resp := a.stream(path, "application/vnd.kubernetes.protobuf")
	out := response{Status: resp.StatusCode, Headers: pickHeaders(resp.Header)}
	if resp.StatusCode == http.StatusOK {
		done := make(chan struct{})
		go func() {
			defer close(done)
			out.Events, out.End = readProtobufFrames(resp.Body, 10, func(typ string, _ map[string]any) bool { return typ == "ERROR" })
		}()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			resp.Body.Close()
			<-done
			out.End = "timeout"
		}
	} else {
		body, _ := io.ReadAll(resp.Body)
		out.Body = describeProtobuf(body)
	}
	rec.custom("WATCH from resourceVersion=1 in protobuf (read for 3 s)", "GET", path, "application/vnd.kubernetes.protobuf", out)

	if !restart {
		return
	}
	lastRV := a.listRV(ns)
	require.NoError(t, c.RestartAPIServer(ctx))
	a.client.CloseIdleConnections()
	rec.fact("apiserver restarted", true)
	path = base + "limit=1&continue=" + url.QueryEscape(token)
	rec.plain("after a restart: continue the compacted list", "GET", path, "", a.do("GET", path, "", nil))
	path = base + "resourceVersion=" + lastRV + "&resourceVersionMatch=Exact"
	rec.plain("after a restart: LIST at the last resourceVersion before the restart, Exact", "GET", path, "", a.do("GET", path, "", nil))
	watch("after a restart: WATCH from the compacted resourceVersion", "watch=true&resourceVersion="+oldRV)
	watch("after a restart: WATCH from the last resourceVersion before the restart", "watch=true&resourceVersion="+lastRV)
	watch("after a restart: WATCH from resourceVersion=1", "watch=true&resourceVersion=1")
}
