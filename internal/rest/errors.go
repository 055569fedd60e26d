package rest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The errors of this package, and whether retrying helps:
//
//	*APIError              the apiserver refused: see APIError.Retryable
//	ErrNoKubeconfig        no kubeconfig file: not retryable; fall back (e.g. InClusterConfig)
//	ErrNotInCluster        not running in a pod: not retryable; fall back (e.g. LoadKubeconfig)
//	ErrBodyTooLarge        a body exceeded its LimitReader bound: not retryable as is
//	connection errors      refused, reset, EOF, timeouts, lost HTTP/2 connections: retryable
//	TLS verification       wrong CA, wrong server name: not retryable; fix the configuration
var (
	// ErrNoKubeconfig reports that no kubeconfig file exists where one was
	// looked for, or that those found define nothing. Callers test for it
	// with errors.Is to fall back to InClusterConfig. Not retryable.
	ErrNoKubeconfig = errors.New("no kubeconfig file found")

	// ErrNotInCluster reports that the process does not run inside a pod:
	// KUBERNETES_SERVICE_HOST or KUBERNETES_SERVICE_PORT is unset. Not
	// retryable.
	ErrNotInCluster = errors.New("not running in a Kubernetes cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set")

	// ErrBodyTooLarge reports that a reader made by LimitReader was asked
	// for more bytes than its limit. Not retryable: the same request gets
	// the same body; ask for smaller pages or raise the limit.
	ErrBodyTooLarge = errors.New("response body too large")
)

// APIError is a request the apiserver answered with a failure status: a
// non-2xx response (see CheckResponse) or an ERROR event inside a watch
// stream (see FromStatus).
//
// Error returns "<code> <reason>: <message>", for example
// `403 Forbidden: pods is forbidden: User "x" cannot list resource "pods"`;
// callers add what they were doing with %w. The zero value is an error with
// code 0 and no message. An APIError is not modified after it is returned
// and may be shared between goroutines.
type APIError struct {
	// ErrStatus is the Status object the server sent, or one made up from the
	// HTTP status when the body was not a Status. Status.Code is always set.
	ErrStatus metav1.Status
	// Method and URL name the request, when known. URL never carries user
	// info (credentials are sent in headers, never in URLs).
	Method, URL string
	// RetryAfter is how long the server asked the client to wait before
	// retrying: the Retry-After header on any status, in seconds or as an
	// HTTP date; else Status.Details.RetryAfterSeconds. A negative or
	// unreadable header counts as none. Zero when the server did not say.
	// (client-go's REST client waits only on a 429 or a 5xx, for a header
	// in whole seconds.)
	RetryAfter time.Duration
}

// Status returns the server's Status. With it, APIError implements
// k8s.io/apimachinery/pkg/api/errors.APIStatus, so that package's helpers
// (IsNotFound, IsForbidden, IsGone, ...) work on the errors of this client.
func (e *APIError) Status() metav1.Status { return e.ErrStatus }

// Error returns "<code> <reason>: <message>".
func (e *APIError) Error() string {
	reason := string(e.ErrStatus.Reason)
	if reason == "" {
		reason = http.StatusText(int(e.ErrStatus.Code))
	}
	s := fmt.Sprintf("%d %s", e.ErrStatus.Code, reason)
	if e.ErrStatus.Message != "" {
		s += ": " + e.ErrStatus.Message
	}
	return s
}

// Retryable reports whether sending the same request again later may
// succeed: true for 429 Too Many Requests and for the server-side failures
// 500, 502, 503 and 504 (including "too large resource version", which
// clears once the server's cache catches up). False for everything else:
// 401 and 403 need other credentials, 404 another resource, 410 a relist.
// It goes by the code alone: the reason TooManyRequests under another code
// is not retryable.
func (e *APIError) Retryable() bool {
	switch e.ErrStatus.Code {
	case http.StatusTooManyRequests,
		http.StatusInternalServerError,
		http.StatusBadGateway,
		http.StatusServiceUnavailable,
		http.StatusGatewayTimeout:
		return true
	}
	return false
}

// FromStatus makes an *APIError from a Status object received in a watch
// stream's ERROR event, whatever its status field says. A Status without a
// code gets the code that its reason implies (Expired → 410, Timeout → 504,
// ...; no reason, or one unknown, → 500). A positive
// Details.RetryAfterSeconds becomes RetryAfter (client-go's reflector, after
// an ERROR event, waits on its own backoff whatever the Status says). A
// Status of another kind (the ERROR event's object was not a Status) gives a
// 500 InternalError naming that kind (client-go's reflector fails with an
// UnexpectedObjectError, which carries no Status). A nil status gives an
// APIError with code 500 saying so.
func FromStatus(status *metav1.Status) *APIError {
	if status == nil {
		return &APIError{ErrStatus: metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusInternalServerError,
			Reason:  metav1.StatusReasonInternalError,
			Message: "ERROR event without a Status object",
		}}
	}
	if status.Kind != "" && status.Kind != "Status" {
		// A server's bug, which its code would not describe.
		return &APIError{ErrStatus: metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusInternalServerError,
			Reason:  metav1.StatusReasonInternalError,
			Message: fmt.Sprintf("ERROR event whose object is a %s, not a Status", status.Kind),
		}}
	}
	e := &APIError{ErrStatus: *status}
	if e.ErrStatus.Code == 0 {
		e.ErrStatus.Code = codeForReason(status.Reason)
	}
	if d := status.Details; d != nil && d.RetryAfterSeconds > 0 {
		e.RetryAfter = time.Duration(d.RetryAfterSeconds) * time.Second
	}
	return e
}

// IsGone reports whether err says the requested resource version or continue
// token is too old: any 410 whatever its reason, or the reason Expired or
// Gone. The caller must relist.
func IsGone(err error) bool {
	e, ok := asAPIError(err)
	if !ok {
		return false
	}
	return e.ErrStatus.Code == http.StatusGone ||
		e.ErrStatus.Reason == metav1.StatusReasonExpired ||
		e.ErrStatus.Reason == metav1.StatusReasonGone
}

// tooLargeRV is the text every apiserver version has used for a resource
// version newer than its storage has seen.
const tooLargeRV = "Too large resource version"

// IsTooLargeResourceVersion reports whether err says the requested resource
// version is newer than what the server has (its watch cache lags behind):
// the caller should wait briefly and retry, not relist in a loop.
//
// It recognises the three forms apiservers have sent:
//   - a cause of type ResourceVersionTooLarge (1.18.6 and later);
//   - a Timeout status (reason Timeout, or code 504 whatever its reason)
//     with a cause whose message is "Too large resource version" (1.17.0
//     to 1.18.5);
//   - a Timeout status whose message contains "Too large resource version"
//     (before 1.17), if the server wrote it: a Status made up from a body
//     that is not one (CheckResponse) has the body as its message, and
//     counts only if the whole body is that text, as in client-go.
func IsTooLargeResourceVersion(err error) bool {
	e, ok := asAPIError(err)
	if !ok {
		return false
	}
	var causes []metav1.StatusCause
	if d := e.ErrStatus.Details; d != nil {
		causes = d.Causes
	}
	madeUp := false
	for _, c := range causes {
		if c.Type == metav1.CauseTypeResourceVersionTooLarge {
			return true
		}
		madeUp = madeUp || c.Type == metav1.CauseTypeUnexpectedServerResponse
	}
	if e.ErrStatus.Reason != metav1.StatusReasonTimeout && e.ErrStatus.Code != http.StatusGatewayTimeout {
		return false
	}
	for _, c := range causes {
		if c.Message == tooLargeRV {
			return true
		}
	}
	return !madeUp && strings.Contains(e.ErrStatus.Message, tooLargeRV)
}

// IsForbidden reports whether err is a 403: the user may not do this. Not
// retryable.
func IsForbidden(err error) bool {
	e, ok := asAPIError(err)
	return ok && e.ErrStatus.Code == http.StatusForbidden
}

// RetryAfter returns how long the server asked the caller to wait before
// retrying, or zero when err carries no such request.
func RetryAfter(err error) time.Duration {
	e, ok := asAPIError(err)
	if !ok {
		return 0
	}
	return e.RetryAfter
}

// IsRetryable reports whether the request that failed with err may succeed
// if sent again later: an *APIError whose Retryable method says so, or a
// connection error (refused, reset, unexpected EOF, a timeout, a lost or
// shut-down HTTP/2 connection). It is false for nil, for context.Canceled
// (the caller gave up), for TLS verification failures (the configuration
// must change) and for ErrBodyTooLarge.
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	if e, ok := asAPIError(err); ok {
		return e.Retryable()
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, ErrBodyTooLarge) || isTLSVerifyError(err) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, io.EOF) ||
		errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNABORTED) ||
		errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ETIMEDOUT) ||
		errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH) {
		return true
	}
	// *url.Error is a net.Error whatever it wraps, so ask for the concrete
	// network errors and for timeouts only.
	var (
		opErr  *net.OpError
		dnsErr *net.DNSError
		netErr net.Error
	)
	if errors.As(err, &opErr) || errors.As(err, &dnsErr) || (errors.As(err, &netErr) && netErr.Timeout()) {
		return true
	}
	if IsGoAway(err) {
		return true
	}
	// The HTTP/2 transport reports a lost connection, a GOAWAY and a reset
	// stream with unexported error values; their text is all there is.
	msg := err.Error()
	for _, s := range []string{
		"http2: client connection lost",
		"http2: client conn is closed",
		"http2: server sent GOAWAY",
		"GOAWAY",
		"stream error:",
		"connection reset by peer",
		"broken pipe",
		"server closed idle connection",
	} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// IsGoAway reports a request or stream ended by the server going away: an
// HTTP/2 GOAWAY with the connection closed, which kube-apiserver sends as
// it shuts down. The transport's error value is unexported; its text is
// all there is.
func IsGoAway(err error) bool {
	return err != nil && strings.Contains(err.Error(), "server sent GOAWAY")
}

func asAPIError(err error) (*APIError, bool) {
	var e *APIError
	if errors.As(err, &e) && e != nil {
		return e, true
	}
	return nil, false
}

// isTLSVerifyError reports whether err is the server's certificate failing
// verification, which no retry fixes.
func isTLSVerifyError(err error) bool {
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
	)
	return errors.As(err, &verify) || errors.As(err, &unknown) ||
		errors.As(err, &hostname) || errors.As(err, &invalid)
}

// codeForReason is the HTTP status the apiserver pairs with each reason.
func codeForReason(r metav1.StatusReason) int32 {
	switch r {
	case metav1.StatusReasonUnauthorized:
		return http.StatusUnauthorized
	case metav1.StatusReasonForbidden:
		return http.StatusForbidden
	case metav1.StatusReasonNotFound:
		return http.StatusNotFound
	case metav1.StatusReasonAlreadyExists, metav1.StatusReasonConflict:
		return http.StatusConflict
	case metav1.StatusReasonGone, metav1.StatusReasonExpired:
		return http.StatusGone
	case metav1.StatusReasonInvalid:
		return http.StatusUnprocessableEntity
	case metav1.StatusReasonServerTimeout:
		return http.StatusInternalServerError
	case metav1.StatusReasonTimeout:
		return http.StatusGatewayTimeout
	case metav1.StatusReasonTooManyRequests:
		return http.StatusTooManyRequests
	case metav1.StatusReasonBadRequest:
		return http.StatusBadRequest
	case metav1.StatusReasonMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case metav1.StatusReasonNotAcceptable:
		return http.StatusNotAcceptable
	case metav1.StatusReasonRequestEntityTooLarge:
		return http.StatusRequestEntityTooLarge
	case metav1.StatusReasonUnsupportedMediaType:
		return http.StatusUnsupportedMediaType
	case metav1.StatusReasonServiceUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// reasonForCode is the reason the apiserver pairs with each HTTP status,
// used when a response body is not a Status object. It names two that
// client-go's made-up Status leaves Unknown: Gone and
// RequestEntityTooLarge.
func reasonForCode(code int) metav1.StatusReason {
	switch code {
	case http.StatusBadRequest:
		return metav1.StatusReasonBadRequest
	case http.StatusUnauthorized:
		return metav1.StatusReasonUnauthorized
	case http.StatusForbidden:
		return metav1.StatusReasonForbidden
	case http.StatusNotFound:
		return metav1.StatusReasonNotFound
	case http.StatusMethodNotAllowed:
		return metav1.StatusReasonMethodNotAllowed
	case http.StatusNotAcceptable:
		return metav1.StatusReasonNotAcceptable
	case http.StatusConflict:
		return metav1.StatusReasonConflict
	case http.StatusGone:
		return metav1.StatusReasonGone
	case http.StatusRequestEntityTooLarge:
		return metav1.StatusReasonRequestEntityTooLarge
	case http.StatusUnsupportedMediaType:
		return metav1.StatusReasonUnsupportedMediaType
	case http.StatusUnprocessableEntity:
		return metav1.StatusReasonInvalid
	case http.StatusTooManyRequests:
		return metav1.StatusReasonTooManyRequests
	case http.StatusServiceUnavailable:
		return metav1.StatusReasonServiceUnavailable
	case http.StatusGatewayTimeout:
		return metav1.StatusReasonTimeout
	}
	if code >= 500 {
		return metav1.StatusReasonInternalError
	}
	return metav1.StatusReasonUnknown
}
