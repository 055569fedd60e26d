package rest

import (
	"context"
	"sync/atomic"
	"time"
)

// firstGate lets a Client's first request go alone: the others wait until
// it has its connection, and then as many as the connection takes before
// the server's SETTINGS are known (preSettingsStreams); the rest wait for
// the first answer on it (or for the first request to fail), and at most
// firstRequestWait. While no connection to a host is up, net/http dials
// one for every request waiting (it cannot know before the TLS handshake
// that HTTP/2 will carry them all on one), then throws the extra ones
// away: a Factory starting 500 informers made 560–780 TCP and TLS dials
// in a review's test, where one first request brings it to one; and
// past 100 requests before SETTINGS, it dialed one for each request over
// 100 (101 dials for 200 informers, with 5 ms of latency). Once open the
// gate stays open. Reconnections later are spread only by the
// Reflectors' jittered backoff, which is not enough against a remote
// apiserver: with a 100 ms handshake, 200 watches cut at once made 43–56
// dials to come back on one connection (a review's test). A nil gate
// (plain http, or HTTP/2 off: nothing to share) lets everything through.
type firstGate struct {
	state atomic.Int32 // gateUnused, gateFirst, gateLimited or gateOpen
	// budget is how many more requests may go while gateLimited: the
	// connection's streams before the server's SETTINGS are known (Go's
	// HTTP/2 client assumes 100 until then).
	budget  atomic.Int32
	open    chan struct{} // closed when the gate opens
	limited chan struct{} // closed when the first has its connection
	wait    time.Duration // firstRequestWait; tests set it
}

const (
	gateUnused = iota
	gateFirst
	gateLimited // the first has its connection; its SETTINGS may be unknown yet
	gateOpen
)

// preSettingsStreams is how many requests, the first included, may share a
// new HTTP/2 connection before any answer has come on it: Go's client
// assumes 100 concurrent streams until the server's SETTINGS arrive, and
// dials a connection for each request beyond.
const preSettingsStreams = 100

// firstRequestWait is the longest the gate stays shut: a first request
// through a wrapped transport that reports no connection, and whose
// headers come late (a large list read from etcd), must not hold up the
// rest, which by then find the connection up.
const firstRequestWait = 2 * time.Second

func newFirstGate() *firstGate {
	return &firstGate{open: make(chan struct{}), limited: make(chan struct{}), wait: firstRequestWait}
}

// enter returns once the request may go: at once for the first request
// (first is true: call connected when it has its connection, and done when
// it is); for the others, once the first's connection is up and has room
// for them before the server's SETTINGS are known, or once the gate is
// open; or with ctx's error if it ends first.
func (g *firstGate) enter(ctx context.Context) (first bool, err error) {
	switch {
	case g == nil || g.state.Load() == gateOpen:
		return false, nil
	case g.state.CompareAndSwap(gateUnused, gateFirst):
		return true, nil
	}
	t := time.NewTimer(g.wait)
	defer t.Stop()
	limited := g.limited
	for {
		if g.state.Load() == gateLimited && g.budget.Add(-1) >= 0 {
			return false, nil
		}
		select {
		case <-g.open:
		case <-limited:
			limited = nil // try the budget once more
			continue
		case <-t.C:
			// The first request's answer is late: the connection is up by
			// now, and nobody waits any longer.
			g.done()
		case <-ctx.Done():
			return false, ctx.Err()
		}
		return false, nil
	}
}

// connected lets preSettingsStreams-1 more requests go: the first has its
// connection, whose stream limit is not known until an answer comes.
func (g *firstGate) connected() {
	if g != nil && g.state.Load() == gateFirst { // once: a retry gets a connection again
		g.budget.Store(preSettingsStreams - 1)
		if g.state.CompareAndSwap(gateFirst, gateLimited) {
			close(g.limited)
		}
	}
}

// done opens the gate: an answer came on the connection (its SETTINGS
// came before), or the first request failed (or, from enter, was too
// long about it).
func (g *firstGate) done() {
	if g == nil {
		return
	}
	if g.state.CompareAndSwap(gateFirst, gateOpen) || g.state.CompareAndSwap(gateLimited, gateOpen) {
		close(g.open)
	}
}
