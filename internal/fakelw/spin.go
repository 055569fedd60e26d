package fakelw

import (
	"fmt"
	"sync"
	"time"
)

// maxWatchesAtOnce is how many watches may be asked for at one instant
// before a SpinGuard panics.
const maxWatchesAtOnce = 10_000

// A SpinGuard turns a test that would hang into one that fails at once,
// saying why. Outside a synctest bubble no two watches come at the same
// instant. Inside one, time stands still while a goroutine runs: a client
// that watches again at once, over and over (a relist or a backoff gone
// missing), never lets the bubble's clock move, and the test would hang
// until the test binary's timeout with no word of why. Every Source has
// one; a test's own ListerWatcher calls Watched from its Watch. The zero
// value is ready to use and safe for concurrent use.
type SpinGuard struct {
	mu sync.Mutex
	at time.Time
	n  int
}

// Watched counts a watch asked for now, and panics once more than
// maxWatchesAtOnce have been asked for at this instant.
func (g *SpinGuard) Watched() {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if !now.Equal(g.at) {
		g.at, g.n = now, 0
	}
	if g.n++; g.n > maxWatchesAtOnce {
		panic(fmt.Sprintf("fakelw: %d watches at one instant (%s): the client watches again without waiting, which in a synctest bubble stops the clock for good", g.n, now.Format(time.RFC3339Nano)))
	}
}
