package fakelw

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// maxRequestsAtOnce is how many lists and watches one client may ask for
// at one instant before a SpinGuard panics.
const maxRequestsAtOnce = 10_000

// maxAllAtOnce is how many lists and watches all clients together may ask
// for at one instant: a backstop for a client that asks with a new
// context each time, which the count per client cannot see.
const maxAllAtOnce = 100 * maxRequestsAtOnce

// A SpinGuard turns a test that would hang into one that fails at once,
// saying why. Outside a synctest bubble no two requests come at the same
// instant. Inside one, time stands still while a goroutine runs: a client
// that lists or watches again at once, over and over (a relist or a
// backoff gone missing), never lets the bubble's clock move, and the test
// would hang until the test binary's timeout with no word of why. Every
// Source has one, which counts its watches and the first pages of its
// lists (a list's next page is progress, not a retry); a test's own
// ListerWatcher calls Asked from its List and Watch.
//
// A client is the context it asks with: a Reflector asks with the one it
// runs with, every time. So thousands of informers started at one instant
// on one Source, each listing and watching once, are no spin; one client
// past maxRequestsAtOnce at one instant, with nothing changed in between,
// is, and so are all clients together past maxAllAtOnce. A client that
// asks again once the Source has changed (AskedAt's state) follows the
// change, as a Reflector does when a test ends its watch after every
// write: its count starts over. The zero value is ready to use and safe
// for concurrent use.
type SpinGuard struct {
	mu      sync.Mutex
	at      time.Time
	all     int
	clients map[context.Context]spinCount // at the instant at
}

// spinCount is how many times a client asked at one instant since the
// Source was last at state.
type spinCount struct {
	n     int
	state uint64
}

// Asked is AskedAt for a source whose state is not told.
func (g *SpinGuard) Asked(ctx context.Context) { g.AskedAt(ctx, 0) }

// AskedAt counts a list or watch asked for now with ctx of a source at
// state (its resourceVersion), and panics once more than
// maxRequestsAtOnce have been asked for with ctx at this instant and this
// state, or more than maxAllAtOnce with any.
func (g *SpinGuard) AskedAt(ctx context.Context, state uint64) {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if !now.Equal(g.at) || g.clients == nil {
		g.at, g.all, g.clients = now, 0, map[context.Context]spinCount{}
	}
	g.all++
	c := g.clients[ctx]
	if c.state != state {
		c = spinCount{state: state}
	}
	c.n++
	g.clients[ctx] = c
	if n := c.n; n > maxRequestsAtOnce {
		panic(fmt.Sprintf("fakelw: %d lists and watches at one instant (%s) from one client: it asks again without waiting, which in a synctest bubble stops the clock for good", n, now.Format(time.RFC3339Nano)))
	}
	if g.all > maxAllAtOnce {
		panic(fmt.Sprintf("fakelw: %d lists and watches at one instant (%s): a client asks again without waiting, which in a synctest bubble stops the clock for good", g.all, now.Format(time.RFC3339Nano)))
	}
}
