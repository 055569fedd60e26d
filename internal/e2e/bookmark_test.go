package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/listwatch/listwatch/reflector"
)

// TestBookmarkAdvancesRV: an informer whose namespace is
// quiet while other namespaces change must move its resourceVersion
// forward with the bookmarks the server sends, and reopen its watches from
// there. (Without it, a watch resumed after a compaction gets a 410 and
// a full relist.)
func TestBookmarkAdvancesRV(t *testing.T) {
	srv := startReal(t, false)
	const quiet, busy = "bm-quiet", "bm-busy"
	srv.createNamespace(t, quiet)
	srv.createNamespace(t, busy)
	w := newWriter(t, srv)
	w.createN(pods, quiet, 2)
	w.createN(pods, busy, 2)
	c, err := reflector.NewClient(srv.config(srv.addr(), false))
	require.NoError(t, err)
	x := pods.alone(t, c, reflector.Target{Namespace: quiet}, "quiet", nil,
		reflectorTuning{mode: reflector.ListWatch, minWatchTimeout: 4 * time.Second})
	runStandalone(t, x)
	listed := rvNumber(x.lastRV())
	var last uint64
	for i := range 24 {
		w.touch(pods, busy, fmt.Sprint("o", i%2))
		time.Sleep(500 * time.Millisecond)
	}
	last = rvNumber(x.lastRV())
	require.Greater(t, last, listed, "LastSyncResourceVersion did not move past the list's while only bookmarks came")
	// And the watches reopen from there: at least one past the list's.
	var from []uint64
	for _, r := range requestsFor(srv.requests(t), pods, quiet, "", time.Time{}) {
		if r.verb == "watch" {
			from = append(from, rvNumber(r.query.Get("resourceVersion")))
		}
	}
	require.GreaterOrEqual(t, len(from), 2, "the watches of timeoutSeconds 4 to 8 s were reopened")
	require.Greater(t, slices.Max(from), listed, "every watch reopened from the list's resourceVersion %d, not a bookmark's: %v", listed, from)
}
