package informer

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/indexer"
	"github.com/listwatch/listwatch/internal/kinds"
	"github.com/listwatch/listwatch/processor"
	"github.com/listwatch/listwatch/reflector"
)

// Option configures a SharedIndexInformer made by New.
type Option[T metav1.Object] func(*options[T])

type options[T metav1.Object] struct {
	name          string
	indexers      indexer.Indexers[T]
	resync        time.Duration
	logger        *slog.Logger
	reflector     []reflector.Option[T]
	handlerErrors func(error)
	nameSet       bool                // by WithName
	mutations     *mutationOptions[T] // nil: no mutation detector
	err           error               // an option New cannot follow: the informer does not run
}

func defaultOptions[T metav1.Object]() options[T] {
	return options[T]{name: kinds.Name[T](), logger: slog.Default()}
}

// WithName sets what errors and logs call the resource, such as
// `pods in "default"`. The default, for a ListerWatcher that says what it
// lists (as reflector.NewListerWatcher's does), is its resource, namespace
// and selectors, as a Factory names its informers
// (`widgets.example.com in "default" (app=web)`); otherwise the resource of
// a k8s.io/api type, such as "pods", and "objects" for other types.
func WithName[T metav1.Object](name string) Option[T] {
	return func(o *options[T]) { o.name, o.nameSet = name, true }
}

// WithIndexers starts the cache with these named indexes, added to those
// of the WithIndexers before it. An index named by two of them is an
// error: the informer does not run (Run returns the error, and LastError
// says it), just as with an index without a function.
func WithIndexers[T metav1.Object](ix indexer.Indexers[T]) Option[T] {
	return func(o *options[T]) {
		if o.indexers == nil {
			o.indexers = indexer.Indexers[T]{}
		}
		for _, name := range slices.Sorted(maps.Keys(ix)) {
			if _, ok := o.indexers[name]; ok {
				o.err = errors.Join(o.err, fmt.Errorf("informer: index %q is given twice (WithIndexers)", name))
				continue
			}
			o.indexers[name] = ix[name]
		}
	}
}

// WithResyncPeriod sets the resync period of handlers added without one:
// every period they get every cached object again as an Update. The default,
// 0, never resyncs. As with WithHandlerResync, it is at least a second and,
// in effect, a whole number of seconds.
func WithResyncPeriod[T metav1.Object](d time.Duration) Option[T] {
	return func(o *options[T]) { o.resync = d }
}

// WithLogger sets where the informer logs: its errors with no
// SetWatchErrorHandler (a failed list or watch: the first of each kind as
// a warning, then a reminder every 5 minutes while it lasts, an error once
// the failures have lasted 5 minutes, and their end as info; a 410 or a
// cut stream that the reflector recovers from at once, at debug only; a
// stream its watchdog closed (reflector.ErrStalled), reopened at once, at
// debug too unless the next one comes with nothing delivered since (no
// event, no bookmark), and then a warning, with reminders and an error as
// for failures, until something is; a watch request without an answer
// (reflector.ErrNoAnswer) is a failure; an object skipped or not applied, a
// warning each), a handler's panic with
// no WithHandlerErrorHandler (an error with its stack at most once a
// minute per handler, the others of that minute at debug, counted in the
// next error), a change of list mode (info: a server without streaming
// lists), and what it does (debug).
// The default is slog.Default().
func WithLogger[T metav1.Object](l *slog.Logger) Option[T] {
	return func(o *options[T]) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithReflectorOptions passes options to the informer's Reflector: the list
// mode, page size, backoff, relist interval. They come after the informer's
// own, so a reflector.WithName, WithLogger, WithTransform or
// WithErrorHandler given here replaces the informer's WithName, WithLogger,
// SetTransform or SetWatchErrorHandler for the reflector: its transform
// runs instead, and its error handler is called for list and watch errors
// instead of the informer's (which then neither hears of them nor logs
// them); a reflector.WithRecoveredHandler replaces the one that ends the
// informer's log of a run of failures (see WithLogger), whose next runs
// would then be logged as one, never ended. Give those to the informer
// instead.
func WithReflectorOptions[T metav1.Object](opts ...reflector.Option[T]) Option[T] {
	return func(o *options[T]) { o.reflector = append(o.reflector, opts...) }
}

// WithHandlerErrorHandler sets a function called when a handler panics, with
// a *processor.HandlerPanicError. It runs on that handler's goroutine, so
// calls for different handlers may overlap; a panic in it is logged. The
// default logs the handler's panic.
func WithHandlerErrorHandler[T metav1.Object](f func(error)) Option[T] {
	return func(o *options[T]) { o.handlerErrors = f }
}

// HandlerOption configures one handler registration.
type HandlerOption func(*processor.ListenerOptions)

// WithHandlerResync gives this handler its own resync period (at least
// processor.MinimumResyncPeriod, one second). The informer looks for
// handlers that are due once a second, so a period that is not a whole
// number of seconds is, in effect, rounded up to one: 2.5 s resyncs every
// 3 s.
func WithHandlerResync(d time.Duration) HandlerOption {
	return func(o *processor.ListenerOptions) { o.ResyncPeriod = d }
}

// WithMaxPending sets the length of this handler's backlog past which
// updates of one object are merged while it is behind; see
// processor.ListenerOptions.MaxPending. The default is no bound.
func WithMaxPending(n int) HandlerOption {
	return func(o *processor.ListenerOptions) { o.MaxPending = n }
}
