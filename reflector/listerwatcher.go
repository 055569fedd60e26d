package reflector

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Store is what a Reflector writes to. deltafifo.FIFO implements it.
//
// An error from Add, Update or Delete is reported (wrapping ErrSkipped) and
// the event skipped: the watch goes on. An error from Replace fails the
// list, which is tried again after a backoff. A Store's methods are called
// on Run's goroutine, and must not panic: unlike a transform's, a Store's
// panic is not recovered (nor is it in client-go).
type Store[T metav1.Object] interface {
	Add(obj T) error
	Update(obj T) error
	Delete(obj T) error
	// Replace is called with the complete state of the resource as of
	// resourceVersion: after a LIST, or at the end of a streaming list.
	Replace(list []T, resourceVersion string) error
}

// A KeepingStore is a Store that can be told which objects a refill left
// out because the transform failed on them (WithTransform), or because
// they came without a resourceVersion in a list that has one: ReplaceKeeping
// is Replace, except that the Store keeps what it holds for the objects in
// keep (only their keys count), which Replace would take for deleted.
// deltafifo.FIFO is one. A Store that is not gets Replace without those
// objects: they look deleted until they change again.
type KeepingStore[T metav1.Object] interface {
	Store[T]
	ReplaceKeeping(list, keep []T, resourceVersion string) error
}

// ListerWatcher is the Reflector's view of the apiserver for one resource.
// NewListerWatcher returns the HTTP implementation; tests may supply their
// own. Implementations must be safe for concurrent use.
//
// One's own must know resourceVersions as the apiserver does: List answers
// with the resourceVersion of the listed state, and Watch delivers the
// events after the resourceVersion it is given. The Reflector's default
// mode (Auto) first asks Watch for a streaming list (SendInitialEvents);
// a ListerWatcher that ignores that option must be run in ListWatch mode
// (WithMode), or the Reflector waits for the initial-events-end bookmark
// until the stream ends, or for the timeoutSeconds it asked for and 30 s
// more (5 to 10 minutes by default), and then lists with LIST.
type ListerWatcher[T metav1.Object] interface {
	// List fetches one page. Each item is handed to add as soon as it is
	// decoded, one add at a time (add runs the transform), and before List
	// returns: the Reflector waits for an add under way when List returns,
	// and refuses one made after that, with an error it also reports. An
	// error from add stops the list and is returned. List should return
	// when ctx ends. The first page's ListMeta should carry a
	// resourceVersion: a list without one is stored, and the resource
	// listed again (every 30 s by default) instead of watched, as
	// kube-apiserver's componentstatuses are (see the package doc);
	// where the Store has a resourceVersion, a relist without one is
	// refused for two minutes. A Continue token that repeats the one
	// asked with fails the list.
	List(ctx context.Context, opts ListOptions, add func(T) error) (ListMeta, error)
	// Watch opens a watch stream, returning a Watcher or an error (both
	// nil fails the watch). Closing the Watcher, or ending ctx, ends it;
	// the Reflector closes it when its own ctx ends.
	Watch(ctx context.Context, opts WatchOptions) (Watcher[T], error)
}

// ListOptions are the query parameters of one LIST page.
type ListOptions struct {
	// ResourceVersion and ResourceVersionMatch select the state to list:
	// "" for the newest consistent state, or a resourceVersion with
	// ResourceVersionMatch "NotOlderThan" for a state at least that new.
	ResourceVersion      string
	ResourceVersionMatch metav1.ResourceVersionMatch
	// Limit is the page size; 0 means no paging.
	Limit int64
	// Continue is the token from the previous page's ListMeta.
	Continue string
}

// ListMeta is the metadata of one LIST page.
type ListMeta struct {
	// ResourceVersion is the resourceVersion of the listed state.
	ResourceVersion string
	// Continue is non-empty when more pages follow.
	Continue string
}

// WatchOptions are the query parameters of one WATCH request.
type WatchOptions struct {
	// ResourceVersion to watch from: events after it are delivered.
	ResourceVersion string
	// ResourceVersionMatch is NotOlderThan for a streaming list.
	ResourceVersionMatch metav1.ResourceVersionMatch
	// AllowBookmarks asks the server for BOOKMARK events.
	AllowBookmarks bool
	// SendInitialEvents asks for the current state first, as ADDED events
	// ending with an initial-events-end BOOKMARK (a streaming list).
	SendInitialEvents bool
	// TimeoutSeconds asks the server to end the stream after that long.
	TimeoutSeconds int64
}

// EventType is the type of a watch event, as the apiserver names it.
type EventType string

// The watch event types.
const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
	Bookmark EventType = "BOOKMARK"
	Error    EventType = "ERROR"
)

// Event is one watch event.
type Event[T metav1.Object] struct {
	Type EventType
	// Object is the object the event is about. For a BOOKMARK it carries
	// only metadata: the resourceVersion, and possibly the
	// k8s.io/initial-events-end annotation. For an ERROR it is the zero T.
	Object T
	// Status is set for ERROR events: the failure the server reported.
	Status *metav1.Status
}

// Watcher is one open watch stream.
type Watcher[T metav1.Object] interface {
	// Next blocks for the next event. It returns io.EOF when the server
	// ended the stream cleanly, and another error when the stream broke or
	// could not be decoded. An error wrapping ErrSkipped means one event
	// was skipped and Next may be called again (the Reflector does, except
	// in a streaming list's initial events, which it then lists again);
	// after any other error the Watcher is done. The zero Event with a nil
	// error (what a receive from a closed channel gives) ends the watch as
	// a failure.
	Next() (Event[T], error)
	// Close ends the stream; a blocked Next returns. Close is safe to call
	// from another goroutine and more than once.
	Close() error
}

// InitialEventsEndAnnotation marks the BOOKMARK that ends the initial events
// of a streaming list.
const InitialEventsEndAnnotation = "k8s.io/initial-events-end"
