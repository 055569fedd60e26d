package reflector

import (
	"context"
	"errors"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/objkey"
)

// The two ways Run refills the Store, after which it watches: a paged LIST
// (here), or a streaming list (a watch that sends the current state first:
// streaming.go). Both hand the Store the whole state in one Replace, and
// neither takes a state older than the Store's, unless the server has been
// behind the Store for behindPatience (ErrBackInTime).

// list refills the Store with a LIST: every page is decoded item by item
// into one slice, which replaces the Store's contents in one call.
//
// The first list is a consistent read, paged. A relist asks for a state at
// least as new as the Store's, so as not to go back in time, and asks
// for it in one answer, without pages, unless WithPageSize was given, as
// client-go's relists do: kube-apiserver serves that from its watch cache,
// where older kube-apiservers send a paged read at a resourceVersion to
// etcd, which a herd of clients relisting at once (after an apiserver
// restart) would load. (The items are decoded as they arrive, as a page's are: one
// answer costs this side no more memory than pages.) A relist in one
// answer that runs out of the list timeout (WithListTimeout) would run out
// of it the next time too: from then on, relists are paged.
func (r *Reflector[T]) list(ctx context.Context, s *runState) error {
	since := r.LastSyncResourceVersion()
	opts := ListOptions{Limit: r.opt.pageSize}
	if since != "" && !s.latest {
		opts.ResourceVersion, opts.ResourceVersionMatch = since, metav1.ResourceVersionMatchNotOlderThan
		if !r.opt.pageSizeSet && !s.pageRelists {
			opts.Limit = 0
		}
	}
	first := opts

	collected := &listed[T]{r: r}
	var listRV string
	retries := 0      // of the page asked for now
	fellBack := false // listed in one answer after a continue token expired
	emptyPages := 0   // pages in a row that had no item with a name
	for {
		page := collected.page()
		meta, err := r.lw.List(ctx, opts, page.add)
		page.end()
		if err != nil {
			if opts.Limit == 0 && opts.Continue == "" && r.opt.pageSize > 0 &&
				errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				// One answer of everything took longer than the list
				// timeout: it would the next time too. Page the relists.
				s.pageRelists = true
			}
			switch {
			case opts.Continue == "" || ctx.Err() != nil:
				// A first page that failed is the whole list failing:
				// Run's loop backs off and lists again.
			case isExpired(err) && !fellBack:
				// The continue token expired between pages: the pages
				// so far are from a state we can no longer complete.
				// As client-go's pager does, list everything in one
				// answer instead, as the first page asked (the latest
				// state, or one at least as new as the Store's), which
				// needs no token. Once: a server that pages that answer
				// too and expires its token again fails the list, and
				// Run's loop asks for the latest state after the
				// backoff.
				collected.reset()
				listRV, opts, fellBack = "", first, true
				opts.Limit = 0
				continue
			case retryablePage(err) && retries < maxPageRetries:
				// The server is busy (429, 5xx) or the connection broke:
				// ask for the same page again, as client-go's REST
				// client does, rather than throw away the pages so far.
				retries++
				r.report(fmt.Errorf("listing %s: %w (asking for the page again)", r.opt.name, err))
				page.discard()
				if !sleep(ctx, r.backoffFor(s, err)) {
					return fmt.Errorf("listing %s: %w", r.opt.name, ctx.Err())
				}
				continue
			}
			return fmt.Errorf("listing %s: %w", r.opt.name, err)
		}
		retries = 0
		if page.repeated() {
			return fmt.Errorf("listing %s: %w: %s", r.opt.name, errRepeatedPage, page.first)
		}
		if opts.Continue == "" { // the first page
			listRV = meta.ResourceVersion
		} else if listRV != "" && meta.ResourceVersion != listRV {
			// kube-apiserver gives every page of a list the first
			// page's resourceVersion. A next page without it is no
			// page of this list (a proxy's made-up {"items":[]}, or a
			// page of another list): taken, its items would be of
			// another state, and one without a continue token would
			// end the list there, the Store losing the objects of
			// every page not sent.
			return fmt.Errorf("listing %s: %w: the first page was at %s, this one at %s",
				r.opt.name, errPageOfAnotherList, listRV, describeRV(meta.ResourceVersion))
		}
		switch {
		case meta.Continue == "":
		case meta.Continue == opts.Continue:
			return fmt.Errorf("listing %s: %w", r.opt.name, errRepeatedContinue)
		case ctx.Err() != nil:
			return fmt.Errorf("listing %s: %w", r.opt.name, ctx.Err())
		default:
			if page.first == "" {
				emptyPages++
			} else {
				emptyPages = 0
			}
			if emptyPages > freeEmptyPages {
				err := fmt.Errorf("listing %s: %w: %d in a row", r.opt.name, errEmptyPages, emptyPages)
				r.report(err)
				if !sleep(ctx, r.backoffFor(s, err)) {
					return fmt.Errorf("listing %s: %w", r.opt.name, ctx.Err())
				}
			}
			opts = ListOptions{Limit: r.opt.pageSize, Continue: meta.Continue}
			continue
		}
		break
	}
	collected.settle(listRV)

	// A list without a resourceVersion, where the cache has one, is not
	// known to be as new as the cache: a resource that had them does not
	// lose them, and a proxy's stale or made-up answer ({"items":[]})
	// would empty the cache. It is refused as an older one is, and taken
	// after behindPatience, if the server says nothing else for that long.
	back := olderThan(listRV, since) || (listRV == "" && since != "")
	if back && !s.takeOlder {
		return fmt.Errorf("listing %s: %w: listed %s, cache already at %s",
			r.opt.name, errWentBackwards, describeRV(listRV), since)
	}
	// Recorded first: the Store's consumer may have processed the whole
	// list (and reported HasSynced) before Replace returns.
	r.synced(listRV)
	if err := r.replace(collected.items, collected.leftOut, listRV); err != nil {
		r.unsynced(since)
		return fmt.Errorf("listing %s: storing the list: %w", r.opt.name, err)
	}
	if back {
		r.tookOlderState(s, listRV, since)
	}
	if listRV == "" && !s.toldUnversioned {
		s.toldUnversioned = true
		r.opt.logger.Info("the list has no resourceVersion to watch from: listed again every interval instead",
			"resource", r.opt.name, "interval", r.opt.unversionedEvery())
	}
	return nil
}

// listed collects the items of a paged LIST, one page (one List call) at a
// time: what was admitted, what the transform failed on, and, until the
// list's resourceVersion is known, the items that have none.
type listed[T metav1.Object] struct {
	r       *Reflector[T]
	mu      sync.Mutex // guards items, leftOut, unversioned and the pages' over and first
	items   []T
	leftOut []T // the transform failed on them, or they have no resourceVersion: the Store keeps its own
	// unversioned holds the items without a resourceVersion, as they came,
	// until the list's own is known (settle).
	unversioned []T
	// firsts holds the key of the first item of each page so far. No two
	// pages of one list begin with the same object, unless the server
	// pages wrong: a page would then repeat for ever.
	firsts map[string]struct{}
}

// listPage takes the items of one List call, through add, until end. List
// may not have waited for an add it started on another goroutine: end
// waits for those under way, and an add made after that is refused and
// reported (it would be lost from the cache without a word).
type listPage[T metav1.Object] struct {
	l        *listed[T]
	over     bool           // end was called
	underWay sync.WaitGroup // adds begun before over
	first    string         // the key of the page's first item with a name
	// the lengths of l.items, l.leftOut and l.unversioned before the page
	nItems, nLeftOut, nUnversioned int
}

func (l *listed[T]) page() *listPage[T] {
	l.mu.Lock()
	defer l.mu.Unlock()
	return &listPage[T]{l: l, nItems: len(l.items), nLeftOut: len(l.leftOut), nUnversioned: len(l.unversioned)}
}

// reset forgets what was collected, for a list started again.
func (l *listed[T]) reset() {
	clear(l.items)
	clear(l.leftOut)
	clear(l.unversioned)
	l.items, l.leftOut, l.unversioned, l.firsts = l.items[:0], l.leftOut[:0], l.unversioned[:0], nil
}

// add admits one item (ListerWatcher.List's add).
func (p *listPage[T]) add(obj T) error {
	l, r := p.l, p.l.r
	l.mu.Lock()
	if p.over {
		l.mu.Unlock()
		err := fmt.Errorf("listing %s: %w", r.opt.name, errAddAfterList)
		r.report(err)
		return err
	}
	valid := !objkey.IsNil(obj)
	if p.first == "" && valid && obj.GetName() != "" {
		p.first = objkey.Of(obj.GetNamespace(), obj.GetName())
	}
	if valid && obj.GetResourceVersion() == "" {
		// Cached or rejected once the list's resourceVersion is known.
		l.unversioned = append(l.unversioned, obj)
		l.mu.Unlock()
		return nil
	}
	p.underWay.Add(1)
	l.mu.Unlock()
	defer p.underWay.Done()
	l.admit(obj, false)
	return nil // a skipped item does not stop the rest of the page
}

// admit admits one item into items, or leftOut, or reports it skipped.
func (l *listed[T]) admit(obj T, unversioned bool) {
	r := l.r
	obj, kept, err := r.admitListed(obj, unversioned)
	if err != nil {
		r.report(fmt.Errorf("listing %s: %w", r.opt.name, err))
	}
	l.mu.Lock()
	switch {
	case err == nil:
		l.items = append(l.items, obj)
	case kept:
		l.leftOut = append(l.leftOut, obj)
	}
	l.mu.Unlock()
}

// settle admits the items that have no resourceVersion, once the list's is
// known. A list without one is of a resource that is listed but not watched
// (kube-apiserver's componentstatuses), whose objects have none either: they
// are cached. In a list with one, such an item is rejected, as in a watch,
// and kept (admitListed).
func (l *listed[T]) settle(listRV string) {
	l.mu.Lock()
	held := l.unversioned
	l.unversioned = nil
	l.mu.Unlock()
	for _, obj := range held {
		l.admit(obj, listRV == "")
	}
}

// end closes the page: adds under way are waited for, later ones refused.
func (p *listPage[T]) end() {
	p.l.mu.Lock()
	p.over = true
	p.l.mu.Unlock()
	p.underWay.Wait()
}

// discard takes back the items of an ended page that failed part way, which
// is asked for again.
func (p *listPage[T]) discard() {
	l := p.l
	clear(l.items[p.nItems:])
	clear(l.leftOut[p.nLeftOut:])
	clear(l.unversioned[p.nUnversioned:])
	l.items, l.leftOut, l.unversioned = l.items[:p.nItems], l.leftOut[:p.nLeftOut], l.unversioned[:p.nUnversioned]
}

// repeated reports whether an ended page began with the object an earlier
// page of the list began with, and remembers its first object.
func (p *listPage[T]) repeated() bool {
	l := p.l
	if p.first == "" {
		return false
	}
	_, seen := l.firsts[p.first]
	if !seen {
		if l.firsts == nil {
			l.firsts = map[string]struct{}{}
		}
		l.firsts[p.first] = struct{}{}
	}
	return seen
}

// tookOlderState reports a refill that takes the cache back in time: the
// server's latest state, at rv, is older than the Store's, at since, and
// has been for behindPatience, or was when the server came back after it
// had been out of reach (probe). The handlers see the objects go back.
func (r *Reflector[T]) tookOlderState(s *runState, rv, since string) {
	why := fmt.Sprintf("the server has been behind for at least %v", behindPatience)
	if s.behindSince.IsZero() {
		why = "its newest state was older than the cache when it came back after it had been out of reach"
	}
	r.report(fmt.Errorf("listing %s: %w: its latest state is at %s, the cache was at %s, "+
		"and %s (restored from a backup, or the cache had a resourceVersion the server never had)",
		r.opt.name, ErrBackInTime, describeRV(rv), since, why))
}

// describeRV names a list's resourceVersion in a message.
func describeRV(rv string) string {
	if rv == "" {
		return "no resourceVersion"
	}
	return "resourceVersion " + rv
}

// freeEmptyPages is how many pages in a row a list may get without an item
// before it waits the backoff before each next one. A page of no items
// with a continue token is allowed (the server filtered out all it read,
// and a server that pages before it filters sends many), but a server
// that sends such pages for ever, each with a new token, would have the
// list ask for pages as fast as it can. The repeated-page check cannot
// tell: an empty page has no first object. client-go's pager asks for
// them without a pause.
const freeEmptyPages = 100

// maxPageRetries bounds how often one page is asked for again after a
// failure (retryablePage); the next failure fails the list, and Run's loop
// starts it again after the backoff. client-go's REST client retries a
// request up to 10 times, when the server asks it to with Retry-After.
const maxPageRetries = 5

// admitListed admits one object of a refill, as admit does a watched one.
// An object the transform failed on, or rejected for want of a
// resourceVersion only, is returned with kept set: the Store is to keep
// what it holds for it (replace). It exists, and skipping it would make it
// look deleted: a transform that fails for a moment, or an object spoiled
// on its way, would delete a live object from the cache. A transform that
// renamed the object in place before it failed (or returned it renamed)
// has its namespace and name put back on the discarded object, whose key
// is all the Store uses.
func (r *Reflector[T]) admitListed(obj T, unversioned bool) (_ T, kept bool, _ error) {
	var namespace, name string
	if !objkey.IsNil(obj) {
		namespace, name = obj.GetNamespace(), obj.GetName()
	}
	out, _, err := r.admit(obj, unversioned)
	switch {
	case err == nil:
		return out, false, nil
	case errors.Is(err, errNoResourceVersion):
		return obj, true, err
	case !errors.Is(err, ErrSkipped): // rejected, not a transform's failure
		return out, false, err
	}
	if obj.GetNamespace() != namespace || obj.GetName() != name {
		obj.SetNamespace(namespace)
		obj.SetName(name)
	}
	return obj, true, err
}

// replace hands a refill to the Store: list, and the objects it left out
// but are there (admitListed), which a KeepingStore keeps as it has them.
func (r *Reflector[T]) replace(list, leftOut []T, rv string) error {
	if ks, ok := r.store.(KeepingStore[T]); ok && len(leftOut) > 0 {
		return ks.ReplaceKeeping(list, leftOut, rv)
	}
	return r.store.Replace(list, rv)
}
