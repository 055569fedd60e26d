package reflector

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/kinds"
)

// Mode chooses how a Reflector fills its Store.
type Mode int

const (
	// Auto uses a streaming list when the server serves them and falls back
	// to LIST then WATCH, for the rest of the Reflector's life, when it
	// does not: when it refuses the request (400, 405, 406, 422 or 501;
	// not a 400 or 422 that calls the resourceVersion asked from invalid,
	// after which the Reflector asks for the latest state),
	// sends a MODIFIED, DELETED or unannotated BOOKMARK event before the
	// initial-events-end bookmark, sends that bookmark without a
	// resourceVersion, ends two streaming lists in a row before it within
	// an hour, or lets two in a row go quiet before it for the watch's idle
	// timeout, however far apart (one that ends early, as a restarting
	// server's do, goes quiet, or has not sent it 30 s past its
	// timeoutSeconds, is followed at once by LISTs until one succeeds, and
	// the next refill streams again). A streaming list that fails
	// otherwise (refused with 403, 429, 5xx or "too large resource
	// version", a stream cut or spoiled) is followed by a LIST too, as
	// client-go falls back: the watch cache that serves streaming lists may
	// refuse them while a LIST is served. If that LIST fails, the next
	// refill streams again (after a 403, it lists until a LIST succeeds).
	// It is the default.
	Auto Mode = iota
	// ListWatch always lists with LIST requests (see WithPageSize for when
	// they are paged).
	ListWatch
	// WatchList always uses streaming lists and never falls back.
	WatchList
)

// checkMode returns an error for a Mode that is none of the constants
// above: Run reports it and does not run, rather than run some mix of
// them.
func checkMode(m Mode) error {
	switch m {
	case Auto, ListWatch, WatchList:
		return nil
	}
	return fmt.Errorf("reflector: Mode(%d) is not Auto, ListWatch or WatchList", int(m))
}

// Option configures a Reflector.
type Option[T metav1.Object] func(*options[T])

type options[T metav1.Object] struct {
	name            string
	mode            Mode
	pageSize        int64
	pageSizeSet     bool // WithPageSize was given: relists page too
	transform       func(T) (T, error)
	errorHandler    func(error)
	recovered       func()
	logger          *slog.Logger
	backoffInitial  time.Duration
	backoffMax      time.Duration
	minWatchTimeout time.Duration
	relistInterval  time.Duration
	sharing         bool
}

func defaultOptions[T metav1.Object]() options[T] {
	return options[T]{
		name:            kinds.Name[T](),
		pageSize:        500,
		logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
		backoffInitial:  800 * time.Millisecond,
		backoffMax:      30 * time.Second,
		minWatchTimeout: 5 * time.Minute,
	}
}

// WithName sets what errors and logs call the resource, such as "pods" or
// "pods in default". The default is the resource of a k8s.io/api type, such
// as "pods", and "objects" for other types.
func WithName[T metav1.Object](name string) Option[T] {
	return func(o *options[T]) { o.name = name }
}

// WithMode chooses between streaming lists and LIST then WATCH. The default
// is Auto. A Mode that is none of Auto, ListWatch and WatchList is an
// error: Run reports it and returns.
func WithMode[T metav1.Object](m Mode) Option[T] {
	return func(o *options[T]) { o.mode = m }
}

// WithPageSize sets the LIST page size (the limit parameter). The default
// is 500, for the first list and for a list of the server's latest state
// after 410 Gone, while a relist at the Store's resourceVersion asks for
// everything in one answer, which kube-apiserver serves from its watch
// cache. Given WithPageSize, every list pages with n, as client-go's
// reflector does with WatchListPageSize (for a resource whose watch cache
// is off, which then serves relists from etcd); 0 lists in one request.
func WithPageSize[T metav1.Object](n int64) Option[T] {
	return func(o *options[T]) { o.pageSize, o.pageSizeSet = max(n, 0), true }
}

// WithTransform applies f to every object as it is decoded, before it reaches
// the Store: dropping managedFields there keeps them out of memory. f may
// change the object it is given or return another, and drop anything but
// the namespace, name and resourceVersion, which the cache goes by, and the
// UID: without it, an object deleted and created again while the informer
// was not watching reaches handlers as an update rather than a delete and
// an add. An object whose transform fails, panics, returns nil or changes
// its namespace, name or resourceVersion is skipped and the error
// reported, and the Store keeps what it had for the object: on a watch, the
// resourceVersion moves past it, as in client-go, but a DELETED is applied
// untransformed (a delete needs only the key; client-go drops it, and the
// object stays in its cache until it next lists); in a list, the Store (a
// KeepingStore, as deltafifo.FIFO is) is told not to take it for deleted.
// (To keep objects out of the cache, select them away: Target's label and
// field selectors.)
func WithTransform[T metav1.Object](f func(T) (T, error)) Option[T] {
	return func(o *options[T]) { o.transform = f }
}

// WithErrorHandler sets a function called with every list and watch error,
// from the Reflector's goroutine, before it recovers. It must not block; a
// panic in f is logged, and the Reflector goes on. In Auto mode, a server
// refusing the streaming list (which the Reflector answers by listing with
// LIST) is logged rather than reported, as in client-go.
func WithErrorHandler[T metav1.Object](f func(error)) Option[T] {
	return func(o *options[T]) { o.errorHandler = f }
}

// WithRecoveredHandler sets a function called, from the Reflector's
// goroutine, when the server accepts a watch after one or more errors were
// reported (for a streaming list, when its initial events are stored; for
// a resource that is listed but not watched, when a list is stored): the
// cache is following the server again. With
// WithErrorHandler it lets a caller log a run of failures once, and its
// end. It must not block. A panic in f is logged, and the Reflector goes
// on.
func WithRecoveredHandler[T metav1.Object](f func()) Option[T] {
	return func(o *options[T]) { o.recovered = f }
}

// WithLogger sets where the Reflector logs; the default discards.
func WithLogger[T metav1.Object](l *slog.Logger) Option[T] {
	return func(o *options[T]) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithBackoff sets the first and the largest wait between failed attempts.
// The defaults are 800ms and 30s. Each wait is random in [d/2, d], d
// doubling from initial up to max with each failure, and back to initial
// once no failure has come for 2×max or a watch that moved the cache
// forward before it failed is resumed. An initial of zero or less keeps
// the default, one below a millisecond is raised to it, and a max below
// initial is raised to it.
func WithBackoff[T metav1.Object](initial, maximum time.Duration) Option[T] {
	return func(o *options[T]) {
		if initial > 0 {
			o.backoffInitial = max(initial, time.Millisecond)
		}
		o.backoffMax = max(maximum, o.backoffInitial)
	}
}

// WithMinWatchTimeout sets the shortest timeoutSeconds asked of the server
// for one watch; each watch picks a random value between it and twice it.
// The default is 5 minutes; values below one second are raised to one
// second, values above a day lowered to a day.
func WithMinWatchTimeout[T metav1.Object](d time.Duration) Option[T] {
	return func(o *options[T]) { o.minWatchTimeout = min(max(d, time.Second), 24*time.Hour) }
}

// unversionedEvery is how often a resource whose list has no
// resourceVersion is listed (see unversionedInterval): at least a second,
// as WithBackoff allows a cap of a millisecond.
func (o *options[T]) unversionedEvery() time.Duration {
	if o.relistInterval > 0 {
		return o.relistInterval
	}
	return max(o.backoffMax, time.Second)
}

// WithRelistInterval makes the Reflector relist every d even when the watch
// is healthy, which repairs a cache after events that a faulty server lost
// silently. Each relist falls between d and 1.1 d after the last (drawn at
// random, so that informers started together do not relist together). A
// relist delivers only real changes downstream, so its cost is
// one list per interval (a streaming list in the Auto and WatchList modes)
// and a watch opened again. The default, 0, never relists on a timer;
// intervals below one second are raised to one second. It is also how
// often a resource whose list has no resourceVersion (one that is listed,
// not watched) is listed; without it, every 30 s (WithBackoff's cap, or a
// second if that is less).
func WithRelistInterval[T metav1.Object](d time.Duration) Option[T] {
	return func(o *options[T]) {
		o.relistInterval = 0
		if d > 0 {
			o.relistInterval = max(d, time.Second)
		}
	}
}

// WithSharing makes the objects of the cache share their identical parts:
// every map, slice and pointed-to value of an object that equals one in an
// object decoded shortly before (the same labels, owner reference,
// containers, tolerations, resource lists) is replaced by that one's. The
// pods of one ReplicaSet then hold one copy of what they have in common,
// and an object's new version shares what did not change with the old one.
//
// Where it happens depends on the transform:
//
//   - Without a transform, and with the HTTPListerWatcher, while decoding:
//     an object's parts are looked up by their bytes (protobuf or JSON)
//     and not even decoded when they were seen before, which makes
//     decoding cheaper than without sharing. (Unstructured objects go
//     through the walk below, which does not look inside their
//     map[string]interface{} trees: they share nothing.)
//   - Otherwise after the transform, by a walk over each object: 7–10 µs
//     of CPU per pod on 2 CPUs. (To drop managedFields, use
//     WithoutManagedFields rather than a transform: sharing then stays in
//     the decoder.)
//
// The tables behind it remember a few thousand parts, and keep them alive
// after their objects leave the cache, until the next list or until they
// are pushed out. Both bound what they keep in bytes, a few tens of MiB in
// all: the decoders' table remembers a part only if its bytes, and what
// they decode to, are small; the walk's table does not remember a part of
// more than 64 KiB, and forgets everything once what it remembers would
// pass 32 MiB (ConfigMaps of 16 KiB replaced over and over had it keep
// 135 MiB alive before it bounded bytes).
// Measured with the side-by-side benchmarks (internal/bench/README.md has
// the runs), 100k pods on 2 CPUs, while decoding: protobuf sync 3.78 →
// 3.17 s and peak RSS 782 → 491 MiB; JSON sync 7.82 → 6.51 s of CPU and
// peak RSS 867 → 576 MiB.
//
// It is sound only if nothing modifies a cached object, which is already
// the rule for informer caches: with sharing, a handler that modifies one
// object modifies the others that share the part, and, until the next
// list, the objects decoded later that would have shared it (each list
// starts sharing afresh, so a relist repairs the cache, as
// WithRelistInterval does on a timer). informer.WithMutationDetector finds
// such a handler in tests. The transform may modify the object it is given,
// as sharing then happens after it, but must not return parts it keeps or
// shares elsewhere.
//
// A part that holds a resource.Quantity in place (an emptyDir's sizeLimit,
// a resourceFieldRef's divisor) is never shared: Quantity.String() fills a
// cache inside the Quantity, so two goroutines reading each its own object
// would race on the shared one. Resource lists are shared: a map's reads
// copy their Quantities, and String() fills the copy's cache.
func WithSharing[T metav1.Object]() Option[T] {
	return func(o *options[T]) { o.sharing = true }
}
