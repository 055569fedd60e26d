// Package fakelw is an in-memory reflector.ListerWatcher for unit tests of
// the reflector and the informer: a tiny apiserver for one resource with a
// resourceVersion counter, an event history that can be compacted, paged
// lists, streaming lists, a restore from a snapshot (its resourceVersion
// going back), watches that end at their timeoutSeconds, and scripted
// failures. It runs no goroutines of its own, but for the one
// time.AfterFunc starts to end a watch at its timeout (in a
// testing/synctest bubble, at the bubble's time).
// Tests that need real HTTP use internal/apisim instead. Its writes are not
// checked (a Create may replace, an Update create); listwatchtest is its
// public face, with the checks a real server makes.
package fakelw

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/listwatch/listwatch/internal/apistatus"
	"github.com/listwatch/listwatch/internal/objkey"
	"github.com/listwatch/listwatch/internal/rest"
	"github.com/listwatch/listwatch/reflector"
)

// Source holds the objects of one resource. The zero value is not usable;
// use New. All methods are safe for concurrent use.
type Source[T reflector.Object] struct {
	newObj func() T

	mu       sync.Mutex
	rv       uint64
	uids     uint64
	objects  map[string]T
	history  []event[T] // events after compactedRV, in RV order
	compact  uint64     // events at or below this RV are forgotten
	watchers map[*watcher[T]]struct{}

	// lists holds, by id, the state each paged list under way began at: its
	// next pages are cut from it, as a server cuts them from the snapshot
	// at the first page's resourceVersion. Compact and Restore forget them
	// (their continue tokens then expire), and so do maxOpenLists newer
	// lists; a token stays good after its list's last page, as a server's
	// does (a last page asked for again, after a failure, is served).
	lists  map[uint64]listSnapshot[T]
	listID uint64

	listErrs, watchErrs []error
	noInitialEvents     bool
	futureWatches       bool
	spin                SpinGuard

	// Lists and Watches count the requests served.
	Lists, Watches atomic.Int64
}

// listSnapshot is the state a paged list began at.
type listSnapshot[T reflector.Object] struct {
	rv   uint64
	objs []T // sorted by key
}

// maxOpenLists bounds the paged lists a Source keeps snapshots for; the
// oldest is forgotten first.
const maxOpenLists = 64

type event[T reflector.Object] struct {
	rv      uint64
	typ     reflector.EventType
	obj     T
	prev    T // the state before the change; for an Added, none
	hasPrev bool
}

// New returns an empty Source; newObj makes an empty T (for bookmarks).
func New[T reflector.Object](newObj func() T) *Source[T] {
	return &Source[T]{newObj: newObj, objects: map[string]T{}, watchers: map[*watcher[T]]struct{}{}}
}

// ResourceVersion returns the current resourceVersion.
func (s *Source[T]) ResourceVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strconv.FormatUint(s.rv, 10)
}

// Create stores obj as a new object, giving it a UID and a resourceVersion.
// obj is kept: the caller must not modify it afterwards.
func (s *Source[T]) Create(obj T) T {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.uids++
	obj.SetUID(types.UID("uid-" + strconv.FormatUint(s.uids, 10)))
	s.writeLocked(reflector.Added, obj)
	return obj
}

// Update replaces the stored object of obj's key with obj, keeping the
// stored UID, and gives it a new resourceVersion. An Update of a key that
// is not stored creates it (an ADDED event), unchecked.
func (s *Source[T]) Update(obj T) T {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.objects[objkey.Key(obj)]; ok {
		obj.SetUID(old.GetUID())
	}
	s.writeLocked(reflector.Modified, obj)
	return obj
}

// Delete removes the object with key; the DELETED event carries the last
// state with the deletion's resourceVersion. It reports whether it existed.
func (s *Source[T]) Delete(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.objects[key]
	if !ok {
		return false
	}
	// The stored object may be held by readers: the tombstone is a copy.
	s.writeLocked(reflector.Deleted, obj.DeepCopyObject().(T))
	return true
}

func (s *Source[T]) writeLocked(typ reflector.EventType, obj T) {
	s.rv++
	obj.SetResourceVersion(strconv.FormatUint(s.rv, 10))
	key := objkey.Key(obj)
	prev, hasPrev := s.objects[key]
	if typ == reflector.Modified && !hasPrev {
		typ = reflector.Added // an Update that creates, as a server's would
	}
	if typ == reflector.Deleted {
		delete(s.objects, key)
	} else {
		s.objects[key] = obj
	}
	ev := event[T]{rv: s.rv, typ: typ, obj: obj, prev: prev, hasPrev: hasPrev}
	s.history = append(s.history, ev)
	for w := range s.watchers {
		if ev.rv > w.after {
			w.send(ev)
		}
	}
}

// Get returns the stored object with key.
func (s *Source[T]) Get(key string) (T, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.objects[key]
	return obj, ok
}

// Objects returns the stored objects, sorted by key.
func (s *Source[T]) Objects() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sortedLocked()
}

func (s *Source[T]) sortedLocked() []T {
	keys := make([]string, 0, len(s.objects))
	for k := range s.objects {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]T, len(keys))
	for i, k := range keys {
		out[i] = s.objects[k]
	}
	return out
}

// Snapshot is the state of a Source at one resourceVersion, for Restore.
type Snapshot[T reflector.Object] struct {
	rv      uint64
	objects map[string]T
}

// Snapshot returns the current state, as a backup of etcd would keep it.
func (s *Source[T]) Snapshot() Snapshot[T] {
	s.mu.Lock()
	defer s.mu.Unlock()
	objs := make(map[string]T, len(s.objects))
	for k, o := range s.objects {
		objs[k] = o
	}
	return Snapshot[T]{rv: s.rv, objects: objs}
}

// Restore puts the Source back to snap, as restoring etcd from a backup
// does: the objects, the resourceVersion (lower than clients have seen)
// and the history are snap's, and every open watch ends, as the
// apiserver restarts. A Compact between Snapshot and Restore is undone
// only as far as the history goes.
func (s *Source[T]) Restore(snap Snapshot[T]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv, s.objects = snap.rv, make(map[string]T, len(snap.objects))
	for k, o := range snap.objects {
		s.objects[k] = o
	}
	var kept []event[T]
	for _, ev := range s.history {
		if ev.rv <= snap.rv {
			kept = append(kept, ev)
		}
	}
	s.history, s.compact = kept, min(s.compact, snap.rv)
	clear(s.lists)
	for w := range s.watchers {
		w.end(io.EOF)
		delete(s.watchers, w)
	}
}

// Compact forgets the event history: a watch from an older resourceVersion
// now gets 410 Gone.
func (s *Source[T]) Compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.compact = s.rv
	s.history = nil
	clear(s.lists)
}

// CloseWatches ends every open watch cleanly, as a server does at a
// timeout: first, to a watch that allows bookmarks, a BOOKMARK at the
// current resourceVersion, as kube-apiserver sends one before it ends a
// watch at its timeout. So a watch of a Filtered view, which the writes
// outside it do not move forward, resumes from the Source's newest state.
func (s *Source[T]) CloseWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		s.endLocked(w)
	}
}

// BreakWatches ends every open watch with err in its stream, as a server
// that goes away does (an HTTP/2 GOAWAY, a connection reset).
func (s *Source[T]) BreakWatches(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		w.end(err)
		delete(s.watchers, w)
	}
}

// FailList makes the next List calls fail with errs, one each. A nil
// error in errs is skipped: it fails no call.
func (s *Source[T]) FailList(errs ...error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listErrs = appendErrors(s.listErrs, errs)
}

// FailWatch makes the next Watch calls fail with errs, one each. A nil
// error in errs is skipped: it fails no call.
func (s *Source[T]) FailWatch(errs ...error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watchErrs = appendErrors(s.watchErrs, errs)
}

// appendErrors appends the errors of errs that are not nil to queue. A
// queued nil would be served as a failure with no error: an empty list
// without a resourceVersion, or a Watch that returns no Watcher.
func appendErrors(queue, errs []error) []error {
	for _, err := range errs {
		if err != nil {
			queue = append(queue, err)
		}
	}
	return queue
}

// PendingFailures returns how many errors FailList and FailWatch queued
// that no call has returned yet.
func (s *Source[T]) PendingFailures() (lists, watches int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.listErrs), len(s.watchErrs)
}

// AcceptFutureWatches makes a plain watch from a resourceVersion the Source
// has not reached be accepted, and deliver only the events past it, as
// kube-apiserver's watch cache does (testdata/conformance/too-large-rv-watch.json
// in internal/e2e): after a restore from a backup, the changes made before
// the server passes that resourceVersion are never sent. By default such a
// watch is refused as TooLarge, at once, which kube-apiserver does not do
// (it is apisim.WithFutureWatchError's fault); listwatchtest accepts it.
func (s *Source[T]) AcceptFutureWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.futureWatches = true
}

// RefuseStreaming makes streaming-list watches fail with 400 Bad Request,
// as a server that does not serve them does.
func (s *Source[T]) RefuseStreaming() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noInitialEvents = true
}

// Status builds the error a real server would answer with.
func Status(code int32, reason metav1.StatusReason, msg string) error {
	return &rest.APIError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg}}
}

// TooLarge is kube-apiserver's answer to a read at a resourceVersion it has
// not reached: 504 Timeout, "Too large resource version: requested,
// current: current", retry after 1 second, cause ResourceVersionTooLarge.
// The server waits up to 3 seconds for the resourceVersion before it
// answers so; a Source answers at once.
func TooLarge(requested, current uint64) error {
	return apistatus.TooLargeResourceVersion(requested, current)
}

// parseRVLocked parses a request's resourceVersion ("" and "0" are 0): one
// that is not a number is kube-apiserver's error for it (to a watch, when
// forWatch), one the Source has not reached is TooLarge.
func (s *Source[T]) parseRVLocked(rv string, forWatch bool) (uint64, error) {
	if rv == "" || rv == "0" {
		return 0, nil
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0, apistatus.InvalidResourceVersion(rv, err, forWatch)
	}
	if n > s.rv {
		return n, TooLarge(n, s.rv)
	}
	return n, nil
}

// checkListOptions refuses the list options kube-apiserver's validation
// refuses (a resourceVersionMatch without a resourceVersion, or with a
// continue token; Exact at "0"), with its error.
func checkListOptions(opts reflector.ListOptions) error {
	return checkOptions(&internalversion.ListOptions{
		ResourceVersion: opts.ResourceVersion, ResourceVersionMatch: opts.ResourceVersionMatch,
		Continue: opts.Continue, Limit: opts.Limit,
	})
}

// checkWatchOptions refuses the watch options kube-apiserver's validation
// refuses (sendInitialEvents without resourceVersionMatch NotOlderThan, a
// resourceVersionMatch without sendInitialEvents), with its error.
func checkWatchOptions(opts reflector.WatchOptions) error {
	o := &internalversion.ListOptions{Watch: true,
		ResourceVersion: opts.ResourceVersion, ResourceVersionMatch: opts.ResourceVersionMatch}
	if opts.SendInitialEvents {
		o.SendInitialEvents = &opts.SendInitialEvents
	}
	return checkOptions(o)
}

func checkOptions(opts *internalversion.ListOptions) error {
	if errs := validation.ValidateListOptions(opts, true); len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	return nil
}

// stateAtLocked returns the objects as they were at resourceVersion rv,
// sorted by key: the current ones with the history after rv undone. rv
// is at least s.compact, so the history holds every change after it.
func (s *Source[T]) stateAtLocked(rv uint64) []T {
	if rv >= s.rv {
		return s.sortedLocked()
	}
	objs := maps.Clone(s.objects)
	for i := len(s.history) - 1; i >= 0 && s.history[i].rv > rv; i-- {
		ev := s.history[i]
		if key := objkey.Key(ev.obj); ev.hasPrev {
			objs[key] = ev.prev
		} else {
			delete(objs, key)
		}
	}
	return slices.SortedFunc(maps.Values(objs), func(a, b T) int { return compare(objkey.Key(a), objkey.Key(b)) })
}

// List serves one page of a list. A first page is cut from the current
// state, or, with resourceVersionMatch Exact (or a resourceVersion and a
// limit without a match, the server's older rule), from the state at the
// resourceVersion, 410 Expired if Compact forgot it; the next pages, from
// the state the first one was cut from, as a server's are (the continue
// token names that state and the key the page before ended at). A
// continue token whose state the Source no longer keeps (after Compact or
// Restore) is 410 Expired, as a server's is once etcd compacted that
// state away, with kube-apiserver's message and, in the Status's
// metadata.continue, a token that goes on from the current state (an
// inconsistent list, as the server's). A list at resourceVersion "0" is
// one page whatever its limit, as kube-apiserver's watch cache serves it.
// A resourceVersion the Source has not reached is TooLarge; one that is not
// a number, a next page asked for with a resourceVersion (other than "0")
// or a resourceVersionMatch, or options the server's validation refuses,
// get the server's errors.
func (s *Source[T]) List(ctx context.Context, opts reflector.ListOptions, add func(T) error) (reflector.ListMeta, error) {
	return s.list(ctx, opts, add, nil)
}

// list is List of the objects match accepts (nil: all).
func (s *Source[T]) list(ctx context.Context, opts reflector.ListOptions, add func(T) error, match func(T) bool) (reflector.ListMeta, error) {
	s.Lists.Add(1)
	if opts.Continue == "" { // the next page of a list is no retry
		s.spin.Asked()
	}
	s.mu.Lock()
	if len(s.listErrs) > 0 {
		err := s.listErrs[0]
		s.listErrs = s.listErrs[1:]
		s.mu.Unlock()
		return reflector.ListMeta{}, err
	}
	var (
		id    uint64
		after string
		snap  listSnapshot[T]
	)
	if opts.Continue == "" {
		err := checkListOptions(opts) // as the server, before the resourceVersion
		var rv uint64
		if err == nil {
			rv, err = s.parseRVLocked(opts.ResourceVersion, false)
		}
		exact := rv > 0 && (opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact ||
			opts.ResourceVersionMatch == "" && opts.Limit > 0)
		if err == nil && exact && rv < s.compact {
			err = apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
		}
		if err != nil {
			s.mu.Unlock()
			return reflector.ListMeta{}, err
		}
		if exact {
			snap = listSnapshot[T]{rv: rv, objs: s.stateAtLocked(rv)}
		} else {
			snap = listSnapshot[T]{rv: s.rv, objs: s.sortedLocked()}
		}
	} else {
		// As the server: its validation refuses a resourceVersionMatch
		// with a continue token, its storage a resourceVersion other than
		// "0" (the token names the state).
		err := checkListOptions(opts)
		if err == nil {
			id, after, err = parseContinue(opts.Continue)
		}
		if err == nil && opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			err = apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
		if err != nil {
			s.mu.Unlock()
			return reflector.ListMeta{}, err
		}
		var ok bool
		if snap, ok = s.lists[id]; !ok {
			err := s.continueExpiredLocked(after)
			s.mu.Unlock()
			return reflector.ListMeta{}, err
		}
	}
	s.mu.Unlock()

	objs := snap.objs
	if after != "" {
		i, _ := slices.BinarySearchFunc(objs, after, func(o T, k string) int {
			return compare(objkey.Key(o), k)
		})
		for i < len(objs) && objkey.Key(objs[i]) <= after {
			i++
		}
		objs = objs[i:]
	}
	meta := reflector.ListMeta{ResourceVersion: strconv.FormatUint(snap.rv, 10)}
	limit := opts.Limit
	if opts.Continue == "" && opts.ResourceVersion == "0" {
		limit = 0 // kube-apiserver's watch cache ignores it: computeListLimit
	}
	page, more := cutPage(objs, limit, match)
	s.mu.Lock()
	switch {
	case more && id == 0: // a first page
		id = s.keepLocked(snap)
		fallthrough
	case more:
		meta.Continue = strconv.FormatUint(id, 10) + "/" + objkey.Key(page[len(page)-1])
	}
	s.mu.Unlock()
	for _, o := range page {
		if err := ctx.Err(); err != nil {
			return reflector.ListMeta{}, err
		}
		if err := add(o); err != nil {
			return reflector.ListMeta{}, err
		}
	}
	return meta, nil
}

// continueExpiredLocked is kube-apiserver's 410 for a continue token whose
// state is gone, with its message and a token that continues the list
// after the key after from the current state (an inconsistent list: what
// was written since its first page may show in it).
func (s *Source[T]) continueExpiredLocked(after string) error {
	id := s.keepLocked(listSnapshot[T]{rv: s.rv, objs: s.sortedLocked()})
	return apistatus.ContinueExpired(strconv.FormatUint(id, 10) + "/" + after)
}

// cutPage returns the first limit objects of objs that match accepts (nil:
// all), or all of them for limit 0, and whether any object, matching or
// not, follows a full page: as kube-apiserver's (its watch cache's and
// etcd's) lists do, a selective list may end with an empty page.
func cutPage[T reflector.Object](objs []T, limit int64, match func(T) bool) (page []T, more bool) {
	for _, o := range objs {
		if limit > 0 && int64(len(page)) == limit {
			return page, true
		}
		if match == nil || match(o) {
			page = append(page, o)
		}
	}
	return page, false
}

// keepLocked keeps snap for the next pages of its list and returns its id,
// forgetting the oldest list kept if there are too many.
func (s *Source[T]) keepLocked(snap listSnapshot[T]) uint64 {
	if len(s.lists) >= maxOpenLists {
		delete(s.lists, slices.Min(slices.Collect(maps.Keys(s.lists))))
	}
	if s.lists == nil {
		s.lists = map[uint64]listSnapshot[T]{}
	}
	s.listID++
	s.lists[s.listID] = snap
	return s.listID
}

// parseContinue splits a continue token made by list: the id of the list's
// snapshot, and the key its last page ended at.
func parseContinue(token string) (id uint64, after string, err error) {
	idText, after, ok := strings.Cut(token, "/")
	id, perr := strconv.ParseUint(idText, 10, 64)
	if !ok || perr != nil || id == 0 || after == "" {
		return 0, "", Status(http.StatusBadRequest, metav1.StatusReasonBadRequest, fmt.Sprintf("malformed continue token %q", token))
	}
	return id, after, nil
}

// filter returns the objects match accepts (nil: all of them).
func filter[T reflector.Object](objs []T, match func(T) bool) []T {
	if match == nil {
		return objs
	}
	return slices.DeleteFunc(objs, func(o T) bool { return !match(o) })
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Watch opens a stream from opts.ResourceVersion: a 410 ERROR event if that
// is compacted away, TooLarge if the Source has not reached it. If
// opts.SendInitialEvents, or if opts.ResourceVersion is "" or "0", the
// stream begins with the current state as ADDED events, as kube-apiserver's
// does; a streaming list (SendInitialEvents) marks the state's end with
// the initial-events-end BOOKMARK if opts.AllowBookmarks. With
// opts.TimeoutSeconds, the stream ends after that long as CloseWatches
// ends it. Options the server's validation refuses (SendInitialEvents
// without ResourceVersionMatch NotOlderThan, or the reverse) get its
// error, apierrors.IsInvalid.
func (s *Source[T]) Watch(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[T], error) {
	return s.watch(ctx, opts, nil)
}

// watch is Watch of the objects match accepts (nil: all), as a watch with
// a selector: see watcher.send.
func (s *Source[T]) watch(ctx context.Context, opts reflector.WatchOptions, match func(T) bool) (reflector.Watcher[T], error) {
	s.Watches.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spin.Asked()
	if len(s.watchErrs) > 0 {
		err := s.watchErrs[0]
		s.watchErrs = s.watchErrs[1:]
		return nil, err
	}
	future := s.futureWatches && !opts.SendInitialEvents
	if err := checkWatchOptions(opts); err != nil {
		return nil, err
	}
	from, err := s.parseRVLocked(opts.ResourceVersion, true)
	if err != nil && !(future && apierrors.IsTimeout(err)) {
		return nil, err
	}
	w := newWatcher(ctx, match)
	w.bookmarks = opts.AllowBookmarks
	switch {
	case opts.SendInitialEvents:
		if s.noInitialEvents {
			return nil, Status(http.StatusBadRequest, metav1.StatusReasonBadRequest, "sendInitialEvents is forbidden")
		}
		for _, o := range filter(s.sortedLocked(), match) {
			w.push(reflector.Event[T]{Type: reflector.Added, Object: o})
		}
		if w.bookmarks {
			bm := s.newObj()
			bm.SetResourceVersion(strconv.FormatUint(s.rv, 10))
			bm.SetAnnotations(map[string]string{reflector.InitialEventsEndAnnotation: "true"})
			w.push(reflector.Event[T]{Type: reflector.Bookmark, Object: bm})
		}
	case opts.ResourceVersion == "" || opts.ResourceVersion == "0":
		for _, o := range filter(s.sortedLocked(), match) {
			w.push(reflector.Event[T]{Type: reflector.Added, Object: o})
		}
	default:
		if from < s.compact {
			w.push(reflector.Event[T]{Type: reflector.Error, Status: &metav1.Status{
				Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired,
				Message: fmt.Sprintf("too old resource version: %d (%d)", from, s.compact),
			}})
			w.end(io.EOF)
			return w, nil
		}
		for _, ev := range s.history {
			if ev.rv > from {
				w.send(ev)
			}
		}
		w.after = from
	}
	s.watchers[w] = struct{}{}
	// A watch whose context ends is over, as a server's is once the
	// request is gone: it takes no more events, closed or not.
	w.unwatch = context.AfterFunc(ctx, func() {
		s.mu.Lock()
		delete(s.watchers, w)
		s.mu.Unlock()
		w.end(ctx.Err())
	})
	// A timeout longer than a Duration holds (292 years) is none.
	if opts.TimeoutSeconds > 0 && opts.TimeoutSeconds <= math.MaxInt64/int64(time.Second) {
		w.timer = time.AfterFunc(time.Duration(opts.TimeoutSeconds)*time.Second, func() { s.timeOut(w) })
	}
	return &tracked[T]{watcher: w, s: s}, nil
}

// timeOut ends w, if it is still open, as CloseWatches does: its
// timeoutSeconds have passed.
func (s *Source[T]) timeOut(w *watcher[T]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.watchers[w]; ok {
		s.endLocked(w)
	}
}

// endLocked ends the open watch w cleanly, as a server does at its
// timeout: first, if w allows bookmarks, a BOOKMARK at the current
// resourceVersion, as kube-apiserver sends one then. A T that no empty
// object can be made of (an interface type: newObj returns nil) ends the
// watch without one.
func (s *Source[T]) endLocked(w *watcher[T]) {
	if w.bookmarks {
		if bm := s.newObj(); any(bm) != nil {
			bm.SetResourceVersion(strconv.FormatUint(s.rv, 10))
			w.push(reflector.Event[T]{Type: reflector.Bookmark, Object: bm})
		}
	}
	w.end(io.EOF)
	delete(s.watchers, w)
}

// tracked removes its watcher from the Source when closed.
type tracked[T reflector.Object] struct {
	*watcher[T]
	s *Source[T]
}

func (t *tracked[T]) Close() error {
	t.unwatch()
	t.s.mu.Lock()
	delete(t.s.watchers, t.watcher)
	t.s.mu.Unlock()
	return t.watcher.Close()
}

// watcher is one open stream: an unbounded queue of events.
type watcher[T reflector.Object] struct {
	match     func(T) bool // the objects watched; nil: all
	bookmarks bool         // the watch allows BOOKMARK events
	after     uint64       // only events past this resourceVersion are sent
	timer     *time.Timer  // ends the watch at its timeoutSeconds; nil: none
	unwatch   func() bool  // stops ending the watch when its context ends
	mu        sync.Mutex
	queue     []reflector.Event[T]
	err       error         // what Next returns once the queue is empty
	notify    chan struct{} // receives a token when queue or err changes
	ctx       context.Context
}

func newWatcher[T reflector.Object](ctx context.Context, match func(T) bool) *watcher[T] {
	return &watcher[T]{match: match, notify: make(chan struct{}, 1), ctx: ctx}
}

// send queues what the change ev is to this watcher. With a selector
// (match), kube-apiserver tells a watch of the objects it selects: one
// that starts to match arrives as ADDED, one that stops as DELETED, with
// its previous state stamped with the change's resourceVersion; changes to
// objects that matched neither before nor after are not sent.
func (w *watcher[T]) send(ev event[T]) {
	if w.match == nil {
		w.push(reflector.Event[T]{Type: ev.typ, Object: ev.obj})
		return
	}
	now := ev.typ != reflector.Deleted && w.match(ev.obj)
	before := ev.hasPrev && w.match(ev.prev)
	switch {
	case now && before:
		w.push(reflector.Event[T]{Type: ev.typ, Object: ev.obj})
	case now:
		w.push(reflector.Event[T]{Type: reflector.Added, Object: ev.obj})
	case before && ev.typ == reflector.Deleted:
		w.push(reflector.Event[T]{Type: reflector.Deleted, Object: ev.obj})
	case before:
		gone := ev.prev.DeepCopyObject().(T)
		gone.SetResourceVersion(ev.obj.GetResourceVersion())
		w.push(reflector.Event[T]{Type: reflector.Deleted, Object: gone})
	}
}

func (w *watcher[T]) push(ev reflector.Event[T]) {
	w.mu.Lock()
	if w.err == nil {
		w.queue = append(w.queue, ev)
	}
	w.mu.Unlock()
	w.wake()
}

func (w *watcher[T]) end(err error) {
	if w.timer != nil {
		w.timer.Stop()
	}
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
	w.wake()
}

func (w *watcher[T]) wake() {
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// Next returns the next event, or the error that ended the stream.
func (w *watcher[T]) Next() (reflector.Event[T], error) {
	for {
		w.mu.Lock()
		if len(w.queue) > 0 {
			ev := w.queue[0]
			w.queue = w.queue[1:]
			w.mu.Unlock()
			return ev, nil
		}
		err := w.err
		w.mu.Unlock()
		if err != nil {
			return reflector.Event[T]{}, err
		}
		select {
		case <-w.notify:
		case <-w.ctx.Done():
			return reflector.Event[T]{}, w.ctx.Err()
		}
	}
}

// Close ends the stream; a blocked Next returns an error.
func (w *watcher[T]) Close() error {
	w.mu.Lock()
	w.queue = nil
	w.mu.Unlock()
	w.end(errClosed)
	return nil
}

var errClosed = errors.New("watch closed")

// Filtered returns a ListerWatcher of the objects match accepts, as a
// server serves a LIST or WATCH with a namespace or selectors: lists hold
// only those, and a watch tells an object that starts or stops matching
// as an ADDED or a DELETED (see watcher.send). Its requests count in
// Lists and Watches, and faults queued with FailList and FailWatch are
// served to it as to the Source.
func (s *Source[T]) Filtered(match func(T) bool) reflector.ListerWatcher[T] {
	return filtered[T]{s: s, match: match}
}

type filtered[T reflector.Object] struct {
	s     *Source[T]
	match func(T) bool
}

func (f filtered[T]) List(ctx context.Context, opts reflector.ListOptions, add func(T) error) (reflector.ListMeta, error) {
	return f.s.list(ctx, opts, add, f.match)
}

func (f filtered[T]) Watch(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[T], error) {
	return f.s.watch(ctx, opts, f.match)
}
