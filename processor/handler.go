package processor

import (
	"fmt"
	"reflect"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Handler is the user code a Listener calls, one notification at a time, in
// the order the notifications reached that listener. A Handler is called from
// a single goroutine per Listener, never under a lock of this package; it may
// block, which delays only its own Listener.
type Handler[T metav1.Object] interface {
	// OnAdd is called for an object that appeared. isInInitialList is true
	// when the object came from the initial list (or from the replay of the
	// cache to a handler added late) rather than from a live event.
	OnAdd(obj T, isInInitialList bool)
	// OnUpdate is called for an object that changed, or with oldObj and
	// newObj both set to the cached object on a periodic resync.
	OnUpdate(oldObj, newObj T)
	// OnDelete is called for an object that went away. obj is its last
	// state; finalStateUnknown is true when the deletion was inferred (from
	// a relist, or from the object coming back with another UID), so obj is
	// the last state seen rather than the state at the moment of deletion.
	OnDelete(obj T, finalStateUnknown bool)
}

// HandlerFuncs adapts plain functions to a Handler. A nil function field
// means "ignore this kind of notification"; the zero value ignores
// everything. It is as safe for concurrent use as the functions it holds.
type HandlerFuncs[T metav1.Object] struct {
	AddFunc    func(obj T, isInInitialList bool)
	UpdateFunc func(oldObj, newObj T)
	DeleteFunc func(obj T, finalStateUnknown bool)
}

// OnAdd calls f.AddFunc if it is set.
func (f HandlerFuncs[T]) OnAdd(obj T, isInInitialList bool) {
	if f.AddFunc != nil {
		f.AddFunc(obj, isInInitialList)
	}
}

// OnUpdate calls f.UpdateFunc if it is set.
func (f HandlerFuncs[T]) OnUpdate(oldObj, newObj T) {
	if f.UpdateFunc != nil {
		f.UpdateFunc(oldObj, newObj)
	}
}

// OnDelete calls f.DeleteFunc if it is set.
func (f HandlerFuncs[T]) OnDelete(obj T, finalStateUnknown bool) {
	if f.DeleteFunc != nil {
		f.DeleteFunc(obj, finalStateUnknown)
	}
}

// FilteringHandler passes to Handler only the objects Filter accepts, and
// turns an update that crosses the filter into what it is for Handler: an
// object that starts to match is an add (not from the initial list), one
// that stops matching a delete of its old state (its final state known: it
// still exists, but no longer concerns Handler). Filter must be a pure
// function of the object and must not modify it. A nil Filter accepts
// every object; a nil Handler, or a nil pointer in Handler, is told
// nothing.
type FilteringHandler[T metav1.Object] struct {
	Filter  func(obj T) bool
	Handler Handler[T]
}

// OnAdd tells Handler of obj if Filter accepts it.
func (f FilteringHandler[T]) OnAdd(obj T, isInInitialList bool) {
	if !isNilHandler(f.Handler) && f.accepts(obj) {
		f.Handler.OnAdd(obj, isInInitialList)
	}
}

// OnUpdate tells Handler of the change as it looks through Filter: an
// update if both states match, an add if only newObj does, a delete of
// oldObj if only oldObj does, nothing if neither does.
func (f FilteringHandler[T]) OnUpdate(oldObj, newObj T) {
	if isNilHandler(f.Handler) {
		return
	}
	switch was, is := f.accepts(oldObj), f.accepts(newObj); {
	case was && is:
		f.Handler.OnUpdate(oldObj, newObj)
	case is:
		f.Handler.OnAdd(newObj, false)
	case was:
		f.Handler.OnDelete(oldObj, false)
	}
}

// OnDelete tells Handler of obj if Filter accepts it.
func (f FilteringHandler[T]) OnDelete(obj T, finalStateUnknown bool) {
	if !isNilHandler(f.Handler) && f.accepts(obj) {
		f.Handler.OnDelete(obj, finalStateUnknown)
	}
}

func (f FilteringHandler[T]) accepts(obj T) bool { return f.Filter == nil || f.Filter(obj) }

// isNilHandler reports a nil h, or a nil pointer in h (a nil
// *HandlerFuncs, say), whose methods would panic on every call.
func isNilHandler[T metav1.Object](h Handler[T]) bool {
	if h == nil {
		return true
	}
	v := reflect.ValueOf(h)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// Kind says which Handler method a Notification is for. The zero value is not
// a valid Kind; listeners drop notifications whose Kind is not one of the
// constants below.
type Kind uint8

// The kinds of notification.
const (
	Add    Kind = iota + 1 // an object appeared: Handler.OnAdd
	Update                 // an object changed or is resynced: Handler.OnUpdate
	Delete                 // an object went away: Handler.OnDelete
)

// String returns "Add", "Update", "Delete", or "Kind(n)" for an invalid Kind.
func (k Kind) String() string {
	switch k {
	case Add:
		return "Add"
	case Update:
		return "Update"
	case Delete:
		return "Delete"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Notification is one event for the handlers. It is a plain value; the
// objects it points to are shared by every listener it reaches, so handlers
// must treat them as read-only. The zero value has no Kind: listeners drop
// it.
type Notification[T metav1.Object] struct {
	Kind Kind
	// Key identifies the object ("namespace/name", or "name" when it is
	// cluster-scoped). Listeners with a MaxPending bound use it to coalesce
	// notifications of one object; an empty Key is never coalesced.
	Key string
	// Old is the previous state (Update) or the last state (Delete).
	Old T
	// New is the new state (Add, Update).
	New T
	// IsInInitialList marks an Add that belongs to the initial list (or to
	// the replay of the cache to a late handler); see Listener.HasSynced.
	// It is ignored on other kinds.
	IsInInitialList bool
	// FinalStateUnknown marks a Delete inferred (from a relist, or from the
	// object coming back with another UID): Old is then the last state seen. It is ignored on other kinds.
	FinalStateUnknown bool

	resync bool // handed out by a resync (Distribute with isSync)
}

// initial reports whether n counts towards a listener's HasSynced.
func (n *Notification[T]) initial() bool { return n.Kind == Add && n.IsInInitialList }

// HandlerPanicError reports a panic in a Handler. The listener recovers it,
// reports it through the processor's error handler (see WithErrorHandler)
// and goes on with its next notification.
type HandlerPanicError struct {
	// Processor is the Processor's name (WithName), such as the
	// informer's; empty if it has none.
	Processor string
	// Listener names the listener: its number in the order of AddListener
	// and the dynamic type of its Handler, e.g.
	// "listener 2 (*main.podHandler)".
	Listener string
	Kind     Kind   // the kind of notification being handled
	Key      string // the key of the notification being handled
	Value    any    // the value passed to panic
	Stack    []byte // the stack of the panicking goroutine
}

// Error names the listener, the notification and the panic value.
func (e *HandlerPanicError) Error() string {
	if e.Processor != "" {
		return fmt.Sprintf("processor: %s, %s panicked handling %s of %q: %v", e.Processor, e.Listener, e.Kind, e.Key, e.Value)
	}
	return fmt.Sprintf("processor: %s panicked handling %s of %q: %v", e.Listener, e.Kind, e.Key, e.Value)
}

// Unwrap returns the panic value if it is an error, so errors.Is and
// errors.As see through a handler that panicked with an error.
func (e *HandlerPanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
