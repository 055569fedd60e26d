package apisim

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// initialEventsEnd is the annotation of the BOOKMARK that ends the initial
// events of a streaming list.
const initialEventsEnd = "k8s.io/initial-events-end"

// bookmarkEvent marks a BOOKMARK in a watcher's queue.
const bookmarkEvent eventType = 0

// watcher is one open watch. The write path offers it events under the
// server lock; its handler goroutine drains ch and writes the stream.
type watcher struct {
	filter    filter
	minRV     uint64 // events at or below it are not for this watcher
	startRV   uint64 // where the watch started: a bookmark must be newer
	bookmarks bool
	ch        chan delivery // closed when the server ends the watch
	closed    bool          // guarded by the server lock
	tooSlow   bool          // ended because its queue overflowed; read after ch is closed
}

// delivery is one queued frame.
type delivery struct {
	typ eventType // added, modified, deleted or bookmarkEvent
	rv  uint64
	v   *version // the object; nil for bookmarks and selector exits
	ev  *event   // the source event, for selector exits
}

// convert turns a stored event into what this watcher sees, kube-apiserver
// style: an object that starts matching the selector arrives as ADDED, one
// that stops matching as DELETED carrying its previous state stamped with
// the event's resourceVersion.
func (w *watcher) convert(e *event) (delivery, bool) {
	cur := e.typ != deleted && w.filter.matches(e.obj)
	old := e.prev != nil && w.filter.matches(e.prev)
	switch {
	case cur && !old:
		return delivery{typ: added, rv: e.rv, v: e.obj}, true
	case cur && old:
		return delivery{typ: modified, rv: e.rv, v: e.obj}, true
	case old && e.typ == deleted:
		return delivery{typ: deleted, rv: e.rv, v: e.obj}, true
	case old:
		return delivery{typ: deleted, rv: e.rv, ev: e}, true
	}
	return delivery{}, false
}

// offer queues an event for the watcher. The caller holds the server lock.
func (w *watcher) offer(c *collection, e *event) {
	if e.rv <= w.minRV {
		return
	}
	if d, ok := w.convert(e); ok {
		w.send(c, d)
	}
}

// send queues d, or terminates the watcher when its buffer is full: a
// watcher that cannot keep up is closed, like the watch cache does, and its
// client resumes from the last resourceVersion it saw. The caller holds the
// server lock.
func (w *watcher) send(c *collection, d delivery) {
	select {
	case w.ch <- d:
	default:
		w.tooSlow = true
		c.stopWatcher(w)
	}
}

// stopWatcher ends a watch: its handler writes what is queued, then ends
// the response cleanly. The caller holds the server lock.
func (c *collection) stopWatcher(w *watcher) {
	if !w.closed {
		w.closed = true
		delete(c.watchers, w)
		close(w.ch)
	}
}

func (c *collection) stopWatchers() {
	for w := range c.watchers {
		c.stopWatcher(w)
	}
}

// exitVersion returns the previous state of e's object stamped with e's
// resourceVersion, made once for every watcher that needs it.
func (e *event) exitVersion(c *collection) *version {
	e.exitOnce.Do(func() {
		v, err := c.restamped(e.prev, e.rv, true)
		if err != nil {
			v = e.prev
		}
		e.exit = v
	})
	return e.exit
}

// serveWatch answers a WATCH with kube-apiserver's rules:
//
//   - resourceVersion N: the events after N from the history, then live
//     ones; N older than the history gets a 200 stream with one ERROR
//     event, 410 Expired "too old resource version: N (oldest)", then the
//     end of the stream;
//   - sendInitialEvents=true (the default for "" and "0"): an ADDED event
//     for every object in the current state, then, with
//     allowWatchBookmarks, a BOOKMARK annotated k8s.io/initial-events-end
//     at that state's resourceVersion, then live events;
//   - sendInitialEvents=false: live events from now on;
//   - a resourceVersion that is 0 without being "0" (such as "00"), with
//     sendInitialEvents unset: the legacy watch from 0, an ADDED event for
//     every object and then live events, with no bookmark between;
//   - allowWatchBookmarks: periodic BOOKMARKs (WithBookmarkInterval);
//   - timeoutSeconds (else WithWatchTimeout): a clean end after that long.
func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request, req request) {
	ef := errorFormat(r)
	f, err := negotiate(r, req.c, kindWatch)
	if err != nil {
		writeStatus(w, r, err, ef)
		return
	}
	q, err := s.parseQuery(r, req)
	if err != nil {
		writeStatus(w, r, err, ef)
		return
	}
	rv, err := parseRV(q.ResourceVersion, true)
	if err != nil {
		writeStatus(w, r, err, ef)
		return
	}
	ctype := mediaJSON
	if f.proto {
		ctype = mediaProtobuf + ";stream=watch"
	}
	out := newStream(s, w, r, f, true)
	initial := q.SendInitialEvents != nil && *q.SendInitialEvents
	if rv > 0 && (initial || s.opts.futureWatchError) {
		if err := s.waitForRV(r.Context(), rv); err != nil {
			out.header(ctype, http.StatusOK)
			out.errorEvent(toStatus(err))
			out.finish()
			return
		}
	}
	wt, snapshot, backlog, startRV, err := s.startWatch(req.c, q, rv, initial)
	if err != nil {
		out.header(ctype, http.StatusOK)
		out.errorEvent(toStatus(err))
		out.finish()
		return
	}
	defer s.endWatch(req.c, wt)

	var timeout, preTimeout <-chan time.Time
	if d := s.watchTimeout(q); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
		if q.AllowWatchBookmarks && d > preTimeoutBookmark {
			// kube-apiserver sends a bookmark 2 s before a watch times out, so
			// that the client resumes from a fresh resourceVersion.
			pre := time.NewTimer(d - preTimeoutBookmark)
			defer pre.Stop()
			preTimeout = pre.C
		}
	}
	out.lastRV = rv
	out.header(ctype, http.StatusOK)
	for _, v := range snapshot {
		out.event(out.eventTypeFor("ADDED"), out.encodeFor(req.c, v, f), v.rv)
	}
	if initial && q.AllowWatchBookmarks {
		out.bookmark(req.c.bookmarkObject(startRV, true, f), startRV)
	}
	for _, d := range backlog {
		out.deliver(req.c, d)
	}
	out.flush()
	for out.ok() {
		select {
		case d, open := <-wt.ch:
			if !open {
				if wt.tooSlow {
					s.log.Info("apisim: watch ended: the watcher fell behind", "path", r.URL.Path,
						"buffer", s.opts.watchBuffer, "lastResourceVersion", out.lastRV)
				}
				out.finish()
				return
			}
			out.deliver(req.c, d)
			if len(wt.ch) == 0 {
				out.flush()
			}
		case <-preTimeout:
			s.queueBookmark(req.c, wt)
		case <-timeout:
			out.finish()
			return
		case <-r.Context().Done():
			return
		case <-s.closing:
			out.finish()
			return
		}
	}
}

// startWatch registers a watcher and returns what it must send before live
// events: the initial objects, or the history since rv.
func (s *Server) startWatch(c *collection, q *query, rv uint64, initial bool) (*watcher, []*version, []delivery, uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, nil, 0, errServerClosing()
	}
	wt := &watcher{filter: q.filter, bookmarks: q.AllowWatchBookmarks, minRV: s.rv, startRV: s.rv,
		ch: make(chan delivery, s.opts.watchBuffer)}
	var snapshot []*version
	var backlog []delivery
	switch {
	case initial || rv == 0 && q.SendInitialEvents == nil:
		c.store.scan(scopePrefix(c.res, q.filter.namespace), "", s.rv, func(v *version) bool {
			if q.filter.matches(v) {
				snapshot = append(snapshot, v)
			}
			return true
		})
	case rv == 0:
		// sendInitialEvents=false: from now on.
	case rv < c.watchStart:
		return nil, nil, nil, 0, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, c.watchStart))
	default:
		for _, e := range c.hist.since(rv) {
			if d, ok := wt.convert(e); ok {
				backlog = append(backlog, d)
			}
		}
		wt.minRV, wt.startRV = max(rv, s.rv), rv
	}
	c.watchers[wt] = struct{}{}
	return wt, snapshot, backlog, s.rv, nil
}

func (s *Server) endWatch(c *collection, w *watcher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !w.closed {
		w.closed = true
		delete(c.watchers, w)
	}
}

func (s *Server) watchTimeout(q *query) time.Duration {
	if q.TimeoutSeconds != nil && *q.TimeoutSeconds > 0 {
		// Within what a Duration holds (292 years): a longer one
		// would wrap into the past.
		return time.Duration(min(*q.TimeoutSeconds, math.MaxInt64/int64(time.Second))) * time.Second
	}
	return s.opts.watchTimeout
}

// deliver writes one queued frame.
func (st *stream) deliver(c *collection, d delivery) {
	if d.typ == bookmarkEvent {
		st.bookmark(c.bookmarkObject(d.rv, false, st.f), d.rv)
		return
	}
	v := d.v
	if v == nil {
		v = d.ev.exitVersion(c)
	}
	st.event(st.eventTypeFor(d.typ.String()), st.encodeFor(c, v, st.f), d.rv)
}

// preTimeoutBookmark is how long before its timeout a watch that allows
// bookmarks gets one.
const preTimeoutBookmark = 2 * time.Second

// queueBookmark queues a BOOKMARK at the current resourceVersion for one
// watcher.
func (s *Server) queueBookmark(c *collection, w *watcher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !w.closed {
		w.offerBookmark(s.rv)
	}
}

// sendBookmarks queues a BOOKMARK at the current resourceVersion for every
// watcher that allows them. Queued in order with events, a bookmark never
// overtakes an event it covers.
func (s *Server) sendBookmarks() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.collections {
		for w := range c.watchers {
			if w.bookmarks {
				w.offerBookmark(s.rv)
			}
		}
	}
}

// offerBookmark queues a BOOKMARK at rv if it tells the watcher something
// and its queue has room, as kube-apiserver's watch cache does
// (cacheWatcher.nonblockingAdd and process): a bookmark no newer than where
// the watch started, or below the resourceVersion it asked for, is not
// sent, and one the queue cannot take is dropped, where an event would end
// the watch. The caller holds the server lock.
func (w *watcher) offerBookmark(rv uint64) {
	if rv <= w.startRV || rv < w.minRV {
		return
	}
	select {
	case w.ch <- delivery{typ: bookmarkEvent, rv: rv}:
	default:
	}
}

// bookmarkObject returns the object of a BOOKMARK: an empty object of the
// resource's kind carrying only the resourceVersion (and the
// initial-events-end annotation), as kube-apiserver sends.
func (c *collection) bookmarkObject(rv uint64, initialEnd bool, f format) encoded {
	var obj runtime.Object
	switch {
	case f.partial:
		obj = &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: f.metaAPIVersion(), Kind: "PartialObjectMetadata"}}
	case c.typed != nil:
		obj = reflect.New(c.typed.Elem()).Interface().(runtime.Object)
		obj.GetObjectKind().SetGroupVersionKind(c.res.GroupVersionKind())
	default:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(c.res.GroupVersionKind())
		obj = u
	}
	m, _ := meta.Accessor(obj)
	m.SetResourceVersion(strconv.FormatUint(rv, 10))
	if initialEnd {
		m.SetAnnotations(map[string]string{initialEventsEnd: "true"})
	}
	e := encoded{apiVersion: c.res.APIVersion(), kind: c.res.Kind}
	if f.partial {
		e.apiVersion, e.kind = f.metaAPIVersion(), "PartialObjectMetadata"
	}
	if f.proto {
		e.body, _ = obj.(protoMarshaler).Marshal() // fresh empty object: cannot fail
		return e
	}
	e.body, _ = json.Marshal(obj)
	return e
}
