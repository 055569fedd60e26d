package rest

import (
	"context"
	"sync/atomic"
	"time"
)

// firstGate lets a Client's first request go alone: the others wait until
// its response's headers have arrived or it has failed, and at most
// firstRequestWait. While no connection to a host is up, net/http dials
// one for every request waiting (it cannot know before the TLS handshake
// that HTTP/2 will carry them all on one), then throws the extra ones
// away: a Factory starting 500 informers made 560–780 TCP and TLS dials
// in a review's test, where one first request brings it to one. Past the
// first request the gate stays open for good: reconnections later are
// spread by the Reflectors' jittered backoff.
type firstGate struct {
	state atomic.Int32  // gateUnused, gateFirst or gateOpen
	open  chan struct{} // closed when the first request is done
}

const (
	gateUnused = iota
	gateFirst
	gateOpen
)

// firstRequestWait is the longest a request waits for the first: a LIST
// whose headers come late (a large list read from etcd) must not hold up
// the rest, which by then find the connection up.
const firstRequestWait = 2 * time.Second

func newFirstGate() *firstGate { return &firstGate{open: make(chan struct{})} }

// enter returns once the request may go: at once for the first request
// (first is true: call done when it is) and once the gate is open, after
// the first request or firstRequestWait for the others; or with ctx's
// error if it ends first.
func (g *firstGate) enter(ctx context.Context) (first bool, err error) {
	switch {
	case g.state.Load() == gateOpen:
		return false, nil
	case g.state.CompareAndSwap(gateUnused, gateFirst):
		return true, nil
	}
	t := time.NewTimer(firstRequestWait)
	defer t.Stop()
	select {
	case <-g.open:
	case <-t.C:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return false, nil
}

// done opens the gate: the first request has its answer, or failed.
func (g *firstGate) done() {
	if g.state.CompareAndSwap(gateFirst, gateOpen) {
		close(g.open)
	}
}
