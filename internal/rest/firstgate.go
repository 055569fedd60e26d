package rest

import (
	"context"
	"sync/atomic"
	"time"
)

// firstGate lets a request go alone while no connection is up: the others
// wait until it has its connection, and then as many as the connection
// takes before the server's SETTINGS are known (preSettingsStreams); the
// rest wait for the first answer on it (or for the first request to fail),
// and at most firstRequestWait. While no connection to a host is up,
// net/http dials one for every request waiting (it cannot know before the
// TLS handshake that HTTP/2 will carry them all on one), then throws the
// extra ones away: a Factory starting 500 informers made 560–780 TCP and
// TLS dials in a review's test, where one first request brings it to one;
// past 100 requests before SETTINGS, it dialed one for each request over
// 100 (101 dials for 200 informers, with 5 ms of latency); and 200 watches
// cut at once, coming back after their Reflectors' jittered backoff, made
// 43–58 dials through a slow handshake. Each time the connections are all
// gone (cut, or closed by the Client) the gate starts a new round, whose
// first request goes alone again. It does not spread dials while a
// connection is up: requests past the server's stream limit each dial one
// until a second connection is up. A nil gate (plain http, or HTTP/2 off:
// nothing to share) lets everything through.
type firstGate struct {
	round atomic.Pointer[gateRound]
	// idle reports that connections were made and none is up now (a
	// transport that never dials through the Client, a test's, never
	// starts a new round).
	idle func() bool
	wait time.Duration // firstRequestWait; tests set it
}

// gateRound is one round of the gate: from a first request to the gate
// open.
type gateRound struct {
	state atomic.Int32 // gateUnused, gateFirst, gateLimited or gateOpen
	// budget is how many more requests may go while gateLimited: the
	// connection's streams before the server's SETTINGS are known (Go's
	// HTTP/2 client assumes 100 until then).
	budget  atomic.Int32
	open    chan struct{} // closed when the gate opens
	limited chan struct{} // closed when the first has its connection
	wait    time.Duration
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

// newFirstGate returns a gate whose first request goes alone, and which
// starts a new round whenever idle reports no connection up (nil: never).
func newFirstGate(idle func() bool) *firstGate {
	if idle == nil {
		idle = func() bool { return false }
	}
	g := &firstGate{idle: idle, wait: firstRequestWait}
	g.round.Store(g.newRound(gateUnused))
	return g
}

func (g *firstGate) newRound(state int32) *gateRound {
	r := &gateRound{open: make(chan struct{}), limited: make(chan struct{}), wait: g.wait}
	r.state.Store(state)
	return r
}

// enter returns once the request may go, with the round it went in: at
// once for the first request of a round (first is true: call the round's
// connected when it has its connection, and done when it is); for the
// others, once the first's connection is up and has room for them before
// the server's SETTINGS are known, or once the round is open; or with
// ctx's error if it ends first. A nil gate returns a nil round.
func (g *firstGate) enter(ctx context.Context) (r *gateRound, first bool, err error) {
	if g == nil {
		return nil, false, nil
	}
	r = g.round.Load()
	if r.state.Load() == gateOpen {
		if !g.idle() {
			return r, false, nil
		}
		// Every connection is gone: this request goes alone again.
		next := g.newRound(gateFirst)
		if g.round.CompareAndSwap(r, next) {
			return next, true, nil
		}
		r = g.round.Load() // another request's round: wait in it
	}
	first, err = r.enter(ctx)
	return r, first, err
}

func (r *gateRound) enter(ctx context.Context) (first bool, err error) {
	switch {
	case r.state.Load() == gateOpen:
		return false, nil
	case r.state.CompareAndSwap(gateUnused, gateFirst):
		return true, nil
	}
	t := time.NewTimer(r.wait)
	defer t.Stop()
	limited := r.limited
	for {
		if r.state.Load() == gateLimited && r.budget.Add(-1) >= 0 {
			return false, nil
		}
		select {
		case <-r.open:
		case <-limited:
			limited = nil // try the budget once more
			continue
		case <-t.C:
			// The first request's answer is late: the connection is up by
			// now, and nobody waits any longer.
			r.done()
		case <-ctx.Done():
			return false, ctx.Err()
		}
		return false, nil
	}
}

// isOpen reports whether the round lets everyone through (a nil round
// does).
func (r *gateRound) isOpen() bool {
	return r == nil || r.state.Load() == gateOpen
}

// connected lets preSettingsStreams-1 more requests go: the first has its
// connection, whose stream limit is not known until an answer comes.
func (r *gateRound) connected() {
	if r != nil && r.state.Load() == gateFirst { // once: a retry gets a connection again
		r.budget.Store(preSettingsStreams - 1)
		if r.state.CompareAndSwap(gateFirst, gateLimited) {
			close(r.limited)
		}
	}
}

// done opens the round: an answer came on the connection (its SETTINGS
// came before), or the first request failed (or, from enter, was too long
// about it).
func (r *gateRound) done() {
	if r == nil {
		return
	}
	if r.state.CompareAndSwap(gateFirst, gateOpen) || r.state.CompareAndSwap(gateLimited, gateOpen) {
		close(r.open)
	}
}
