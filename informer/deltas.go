package informer

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/deltafifo"
	"github.com/listwatch/listwatch/indexer"
	"github.com/listwatch/listwatch/internal/semantic"
	"github.com/listwatch/listwatch/processor"
)

// How the informer's loop applies one key's Deltas, popped from the FIFO:
// each updates the cache, and the handlers are told what changed, by the
// rules of doc.go (a relist that changed nothing is silent; a new UID under
// the same name is a delete and an add).

// handleDeltas applies one key's deltas to the indexer, in order, and tells
// the handlers about each change. The old state of an object comes from the
// indexer, so it is the state the handlers were last told about. Of a key
// popped from the initial list (isInInitialList), only the list's own
// delta (Replaced) is in it: the watch's changes queued behind it (a
// delete, and a new object of the same name) are news.
func (s *SharedIndexInformer[T]) handleDeltas(key string, deltas []deltafifo.Delta[T], isInInitialList bool) error {
	var errs []error
	for _, d := range deltas {
		if err := s.applyDelta(key, d, isInInitialList && d.Type == deltafifo.Replaced); err != nil {
			errs = append(errs, fmt.Errorf("applying %s of %s: %w", d.Type, key, err))
		}
	}
	return errors.Join(errs...)
}

// applyDelta applies one delta. What runs user code (the index functions,
// and the mutation detector's DeepCopyObject) runs first; then, under
// blockDeltas, the indexer changes and the handlers are told, together.
// The mutation detector remembers only what the indexer took.
func (s *SharedIndexInformer[T]) applyDelta(key string, d deltafifo.Delta[T], isInInitialList bool) error {
	if d.Type == deltafifo.Deleted {
		s.blockDeltas.Lock()
		defer s.blockDeltas.Unlock()
		return s.applyDelete(key, d)
	}
	// Added, Updated, Replaced or Sync. The copy comes first, before the
	// index functions can see (and change) the object.
	var c *copied[T]
	if s.mutations != nil {
		c = s.mutations.copyOf(key, d.Object)
	}
	for {
		w, err := s.indexer.Prepare(d.Object)
		if err != nil {
			return err
		}
		stored, err := s.applyStateBlocking(key, d, w, c, isInInitialList)
		if stored {
			return err
		}
		// AddIndexers ran meanwhile: prepare again
	}
}

// applyDelete removes a deleted object and tells the handlers.
// blockDeltas is held.
func (s *SharedIndexInformer[T]) applyDelete(key string, d deltafifo.Delta[T]) error {
	last, cached := s.indexer.GetByKey(key)
	if !cached {
		// The handlers were never told of it (its Add failed to apply) or
		// were told of its delete already.
		return nil
	}
	obj := d.Object
	if d.FinalStateUnknown {
		// Inferred by a relist, with the newest state the FIFO had: one
		// that failed to apply was never told to the handlers. They get
		// the last state they were told of.
		obj = last
	}
	if err := s.indexer.Delete(obj); err != nil {
		return err
	}
	if s.mutations != nil {
		s.mutations.forget(key)
	}
	s.processor.Distribute(processor.Notification[T]{
		Kind: processor.Delete, Key: key, Old: obj, FinalStateUnknown: d.FinalStateUnknown,
	}, false)
	return nil
}

// applyStateBlocking is applyState under blockDeltas, unlocked in a
// deferred call: the objects' metadata getters run under it, and those of
// a type of one's own may end the goroutine (runtime.Goexit).
func (s *SharedIndexInformer[T]) applyStateBlocking(key string, d deltafifo.Delta[T], w indexer.Write[T], c *copied[T], isInInitialList bool) (stored bool, _ error) {
	s.blockDeltas.Lock()
	defer s.blockDeltas.Unlock()
	return s.applyState(key, d, w, c, isInInitialList)
}

// applyState stores a new state of an object, prepared as w (and copied as
// c for the mutation detector), and tells the handlers. It reports false,
// having stored nothing new, if w must be prepared again. blockDeltas is
// held.
func (s *SharedIndexInformer[T]) applyState(key string, d deltafifo.Delta[T], w indexer.Write[T], c *copied[T], isInInitialList bool) (stored bool, _ error) {
	obj := d.Object
	old, exists := s.indexer.GetByKey(key)
	if exists && recreated(old, obj) {
		// Deleted and created again while we were not watching: the
		// handlers see the old object go and the new one come.
		if err := s.indexer.Delete(old); err != nil {
			return true, err
		}
		s.processor.Distribute(processor.Notification[T]{
			Kind: processor.Delete, Key: key, Old: old, FinalStateUnknown: true,
		}, false)
		exists = false
	}
	if !s.indexer.Commit(w) {
		return false, nil
	}
	if s.mutations != nil {
		s.mutations.remember(c)
	}
	switch {
	case !exists:
		s.processor.Distribute(processor.Notification[T]{
			Kind: processor.Add, Key: key, New: obj, IsInInitialList: isInInitialList,
		}, false)
	case d.Type == deltafifo.Replaced && unchanged(old, obj):
		// A relist found the object unchanged: nothing to tell.
	default:
		// A Sync that brings a new state (the Replaced before it failed
		// to apply) is a change every handler must hear of.
		s.processor.Distribute(processor.Notification[T]{
			Kind: processor.Update, Key: key, Old: old, New: obj,
		}, d.Type == deltafifo.Sync && unchanged(old, obj))
	}
	return true, nil
}

// unchanged reports whether a relisted object is the one cached: the same
// object (a Sync's), or one of the same resourceVersion and the same
// content, compared as the mutation detector compares it (semantic.Equal:
// a type with unexported fields too). An equal resourceVersion is not
// trusted alone: the content is compared too, because a server may serve
// an object otherwise under the same one (a CRD whose new schema prunes a
// field), and the cache then changes, which the handlers must hear of;
// and objects without one (componentstatuses, listed on a timer) have only
// their content to tell.
func unchanged(old, cur metav1.Object) bool {
	if old == cur {
		return true
	}
	return old.GetResourceVersion() == cur.GetResourceVersion() && semantic.Equal(old, cur)
}

// recreated reports whether cur is a different object than old under the
// same name: its UID changed.
func recreated(old, cur metav1.Object) bool {
	a, b := old.GetUID(), cur.GetUID()
	return a != "" && b != "" && a != b
}
