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
	"io"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

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
	newUID   func() types.UID // nil: "uid-1", "uid-2", ... (see MakeUIDs)
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

// MakeUIDs makes Create give the UIDs newUID returns, called with the
// Source's lock held, instead of "uid-1", "uid-2", ..., which every Source
// gives.
func (s *Source[T]) MakeUIDs(newUID func() types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.newUID = newUID
}

// Create stores obj as a new object, giving it a UID ("uid-N" for the N-th
// object created, unless MakeUIDs) and a resourceVersion. obj is kept: the
// caller must not modify it afterwards.
func (s *Source[T]) Create(obj T) T {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.uids++
	id := types.UID("uid-" + strconv.FormatUint(s.uids, 10))
	if s.newUID != nil {
		id = s.newUID()
	}
	obj.SetUID(id)
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
