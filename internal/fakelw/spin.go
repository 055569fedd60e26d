package fakelw

import (
	"fmt"
	"sync"
	"time"
)

// maxRequestsAtOnce is how many lists and watches may be asked for at one
// instant before a SpinGuard panics.
const maxRequestsAtOnce = 10_000

// A SpinGuard turns a test that would hang into one that fails at once,
// saying why. Outside a synctest bubble no two requests come at the same
// instant. Inside one, time stands still while a goroutine runs: a client
// that lists or watches again at once, over and over (a relist or a
// backoff gone missing), never lets the bubble's clock move, and the test
// would hang until the test binary's timeout with no word of why. Every
// Source has one, which counts its watches and the first pages of its
// lists (a list's next page is progress, not a retry); a test's own
// ListerWatcher calls Asked from its List and Watch. The zero value is
// ready to use and safe for concurrent use.
type SpinGuard struct {
	mu sync.Mutex
	at time.Time
	n  int
}

// Asked counts a list or watch asked for now, and panics once more than
// maxRequestsAtOnce have been asked for at this instant.
func (g *SpinGuard) Asked() {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if !now.Equal(g.at) {
		g.at, g.n = now, 0
	}
	if g.n++; g.n > maxRequestsAtOnce {
		panic(fmt.Sprintf("fakelw: %d lists and watches at one instant (%s): the client asks again without waiting, which in a synctest bubble stops the clock for good", g.n, now.Format(time.RFC3339Nano)))
	}
}
