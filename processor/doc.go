// Package processor delivers the informer's notifications to its handlers:
// it is the last stage of the flow.
//
//	reflector ─▶ deltafifo ─▶ informer ─┬─▶ indexer
//	                                    └─▶ processor ─▶ Listener ─▶ Handler
//	                                                 ├─▶ Listener ─▶ Handler
//	                                                 └─▶ …
//
// The informer pops a key's deltas from the FIFO, applies them to the
// indexer, and turns each into a Notification (Add, Update or Delete, with
// the old and new object) that it gives to Processor.Distribute. The
// Processor holds one Listener per registered Handler and hands the
// notification to each of them.
//
// A Listener owns two goroutines and two unbuffered channels:
//
//	Distribute ─▶ addCh ─▶ pop() ─▶ nextCh ─▶ run() ─▶ Handler
//	                         │
//	                      backlog (a growable ring buffer)
//
// pop() is always ready to receive from addCh and keeps what it receives in
// its backlog; while the backlog is not empty it also offers the oldest
// notification on nextCh. run() receives from nextCh and calls the handler.
// So Distribute waits for no handler, and a handler that blocks holds up
// only its own listener, whose backlog grows meanwhile
// (ListenerOptions.MaxPending can bound how much of that growth is
// repeated updates of one object). A handler that panics is recovered, the
// panic is reported as a *HandlerPanicError, and its listener goes on with
// the next notification.
//
// Each listener also answers HasSynced for its handler: the informer has
// delivered its initial list and this handler has handled every notification
// of it; Synced is the same as a channel, closed by whichever of the two
// finishes last (the upstream reports its part with CheckSynced). A handler
// added late gets the cache as AddListener's initial notifications. And
// each may ask for a periodic resync: while some handler has a resync
// period, the informer calls ShouldResync once a second, and when it
// returns true, distributes the cache again (what the FIFO does not hold
// already) as Updates with isSync set, which reach only the listeners
// that were due.
//
// Run starts the goroutines and, when its context ends, stops them and waits
// for them. A listener can also be added and removed while Run is going.
//
// HandlerFuncs makes a Handler of plain functions; FilteringHandler wraps
// one so that it sees only the objects a filter accepts.
package processor
