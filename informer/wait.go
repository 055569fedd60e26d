package informer

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Syncer is what WaitForSync waits for: a *SharedIndexInformer, synced
// once its cache holds the first list, or a *Registration, synced once its
// handler has been told of every object in that list. Synced returns a
// channel closed once synced, never nil (WaitForSync refuses one).
type Syncer interface {
	Synced() <-chan struct{}
}

// WaitForSync waits until every one of syncers has synced, or ctx ends; it
// is client-go's cache.WaitForCacheSync for caches of any types and their
// handlers. It returns nil once all have synced. Otherwise its error names
// each that did not, and why, as Factory.WaitForCacheSync's does: an
// informer's last list or watch error (a registration's too, while its
// informer has not synced), or a registration stopped (its handler
// removed, or its informer stopped) before it synced. Once ctx has
// ended, errors.Is finds ctx's error in an informer's reason too, whether
// it was still retrying or had stopped.
//
// It stops waiting for an informer once its Run has returned (Stopped), and
// for a registration once its handler is removed and the call it was in
// then, if any, has returned (the registration's Stopped). Unlike
// Factory.WaitForCacheSync, it cannot tell an informer never run from one
// still listing: it waits for either until ctx ends.
func WaitForSync(ctx context.Context, syncers ...Syncer) error {
	if ctx == nil {
		return errors.New("informer: WaitForSync: nil context")
	}
	waits := make([]waiting, len(syncers))
	for i, s := range syncers {
		if s == nil || isNilPointer(s) {
			return fmt.Errorf("informer: WaitForSync: syncer %d of %d is nil", i+1, len(syncers))
		}
		w := waiting{name: fmt.Sprintf("syncer %d (%T)", i+1, s), synced: s.Synced()}
		if n, ok := s.(interface{ Name() string }); ok {
			w.name = n.Name()
		}
		if w.synced == nil { // would never be closed: waiting for it would last until ctx ends
			return fmt.Errorf("informer: WaitForSync: %s has a nil Synced channel", w.name)
		}
		if st, ok := s.(interface{ Stopped() <-chan struct{} }); ok {
			w.stopped = st.Stopped()
		}
		switch s := s.(type) {
		case interface{ LastError() error }: // an informer
			w.lastError, w.informer = s.LastError, true
		case interface{ informerError() error }: // a registration
			w.lastError = s.informerError
		}
		waits[i] = w
	}
	if errs := waitAll(ctx, waits); len(errs) > 0 {
		return fmt.Errorf("caches not synced: %w", notSynced(errs))
	}
	return nil
}

// waiting is one cache or handler that WaitForSync or
// Factory.WaitForCacheSync waits for.
type waiting struct {
	name      string
	synced    <-chan struct{}
	stopped   <-chan struct{} // closed if it will not sync now; nil if it cannot tell
	lastError func() error    // why it has not synced, if it knows; or nil
	informer  bool            // an informer: without a last error, it is still listing
}

// waitAll waits until each of ws has synced or stopped, or ctx ends, and
// returns an error for each that has not synced, saying why.
func waitAll(ctx context.Context, ws []waiting) []error {
	for _, w := range ws {
		select {
		case <-w.synced:
		case <-w.stopped:
		case <-ctx.Done():
		}
	}
	var errs []error
	for _, w := range ws {
		if isClosed(w.synced) {
			continue
		}
		var reason error
		if w.lastError != nil {
			reason = w.lastError()
		}
		stopped := isClosed(w.stopped)
		switch {
		case reason != nil && !stopped && ctx.Err() != nil:
			// Still retrying when the caller's ctx ended: errors.Is
			// finds the caller's deadline as well as the last error.
			reason = fmt.Errorf("%w (still retrying: %w)", reason, ctx.Err())
		case reason != nil && ctx.Err() != nil:
			// Stopped, and ctx ended: most often the one ctx given to
			// Start and to the wait (a program stopping), which
			// errors.Is must find whichever came first.
			reason = fmt.Errorf("%w (stopped: %w)", reason, ctx.Err())
		case reason != nil && stopped:
			reason = fmt.Errorf("%w (stopped before it synced)", reason)
		case reason != nil:
		case stopped && ctx.Err() != nil && w.informer:
			reason = fmt.Errorf("stopped before it synced: %w", ctx.Err())
		case stopped:
			reason = errors.New("stopped before it synced")
		case w.informer:
			reason = fmt.Errorf("still listing: %w", ctx.Err())
		default:
			reason = fmt.Errorf("not synced yet: %w", ctx.Err())
		}
		errs = append(errs, fmt.Errorf("%s: %w", w.name, reason))
	}
	return errs
}

// notSynced joins the reasons of the caches not synced, as errors.Join
// does (errors.Is and errors.As see each), but says at most maxReasons of
// them: 500 informers of a Factory refused by one server made an error of
// 83 KB, one line each.
func notSynced(errs []error) error {
	return &syncErrors{errs: errs}
}

const maxReasons = 10

type syncErrors struct{ errs []error }

func (e *syncErrors) Error() string {
	var b strings.Builder
	for i, err := range e.errs[:min(len(e.errs), maxReasons)] {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(err.Error())
	}
	if n := len(e.errs) - maxReasons; n > 0 {
		fmt.Fprintf(&b, "\n(and %d more)", n)
	}
	return b.String()
}

func (e *syncErrors) Unwrap() []error { return e.errs }

// isClosed reports whether c is closed; a nil c never is.
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
