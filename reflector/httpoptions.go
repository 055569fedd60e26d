package reflector

import (
	"time"

	"github.com/listwatch/listwatch/internal/wire"
)

// HTTPOption configures an HTTPListerWatcher.
type HTTPOption func(*httpOptions)

type httpOptions struct {
	contentType       ContentType
	sharedParts       bool // set by the Reflector, see sharingParts
	listTimeout       time.Duration
	idleTimeout       time.Duration
	maxFrameBytes     int
	maxItemBytes      int
	dropManagedFields bool
	internProtobuf    bool
	decodeWorkers     int
}

// workers is how many goroutines decode a watch stream.
func (o httpOptions) workers() int { return min(max(o.decodeWorkers, 1), maxDecodeWorkers) }

// maxDecodeWorkers bounds WithDecodeWorkers: see wire.MaxParallelWorkers.
const maxDecodeWorkers = wire.MaxParallelWorkers

// WithContentType chooses JSON or protobuf; the default picks protobuf for
// built-in types.
func WithContentType(ct ContentType) HTTPOption {
	return func(o *httpOptions) { o.contentType = ct }
}

// WithListTimeout bounds one LIST page request, body included. The default
// is one minute; d ≤ 0 keeps it.
func WithListTimeout(d time.Duration) HTTPOption {
	return func(o *httpOptions) {
		if d > 0 {
			o.listTimeout = d
		}
	}
}

// WithWatchIdleTimeout sets the watchdog: a watch stream that delivers no
// byte for d is closed, reported (ErrStalled) and reopened from where it
// was, at once if it was open for a second or more (after the backoff if
// not, and in Auto mode a streaming list that stalls before its initial
// events end falls back to LIST). With bookmarks on, kube-apiserver sends
// something about once a minute even on a quiet resource (v1.37.2 with
// etcd's default flags: a BOOKMARK at 61, 122 and 181 s on a watch of an
// empty namespace's config maps); the default is 90 seconds, and a shorter
// one reopens the watch of a quiet resource every d. 0 (or less) turns the
// watchdog off. A d under MinWatchIdleTimeout is raised to it: the
// watchdog also bounds the wait for a watch request's answer, and one
// shorter than a round trip would give up every watch before it opened,
// leaving the cache at its first list (WithWatchIdleTimeout(90) is 90 ns).
func WithWatchIdleTimeout(d time.Duration) HTTPOption {
	return func(o *httpOptions) {
		o.idleTimeout = 0
		if d > 0 {
			o.idleTimeout = max(d, MinWatchIdleTimeout)
		}
	}
}

// MinWatchIdleTimeout is the least WithWatchIdleTimeout taken.
const MinWatchIdleTimeout = time.Second

// WithMaxFrameBytes bounds one watch event; the default is 64 MiB. It bounds
// the bytes read, not what they decode to: a list of empty objects is the
// worst case, a 1 MiB event of {"spec":{"containers":[{},{},...]}} holding
// some 140 MB once decoded (408 bytes per Container; apimachinery's decoder
// too). client-go's watch decoder bounds an event at 16 MiB. n ≤ 0 means
// the default.
func WithMaxFrameBytes(n int) HTTPOption {
	return func(o *httpOptions) { o.maxFrameBytes = n }
}

// WithMaxItemBytes bounds one item of a list page (JSON or protobuf, both
// decoded as they stream in); the default is 64 MiB, and n ≤ 0 means it.
func WithMaxItemBytes(n int) HTTPOption {
	return func(o *httpOptions) { o.maxItemBytes = n }
}

// WithDecodeWorkers decodes each watch stream's events on n goroutines
// instead of the Reflector's own (the stream is still read by one goroutine
// and the events reach the Reflector in order). Decoding is most of a
// watch's CPU, so on a client with idle CPUs this raises the rate at which
// one stream can be followed, the initial events of a streaming list
// included. It costs goroutine hand-offs and, for JSON, a pass that cuts
// the stream into events, so on a busy machine it only spends more CPU:
// on 2 CPUs, the internal/wire benchmarks decode a pod in 12.4–13.3 µs
// instead of 14.8 (protobuf) and 35–36 µs instead of 41 (JSON), but in the
// side-by-side benchmarks, whose server shares those 2 CPUs, it left watch
// throughput unchanged (JSON used 23% more CPU) and shortened a protobuf
// sync of 100k pods by 2–7% at most, for 8–12% more CPU. The default, 1,
// decodes on the Reflector's goroutine. n is at most 64 (more is lowered
// to 64): the one goroutine that reads the stream cuts an event from it in
// well under a microsecond, so a few dozen decoding ones keep it busy, and
// more would only hold more events' buffers.
func WithDecodeWorkers(n int) HTTPOption {
	return func(o *httpOptions) { o.decodeWorkers = min(max(n, 0), maxDecodeWorkers) }
}

// WithProtobufInterning is kept for the types whose protobuf objects are
// decoded by their own Unmarshal (see wire.WithProtobufInterning): objects
// of every k8s.io/api type are decoded by a decoder compiled from their Go
// type, which shares repeated strings while decoding, as for JSON, so for
// them this option changes nothing.
//
// Deprecated: protobuf objects of API types are interned by default.
func WithProtobufInterning() HTTPOption {
	return func(o *httpOptions) { o.internProtobuf = true }
}

// WithoutManagedFields skips metadata.managedFields while decoding, so they
// are never allocated: the cheapest way to keep them out of the cache.
func WithoutManagedFields() HTTPOption {
	return func(o *httpOptions) { o.dropManagedFields = true }
}
