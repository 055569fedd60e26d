package rest

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"
)

// firstGate lets a request go alone while no connection is usable: the
// others wait until it has its connection, and then as many as the
// connection takes before the server's SETTINGS are known
// (preSettingsStreams); the rest wait for the first answer on it, and at
// most firstRequestWait in all. If the first request fails before it has
// its connection (its context ended, or the server is not up yet), or
// leaves no connection usable, one of the others goes alone in its place.
//
// While no connection to a host is up, net/http dials one for every
// request waiting (it cannot know before the TLS handshake that HTTP/2
// will carry them all on one), and one for every request past the streams
// it assumes before SETTINGS: with the gate, a burst of requests on a
// Client with no connection up, or coming back after their connection was
// cut, dials one (TestFirstRequestGoesAlone,
// TestFirstGateLetsGoWhatTheConnectionTakesBeforeItsSettings,
// TestWatchesCutAtOnceComeBackOnOneConnection,
// TestWatchesComeBackOnOneConnectionOnceTheServerIsUp).
//
// Past the gate, one request at a time looks for a connection (seek): it
// holds the others until the transport has given it one, at once when a
// connection has room. When every connection is at the server's stream
// limit (kube-apiserver's is 100), net/http dials one for every request
// that finds none with room; with seek, one dials and the others find its
// connection (TestWatchesPastTheStreamLimitOpenOneMoreConnection), and a
// server that never finishes its handshakes is dialed once per
// firstRequestWait (TestAHungHandshakeIsDialedOnePerWait).
//
// A connection is usable once a request was given it, until it is closed
// or fails to read (connTracker). A server that ends its streams before
// its connection (a graceful shutdown, whose TLS close the HTTP/2 client
// reads before it closes the connection) leaves a moment in which a
// request sent again finds the connection still counted, goes, and dials;
// so does one sent while the only connection is at the server's stream
// limit, until a second one is up; and a burst of requests just after the
// CA file changed, which go through a new transport while the old one's
// connections still count. Once a first request's connection speaks
// HTTP/1.1 (a server without HTTP/2), the gate holds nothing: every
// request needs a connection of its own. A nil gate (plain http, or
// HTTP/2 off: nothing to share) lets everything through.
type firstGate struct {
	round atomic.Pointer[gateRound]
	// idle reports that connections were dialed and none is usable now
	// (a transport that never dials through the Client, a test's, never
	// starts a new round).
	idle func() bool
	wait time.Duration // firstRequestWait; tests set it

	// seeking is held by the request looking for a connection (seek).
	seeking chan struct{}
	// dials reports that requests reach the Client's own dialer (one
	// was dialed) and share connections (the last one given speaks
	// HTTP/2): only then does a request hold seeking. Over HTTP/1.1 every
	// request dials its own; a transport of the caller's that answers by
	// itself never dials (nil: never).
	dials func() bool
	// untraced is set once a request was answered without the transport
	// telling which connection it was given (a transport of the caller's
	// that does not reach net/http's): seeking would hold every request
	// until the last one's answer, so nobody holds it any more.
	untraced atomic.Bool
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
	// again: the round was abandoned (its first failed before it had
	// its connection, or left none usable); the others go through the
	// gate again, and one of them goes first.
	again atomic.Bool
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

// newFirstGate returns a gate whose first request goes alone, which
// starts a new round whenever idle reports no connection usable (nil:
// never), and past which one request at a time looks for a connection
// while dials reports that they share the Client's (nil: never).
func newFirstGate(idle, dials func() bool) *firstGate {
	if idle == nil {
		idle = func() bool { return false }
	}
	g := &firstGate{idle: idle, dials: dials, wait: firstRequestWait, seeking: make(chan struct{}, 1)}
	g.round.Store(g.newRound(gateUnused))
	return g
}

func (g *firstGate) newRound(state int32) *gateRound {
	r := &gateRound{open: make(chan struct{}), limited: make(chan struct{})}
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
	var timeout <-chan time.Time // one wait for all the rounds a request waits in
	for {
		r = g.round.Load()
		if r.state.Load() == gateOpen {
			if !g.idle() {
				return r, false, nil
			}
			// No connection is usable: this request goes alone again.
			next := g.newRound(gateFirst)
			if g.round.CompareAndSwap(r, next) {
				return next, true, nil
			}
			r = g.round.Load() // another request's round: wait in it
		}
		if timeout == nil {
			t := time.NewTimer(g.wait)
			defer t.Stop()
			timeout = t.C
		}
		var again bool
		first, again, err = r.enter(ctx, timeout)
		if !again {
			return r, first, err
		}
	}
}

// abandon ends round r whose first request failed before it had a
// connection, or with no connection usable left: the requests waiting in
// it go through the gate again, one of them first of a new round, rather
// than all at once while no connection is up (each would dial its own).
func (g *firstGate) abandon(r *gateRound) {
	if g == nil {
		return
	}
	switch r.state.Load() {
	case gateFirst: // it failed before it had its connection
	case gateLimited: // it had its connection: only if none is usable now
		if !g.idle() {
			return
		}
	default: // the round is open: nobody waits in it
		return
	}
	g.round.CompareAndSwap(r, g.newRound(gateUnused))
	r.again.Store(true)
	r.done()
}

// enter waits in round r as firstGate.enter says, until timeout at most;
// again is true if the round was abandoned (the request must go through
// the gate again).
func (r *gateRound) enter(ctx context.Context, timeout <-chan time.Time) (first, again bool, err error) {
	switch {
	case r.state.Load() == gateOpen:
		return false, r.again.Load(), nil
	case r.state.CompareAndSwap(gateUnused, gateFirst):
		return true, false, nil
	}
	limited := r.limited
	for {
		if r.state.Load() == gateLimited && r.budget.Add(-1) >= 0 {
			return false, false, nil
		}
		select {
		case <-r.open:
			return false, r.again.Load(), nil
		case <-limited:
			limited = nil // try the budget once more
			continue
		case <-timeout:
			// The first request's answer is late: the connection is up by
			// now, and nobody waits any longer.
			r.done()
		case <-ctx.Done():
			return false, false, ctx.Err()
		}
		return false, false, nil
	}
}

// seek returns once no other request is looking for a connection, with the
// seeker this request looks as: hand it to traced, and call its finish when
// the transport is done with the request. The first of a round does not
// seek (the gate holds the others); nor does any request over HTTP/1.1,
// or before the Client has dialed.
// A seeker gives way when its request has a connection, fails, or after
// the gate's wait at most (a dial to a server that does not answer must
// not hold the others for ever). A nil gate returns a nil seeker, which
// does nothing.
func (g *firstGate) seek(ctx context.Context, first bool) (*seeker, error) {
	if g == nil || first || g.untraced.Load() || g.dials == nil || !g.dials() {
		return nil, nil
	}
	select {
	case g.seeking <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if g.untraced.Load() || !g.dials() { // learnt while it waited (HTTP/1.1)
		<-g.seeking
		return nil, nil
	}
	s := &seeker{g: g}
	s.timer = time.AfterFunc(g.wait, s.release) // release: s.timer may not be set yet
	return s, nil
}

// seeker is a request looking for a connection: it holds the gate's
// seeking until it gives way.
type seeker struct {
	g     *firstGate
	timer *time.Timer
	once  sync.Once
	got   atomic.Bool // the transport gave it a connection
}

// gotConn is called when the transport has given the request a connection.
func (s *seeker) gotConn() {
	if s != nil {
		s.got.Store(true)
		s.giveWay()
	}
}

// finish is called when the transport is done with the request: answered
// is true if an answer came.
func (s *seeker) finish(answered bool) {
	if s == nil {
		return
	}
	if answered && !s.got.Load() {
		s.g.untraced.Store(true)
	}
	s.giveWay()
}

// giveWay lets the next request look for a connection.
func (s *seeker) giveWay() {
	s.timer.Stop()
	s.release()
}

func (s *seeker) release() { s.once.Do(func() { <-s.g.seeking }) }

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

// traced returns req with the hooks the gate needs, for a request that
// went in round (first: as its first). Every request tells the gate which
// connection it was given (noteConn); the first of a round lets up to the
// connection's first streams go once it has it, not at its answer, which
// may be a large LIST read from etcd; any answer in a round not open yet
// opens it, the connection's stream limit then known; a seeker gives way
// once its request has a connection. A nil round (no gate) leaves req as
// it is.
func traced(req *http.Request, round *gateRound, first bool, s *seeker) *http.Request {
	if round == nil {
		return req
	}
	// A new trace each time: WithClientTrace writes into the one it is
	// given.
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		noteConn(info)
		s.gotConn()
	}}
	switch {
	case first:
		trace.GotConn = func(info httptrace.GotConnInfo) {
			switch usable, http1 := noteConn(info); {
			case usable && http1:
				round.done() // HTTP/1.1: nothing to share, nobody waits
			case usable:
				round.connected()
			} // else it fails, and another goes first (abandon)
		}
		trace.GotFirstResponseByte = round.done
	case !round.isOpen():
		trace.GotFirstResponseByte = round.done
	}
	return req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
}
