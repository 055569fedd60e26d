package rest

import (
	"context"
	"sync/atomic"
	"time"
)

// firstGate lets a Client's first request go alone: the others wait until
// it has its connection (or its response, or has failed), and at most
// firstRequestWait. While no connection to a host is up, net/http dials
// one for every request waiting (it cannot know before the TLS handshake
// that HTTP/2 will carry them all on one), then throws the extra ones
// away: a Factory starting 500 informers made 560–780 TCP and TLS dials
// in a review's test, where one first request brings it to one. Once open
// the gate stays open: reconnections later are spread by the Reflectors'
// jittered backoff. A nil gate (plain http, or HTTP/2 off: nothing to
// share) lets everything through.
type firstGate struct {
	state atomic.Int32  // gateUnused, gateFirst or gateOpen
	open  chan struct{} // closed when the gate opens
	wait  time.Duration // firstRequestWait; tests set it
}

const (
	gateUnused = iota
	gateFirst
	gateOpen
)

// firstRequestWait is the longest the gate stays shut: a first request
// through a wrapped transport that reports no connection, and whose
// headers come late (a large list read from etcd), must not hold up the
// rest, which by then find the connection up.
const firstRequestWait = 2 * time.Second

func newFirstGate() *firstGate {
	return &firstGate{open: make(chan struct{}), wait: firstRequestWait}
}

// enter returns once the request may go: at once for the first request
// (first is true: call done when it is) and once the gate is open for the
// others; or with ctx's error if it ends first.
func (g *firstGate) enter(ctx context.Context) (first bool, err error) {
	switch {
	case g == nil || g.state.Load() == gateOpen:
		return false, nil
	case g.state.CompareAndSwap(gateUnused, gateFirst):
		return true, nil
	}
	t := time.NewTimer(g.wait)
	defer t.Stop()
	select {
	case <-g.open:
	case <-t.C:
		// The first request's answer is late: the connection is up by
		// now, and nobody waits any longer.
		g.done()
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return false, nil
}

// done opens the gate: the first request has its connection or its
// answer, or failed (or, from enter, was too long about it).
func (g *firstGate) done() {
	if g != nil && g.state.CompareAndSwap(gateFirst, gateOpen) {
		close(g.open)
	}
}
