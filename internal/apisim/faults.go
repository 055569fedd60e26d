package apisim

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Fault is one misbehaviour, applied to a request that an injection
// matches (see Server.Inject). Build one with the constructors below; After
// returns a copy that lets n events (or list items) through first.
//
// Faults act at one of three moments:
//   - before the request is served: TooManyRequests,
//     TooManyRequestsWithoutRetryAfter, ServerError, StatusResponse,
//     Answer, Hold;
//   - while a LIST body or WATCH stream is written, once After(n) events or
//     items went out: DropConnection, TruncateFrame, MalformedFrame,
//     SilentAfterHeaders, EndStream, ErrorEvent and ErrorEventStatus (watch
//     only), TrickleList (list only);
//   - on the next event or list item (the one after the first n): the
//     object mutations UnknownEventType (watch only), WrongKind,
//     MissingName, MissingMetadata, EmptyResourceVersion,
//     DecreasingResourceVersion, InvalidResourceVersion, LargeObject.
//
// Stream faults do nothing on verbs without a body stream. BOOKMARK events
// do not count towards n and are never mutated. The zero Fault does
// nothing. Fault is a value; it is safe to share.
type Fault struct {
	kind  faultKind
	after int

	status   *metav1.Status // faultStatus
	plain    bool           // faultStatus: as text/plain, not a Status object
	interval time.Duration  // faultTrickle
	size     int            // mutLarge
	gate     *Gate          // faultHold
	answer   *answer        // faultAnswer
	code     int32          // faultErrorEvent
	reason   metav1.StatusReason
}

type faultKind uint8

const (
	faultNone faultKind = iota
	faultStatus
	faultAnswer
	faultHold
	faultSilent
	faultTrickle
	faultDrop
	faultTruncate
	faultMalformed
	faultErrorEvent
	faultEnd
	// object mutations
	mutUnknownType
	mutWrongKind
	mutMissingName
	mutMissingMetadata
	mutEmptyRV
	mutDecreasingRV
	mutInvalidRV
	mutLarge
)

// String names the fault, e.g. "drop-connection after 3".
func (f Fault) String() string {
	name := f.kind.String()
	switch {
	case f.kind == faultStatus && f.status != nil:
		name = fmt.Sprintf("status %d", f.status.Code)
	case f.kind == faultAnswer:
		name = fmt.Sprintf("answer %d", f.answer.code)
	case f.kind == faultErrorEvent && f.status != nil:
		name += fmt.Sprintf(" %d", f.status.Code)
	}
	if f.after > 0 {
		name += fmt.Sprintf(" after %d", f.after)
	}
	return name
}

func (k faultKind) String() string {
	switch k {
	case faultStatus:
		return "status"
	case faultAnswer:
		return "answer"
	case faultHold:
		return "hold"
	case faultSilent:
		return "silent-after-headers"
	case faultTrickle:
		return "trickle-list"
	case faultDrop:
		return "drop-connection"
	case faultTruncate:
		return "truncate-frame"
	case faultMalformed:
		return "malformed-frame"
	case faultErrorEvent:
		return "error-event"
	case faultEnd:
		return "end-stream"
	case mutUnknownType:
		return "unknown-event-type"
	case mutWrongKind:
		return "wrong-kind"
	case mutMissingName:
		return "missing-name"
	case mutMissingMetadata:
		return "missing-metadata"
	case mutEmptyRV:
		return "empty-resource-version"
	case mutDecreasingRV:
		return "decreasing-resource-version"
	case mutInvalidRV:
		return "invalid-resource-version"
	case mutLarge:
		return "large-object"
	}
	return "none"
}

// After returns a copy of f that first lets n events (watch) or items
// (list) through. Faults acting before the request ignore it.
func (f Fault) After(n int) Fault {
	f.after = max(n, 0)
	return f
}

// DropConnection closes the connection abruptly, without ending the HTTP
// response: the client reads an unexpected EOF (HTTP/1.1) or a stream reset
// (HTTP/2) after the first n events or items.
func DropConnection() Fault { return Fault{kind: faultDrop} }

// TruncateFrame writes the first half of the next event (or list item)
// frame, then drops the connection.
func TruncateFrame() Fault { return Fault{kind: faultTruncate} }

// MalformedFrame writes one frame that does not decode (a broken JSON line,
// or a protobuf frame of garbage), then goes on with the stream.
func MalformedFrame() Fault { return Fault{kind: faultMalformed} }

// UnknownEventType sends the next watch event with type "UNKNOWN".
func UnknownEventType() Fault { return Fault{kind: mutUnknownType} }

// WrongKind sends the next object claiming another kind (ConfigMap, or
// Secret for configmaps).
func WrongKind() Fault { return Fault{kind: mutWrongKind} }

// MissingName sends the next object without metadata.name.
func MissingName() Fault { return Fault{kind: mutMissingName} }

// MissingMetadata sends the next object without metadata.
func MissingMetadata() Fault { return Fault{kind: mutMissingMetadata} }

// EmptyResourceVersion sends the next object without
// metadata.resourceVersion.
func EmptyResourceVersion() Fault { return Fault{kind: mutEmptyRV} }

// DecreasingResourceVersion sends the next object with a resourceVersion
// one below the previous event's (or below the watch's starting RV).
func DecreasingResourceVersion() Fault { return Fault{kind: mutDecreasingRV} }

// InvalidResourceVersion sends the next object with a resourceVersion
// that is not a number, which the server itself refuses when a client
// names it: a LIST with it gets a 400, a WATCH from it a 500.
func InvalidResourceVersion() Fault { return Fault{kind: mutInvalidRV} }

// LargeObject pads the next object with an annotation
// ("apisim.listwatch.dev/padding") until its JSON is at least size bytes.
func LargeObject(size int) Fault { return Fault{kind: mutLarge, size: size} }

// TooManyRequests answers 429 TooManyRequests, as API Priority and Fairness
// does, with a Retry-After header and details.retryAfterSeconds.
func TooManyRequests(retryAfterSeconds int) Fault {
	st := apierrors.NewTooManyRequests("Too many requests, please try again later.", retryAfterSeconds).ErrStatus
	return Fault{kind: faultStatus, status: &st}
}

// TooManyRequestsPlain answers 429 exactly as API Priority and Fairness and
// the max-in-flight filter do: "Too many requests, please try again
// later." as text/plain, with the Retry-After header and no Status object.
func TooManyRequestsPlain(retryAfterSeconds int) Fault {
	f := TooManyRequests(retryAfterSeconds)
	f.plain = true
	return f
}

// TooManyRequestsWithoutRetryAfter answers 429 with neither a Retry-After
// header nor details.retryAfterSeconds.
func TooManyRequestsWithoutRetryAfter() Fault {
	st := apierrors.NewTooManyRequestsError("Too many requests, please try again later.").ErrStatus
	st.Details = nil
	return Fault{kind: faultStatus, status: &st}
}

// ServerError answers with a 5xx Status: 500 InternalError,
// 503 ServiceUnavailable, 504 Timeout, or the given code with reason
// InternalError. Inject it with times > 1 for a burst.
func ServerError(code int) Fault {
	var st metav1.Status
	switch code {
	case http.StatusInternalServerError:
		st = apierrors.NewInternalError(fmt.Errorf("apisim: injected fault")).ErrStatus
	case http.StatusServiceUnavailable:
		st = apierrors.NewServiceUnavailable("apisim: injected fault").ErrStatus
	case http.StatusGatewayTimeout:
		st = apierrors.NewTimeoutError("apisim: injected fault", 0).ErrStatus
	default:
		st = metav1.Status{Status: metav1.StatusFailure, Code: int32(code),
			Reason: metav1.StatusReasonInternalError, Message: "apisim: injected fault"}
	}
	return Fault{kind: faultStatus, status: &st}
}

// ErrorEvent sends, after n events, an ERROR event whose object is a
// Status with the given code and reason, then ends the stream, as
// kube-apiserver does. ErrorEvent(410, metav1.StatusReasonExpired) is the
// "too old resource version" a reflector must answer with a relist.
func ErrorEvent(code int32, reason metav1.StatusReason) Fault {
	return Fault{kind: faultErrorEvent, code: code, reason: reason}
}

// ErrorEventStatus is ErrorEvent with the whole Status given, for answers
// whose shape matters (the three forms of "Too large resource version",
// say). Kind and APIVersion are filled in when empty.
func ErrorEventStatus(st metav1.Status) Fault {
	st.Kind, st.APIVersion = "Status", "v1"
	return Fault{kind: faultErrorEvent, status: &st}
}

// StatusResponse answers the request with st, its Code as the HTTP status
// (500 when zero), and a Retry-After header when st asks for a delay.
func StatusResponse(st metav1.Status) Fault {
	if st.Code == 0 {
		st.Code = http.StatusInternalServerError
	}
	return Fault{kind: faultStatus, status: &st}
}

// Answer answers the request with code, a Content-Type header of
// contentType (none when empty) and body, in the server's place: what a
// proxy or a load balancer in front of it may send (a 200 "{}" from a
// health-check backend, an HTML error page). body is copied.
func Answer(code int, contentType string, body []byte) Fault {
	return Fault{kind: faultAnswer, answer: &answer{code: code, contentType: contentType, body: bytes.Clone(body)}}
}

// answer is what Answer sends.
type answer struct {
	code        int
	contentType string
	body        []byte
}

// EndStream ends the response cleanly after n events or items, as a
// server closing a watch early does. On a LIST the body then stops at an
// item boundary, so it does not decode.
func EndStream() Fault { return Fault{kind: faultEnd} }

// SilentAfterHeaders sends the 200 response headers (and, with After, the
// first n events or items), then nothing until the client goes away or the
// server closes: a stalled stream.
func SilentAfterHeaders() Fault { return Fault{kind: faultSilent} }

// TrickleList writes the LIST response body one byte per interval
// (slowloris), so that only a client deadline ends it.
func TrickleList(interval time.Duration) Fault { return Fault{kind: faultTrickle, interval: interval} }

// Hold blocks the request before it is served until g is released (or the
// client goes away, or the server closes); then it is served normally.
func Hold(g *Gate) Fault { return Fault{kind: faultHold, gate: g} }

// Gate holds requests (see Hold) until released. Create with NewGate; it is
// safe for concurrent use.
type Gate struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

// NewGate returns a closed gate.
func NewGate() *Gate {
	return &Gate{entered: make(chan struct{}, 1024), release: make(chan struct{})}
}

// Entered receives one value for each request that reached the gate.
func (g *Gate) Entered() <-chan struct{} { return g.entered }

// Release lets every held request, and every later one, through. Calling
// it again does nothing.
func (g *Gate) Release() {
	g.once.Do(func() { close(g.release) })
}

// Match selects the requests an injection applies to. The zero Match
// matches every API request.
type Match struct {
	Verb Verb // "" for any verb
	// Resource is the plural, e.g. "pods", for requests to the resource
	// and its objects, or with a subresource for those to it
	// ("pods/status", "namespaces/finalize"), as RBAC names them; "" for
	// any.
	Resource string
	Request  func(*http.Request) bool // nil for any request
}

func (m Match) matches(req request, r *http.Request) bool {
	return (m.Verb == "" || m.Verb == req.verb) &&
		(m.Resource == "" || m.Resource == req.resource()) &&
		(m.Request == nil || m.Request(r))
}

// Injection is a fault scheduled by Server.Inject. Its methods are safe
// for concurrent use.
type Injection struct {
	s         *Server
	match     Match
	fault     Fault
	remaining int // -1: unlimited
	hits      int
}

// Inject makes the next times requests matching m suffer f (times <= 0:
// every matching request until Remove). Injections are tried in the order
// they were made; one request suffers at most one fault.
func (s *Server) Inject(m Match, f Fault, times int) *Injection {
	inj := &Injection{s: s, match: m, fault: f, remaining: times}
	if times <= 0 {
		inj.remaining = -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, inj)
	return inj
}

// Hits returns how many requests suffered the fault so far.
func (i *Injection) Hits() int {
	i.s.mu.Lock()
	defer i.s.mu.Unlock()
	return i.hits
}

// Remove cancels what is left of the injection.
func (i *Injection) Remove() {
	i.s.mu.Lock()
	defer i.s.mu.Unlock()
	i.remaining = 0
}

// takeFault returns the injection that applies to a request, consuming
// one of its uses, or nil.
func (s *Server) takeFault(req request, r *http.Request) *Injection {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < len(s.faults); i++ {
		inj := s.faults[i]
		if inj.remaining == 0 {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
			i--
			continue
		}
		if !inj.match.matches(req, r) {
			continue
		}
		if inj.remaining > 0 {
			inj.remaining--
		}
		inj.hits++
		return inj
	}
	return nil
}

// before applies a fault that acts before the request is served, and
// reports whether it answered the request.
func (f Fault) before(s *Server, w http.ResponseWriter, r *http.Request, req request) bool {
	switch f.kind {
	case faultStatus:
		if f.plain {
			if d := f.status.Details; d != nil && d.RetryAfterSeconds > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(int(d.RetryAfterSeconds)))
			}
			http.Error(w, f.status.Message, int(f.status.Code))
			return true
		}
		writeStatus(w, r, &apierrors.StatusError{ErrStatus: *f.status}, errorFormat(r))
		return true
	case faultAnswer:
		if f.answer.contentType != "" {
			w.Header().Set("Content-Type", f.answer.contentType)
		}
		w.WriteHeader(f.answer.code)
		_, _ = w.Write(f.answer.body)
		return true
	case faultHold:
		select {
		case f.gate.entered <- struct{}{}:
		default:
		}
		select {
		case <-f.gate.release:
		case <-r.Context().Done():
			return true
		case <-s.closing:
			return true
		}
	case faultSilent:
		if req.verb != VerbList && req.verb != VerbWatch {
			w.Header().Set("Content-Type", mediaJSON)
			w.WriteHeader(http.StatusOK)
			if fl, ok := w.(http.Flusher); ok {
				fl.Flush()
			}
			s.stall(r.Context())
			return true
		}
	}
	return false
}

// stall blocks until the client goes away or the server closes.
func (s *Server) stall(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-s.closing:
	}
}

type faultKey struct{}

func withFault(ctx context.Context, f Fault) context.Context {
	return context.WithValue(ctx, faultKey{}, f)
}

func faultFrom(ctx context.Context) Fault {
	f, _ := ctx.Value(faultKey{}).(Fault)
	return f
}
