package processor

import (
	"fmt"
	"log/slog"
	"time"
)

// Option configures a Processor; pass options to New.
type Option func(*config)

// config is what the options set. Its zero value is the default: panics are
// logged to slog.Default() and the upstream counts as synced.
type config struct {
	name           string
	errorHandler   func(error)
	logger         *slog.Logger
	upstreamSynced func() bool
}

// panicLog is what the log of one listener's panics remembers. Only the
// goroutine running the listener's handler touches it (one at a time).
type panicLog struct {
	logged     time.Time // when the last record with a stack was logged
	suppressed int       // panics not logged with a stack since
}

// panicLogWindow is how often a listener's panics are logged at Error with
// their stack: a handler that panics on every event of a busy informer (a
// poison object) would otherwise write a record of kilobytes per event,
// hundreds of megabytes an hour. The ones in between are counted, and the
// count is in the next record; an error handler (WithErrorHandler) is still
// told of every one.
const panicLogWindow = time.Minute

// WithName names what the Processor delivers for, such as an informer
// (its name, e.g. `pods in "default"`), in its reports: HandlerPanicError's
// Processor field and the log. Two informers of one type have listeners
// of the same names; this tells their panics apart.
func WithName(name string) Option {
	return func(c *config) { c.name = name }
}

// WithErrorHandler sets the function told about handler panics, each as a
// *HandlerPanicError. It is called on the panicking listener's goroutine, so
// that listener waits for it, and calls for different listeners may run at
// once. A panic in it is logged, with the panic it was told of. Without it
// (or with nil), panics are logged through the logger of WithLogger: a
// listener's first panic in a minute at level Error with its stack, the
// others of that minute at level Debug, and counted in the next Error
// record (panicsNotLoggedSince).
func WithErrorHandler(f func(error)) Option {
	return func(c *config) { c.errorHandler = f }
}

// WithLogger sets the logger. A nil logger means slog.Default(), so that
// a handler's panic, with no error handler set, is not lost.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// WithUpstreamSynced sets the function that says whether the source of the
// notifications (the informer) has delivered its initial list; see
// Listener.HasSynced. It must be safe for concurrent use, and is called
// from the listeners' goroutines, Run's and RemoveListener's callers too:
// a panic in it is logged and counts as not synced. Nil, the default,
// means always synced.
func WithUpstreamSynced(f func() bool) Option {
	return func(c *config) { c.upstreamSynced = f }
}

func (c *config) log() *slog.Logger {
	if c.logger == nil {
		return slog.Default()
	}
	return c.logger
}

// syncedFor asks the upstream whether it synced, for who (a listener's
// name, or the Processor). It is called from the listeners' goroutines and
// the Processor's (Run stopping its listeners) as well as the caller's, so
// a panic in the upstream is logged and counts as not synced, rather than
// take down one of them.
func (c *config) syncedFor(who string) (synced bool) {
	if c.upstreamSynced == nil {
		return true
	}
	defer func() {
		if r := recover(); r != nil {
			synced = false
			c.log().Error("processor: the upstream's synced function panicked", "listener", who, "panic", fmt.Sprint(r))
		}
	}()
	return c.upstreamSynced()
}

// reportPanic hands a recovered handler panic to the error handler, or logs
// it: with its stack at most once per panicLogWindow for each listener (pl
// is the listener's), at Debug without it in between.
func (c *config) reportPanic(e *HandlerPanicError, pl *panicLog) {
	if c.errorHandler != nil {
		defer func() {
			if r := recover(); r != nil {
				c.log().Error("processor: the error handler panicked",
					"processor", e.Processor, "listener", e.Listener, "panic", fmt.Sprint(r), "handling", e.Error())
			}
		}()
		c.errorHandler(e)
		return
	}
	attrs := []any{"processor", e.Processor, "listener", e.Listener, "kind", e.Kind.String(), "key", e.Key, "panic", fmt.Sprint(e.Value)}
	now := time.Now()
	if !pl.logged.IsZero() && now.Sub(pl.logged) < panicLogWindow {
		pl.suppressed++
		c.log().Debug("processor: handler panicked", attrs...)
		return
	}
	attrs = append(attrs, "panicsNotLoggedSince", pl.suppressed, "stack", string(e.Stack))
	pl.logged, pl.suppressed = now, 0
	c.log().Error("processor: handler panicked", attrs...)
}
