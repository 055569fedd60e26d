package apisim

import (
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

// Option configures a Server; pass options to New.
type Option func(*options)

type options struct {
	historySize      int
	watchBuffer      int
	bookmarkInterval time.Duration
	tooLargeWait     time.Duration
	continueTTL      time.Duration
	compactEvery     time.Duration
	watchTimeout     time.Duration
	futureWatchError bool
	http2            bool
	bearerToken      string
	logger           *slog.Logger
	scheme           *runtime.Scheme
	resources        []Resource
	derivedUIDs      bool
}

func defaultOptions() options {
	return options{
		historySize:      10000,
		watchBuffer:      1024,
		bookmarkInterval: time.Second,
		tooLargeWait:     3 * time.Second,
		http2:            true,
	}
}

// WithResources registers resources at construction, as Register does.
func WithResources(res ...Resource) Option {
	return func(o *options) { o.resources = append(o.resources, res...) }
}

// WithHistorySize sets how many events the server keeps per resource for
// watches that resume from an older resourceVersion (default 10000, like a
// large watch cache). Older events, and the object versions only they
// reference, are forgotten: resuming or paging from before them gets 410.
func WithHistorySize(n int) Option {
	return func(o *options) { o.historySize = max(n, 1) }
}

// WithWatchBuffer sets the number of events a watcher may have pending
// (default 1024). A watcher whose buffer is full when an event arrives is
// terminated: its stream ends cleanly after the buffered events, as the real
// watch cache does with watchers too slow to keep up.
func WithWatchBuffer(n int) Option {
	return func(o *options) { o.watchBuffer = max(n, 1) }
}

// WithBookmarkInterval sets how often watches that allow bookmarks receive
// a BOOKMARK event (default 1s; kube-apiserver sends one about every
// minute). Zero or negative disables periodic bookmarks.
func WithBookmarkInterval(d time.Duration) Option {
	return func(o *options) { o.bookmarkInterval = d }
}

// WithTooLargeWait sets how long a request for a resourceVersion newer than
// the server's waits for it before failing with 504 Timeout, cause
// ResourceVersionTooLarge (default 3s, as kube-apiserver).
func WithTooLargeWait(d time.Duration) Option {
	return func(o *options) { o.tooLargeWait = d }
}

// WithContinueTTL makes continue tokens expire (410 Expired) once their
// snapshot is older than d, as etcd compaction does every 5 minutes on a
// real cluster. Zero (the default) means tokens expire only by compaction.
func WithContinueTTL(d time.Duration) Option {
	return func(o *options) { o.continueTTL = d }
}

// WithCompactionInterval runs Compact every d (default: never).
func WithCompactionInterval(d time.Duration) Option {
	return func(o *options) { o.compactEvery = d }
}

// WithWatchTimeout ends watches that did not ask for timeoutSeconds after d
// (kube-apiserver picks 30-60 minutes). Zero (the default) means never.
func WithWatchTimeout(d time.Duration) Option {
	return func(o *options) { o.watchTimeout = d }
}

// WithFutureWatchError makes a watch whose resourceVersion is ahead of the
// server fail like a LIST does: after the too-large wait, a 200 stream with
// one ERROR event, 504 Timeout, cause ResourceVersionTooLarge. It is a
// fault for testing clients: kube-apiserver with --watch-cache=false fails
// so (at once) only a watch that sends initial events, and waits for the
// resourceVersion of any other, as etcd does. By default the simulator
// behaves like the watch cache: the watch is accepted and delivers the
// events newer than the requested resourceVersion when they happen.
func WithFutureWatchError() Option {
	return func(o *options) { o.futureWatchError = true }
}

// WithDerivedUIDs makes a create stamp a uid derived from the resource,
// namespace, name and resourceVersion instead of a random one, so that two
// servers fed the same writes in the same order hold identical objects: two
// apiservers in front of one etcd, one of them lagging. Default: random.
func WithDerivedUIDs() Option {
	return func(o *options) { o.derivedUIDs = true }
}

// WithHTTP2 chooses whether StartTLS offers HTTP/2 (default true, like
// kube-apiserver). Plain-HTTP servers always speak HTTP/1.1.
func WithHTTP2(enabled bool) Option {
	return func(o *options) { o.http2 = enabled }
}

// WithBearerToken makes the server require "Authorization: Bearer token"
// on every API request; others get 401 Unauthorized. Health and version
// endpoints stay open.
func WithBearerToken(token string) Option {
	return func(o *options) { o.bearerToken = token }
}

// WithLogger sets where the server logs (default: nowhere).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithScheme replaces the scheme that maps kinds to Go types. The default
// holds the built-in k8s.io/api groups a list-watch test needs (core, apps,
// batch, coordination, discovery, networking, policy, rbac, scheduling,
// storage). Resources with Protobuf=true must have their Kind and ListKind
// in it.
func WithScheme(s *runtime.Scheme) Option {
	return func(o *options) { o.scheme = s }
}
