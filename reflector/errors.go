package reflector

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/rest"
	"github.com/listwatch/listwatch/internal/wire"
)

// ErrSkipped marks an error about one event or item that was skipped while
// the stream it came in goes on: an object of the wrong kind, say. A Watcher
// returns errors wrapping ErrSkipped when it can still deliver the next event.
var ErrSkipped = errors.New("skipped")

// ErrRejected marks an object that cannot be cached — one without a name or
// a resourceVersion (unless it comes in a list that has none either), or with
// a "/" in its name or namespace (its key would be another object's). It is
// skipped and the resourceVersion does not advance. In a refill, an object
// rejected only for want of a resourceVersion is handed to a KeepingStore
// as kept.
var ErrRejected = errors.New("object rejected")

// ErrBackInTime marks the report of a refill that took the cache back in
// time: the server stayed behind the cache for minutes (it answered "too
// large resource version" to lists at least as new as the cache, or sent
// older lists), so the Reflector took the server's latest state, older
// than the cache's, for the cache to converge to what the server holds.
// It is reported once the Store has taken that state. The handlers see
// objects go back to older states, and LastSyncResourceVersion goes back.
var ErrBackInTime = errors.New("the cache went back in time to the server's state")

var (
	// errWentBackwards: the server sent a resourceVersion older than one
	// already applied. Not retryable as is: the Reflector relists.
	errWentBackwards = errors.New("resourceVersion went backwards")
	// errEmptyWatch: a watch ended at once without moving the
	// resourceVersion forward.
	errEmptyWatch = errors.New("watch ended at once without progress")
	// errRelistDue: the periodic relist (WithRelistInterval) is due.
	errRelistDue = errors.New("periodic relist due")
	// errNoWatcher: a ListerWatcher's Watch returned neither a Watcher
	// nor an error.
	errNoWatcher = errors.New("the ListerWatcher's Watch returned no Watcher and no error")
	// errZeroEvent: a Watcher's Next returned an Event without a type and
	// no error.
	errZeroEvent = errors.New("the Watcher returned an event without a type (a zero Event) and no error")
	// errNoResourceVersion: an object without one, where one is needed.
	errNoResourceVersion = errors.New("no metadata.resourceVersion")
	// errUnversioned: the Store was refilled by a list without a
	// resourceVersion, from which no watch can start without a gap: it is
	// listed again on a timer (unversionedInterval). Not reported.
	errUnversioned = errors.New("the list has no resourceVersion to watch from")
	// errRepeatedContinue: a LIST page gave back the continue token it
	// was asked with, which would page for ever.
	errRepeatedContinue = errors.New("the list page gave back its own continue token")
	// errRepeatedPage: a LIST page began with the object an earlier page
	// of the same list began with: the server does not page as its
	// continue tokens say (it ignores them, or they go round in a
	// circle), and the list would never end.
	errRepeatedPage = errors.New("the list page began where an earlier page did")
	// errPageOfAnotherList: a LIST page after the first was not at the
	// first page's resourceVersion. The list starts over.
	errPageOfAnotherList = errors.New("a next page of the list is not at the first page's resourceVersion")
	// errUnappliedDelete: a DELETED event whose object was rejected (no
	// name, or no resourceVersion, or of another kind): a relist takes
	// the object out.
	errUnappliedDelete = errors.New("a DELETED event could not be applied (listing again)")
	// errEmptyPages: more than freeEmptyPages pages in a row of one list
	// had no item: each next page waits the backoff.
	errEmptyPages = errors.New("list pages without items keep coming, each with a new continue token (waiting before the next)")
	// errNoInitialEventsEnd: a streaming list has not sent its
	// initial-events-end bookmark yet.
	errNoInitialEventsEnd = errors.New("no initial-events-end bookmark yet")
	// errAddAfterList: a ListerWatcher's List called add after it had
	// returned; the object is dropped.
	errAddAfterList = errors.New("the ListerWatcher's List called add after it returned")
)

// Errors from decoding what the server sent, wrapped with where it was
// (which list item or watch event, how many bytes); test for them with
// errors.Is. The Reflector reports them and tries again after its backoff,
// as with any failed list or watch: an object too large for the limit
// stays too large until the limit is raised or the object shrinks.
var (
	// ErrMalformed: bytes that are not valid JSON or protobuf, or a valid
	// value of the wrong shape (a JSON list without "items": {} from a
	// proxy in the server's place). A server or proxy bug is likely.
	ErrMalformed = wire.ErrMalformed
	// ErrItemTooLarge: a list item larger than WithMaxItemBytes allows.
	ErrItemTooLarge = wire.ErrListTooLarge
	// ErrEventTooLarge: a watch event larger than WithMaxFrameBytes
	// allows.
	ErrEventTooLarge = wire.ErrFrameTooLarge
)

// streamingUnsupportedError says the server cannot serve streaming lists;
// the Reflector falls back to LIST then WATCH. A stream that merely ended
// early (ended) may be a server restarting: the Reflector lists with LIST
// until a LIST succeeds, then streams again, and gives up on streaming only
// if the next streaming list ends early too, within streamCutMemory of the
// first. When the server refused the request, err is its answer (a 400 for a
// bad selector, say, which apimachinery's errors helpers can still tell).
type streamingUnsupportedError struct {
	reason string
	ended  bool // cut short: the stream ended, or went quiet (quiet)
	quiet  bool
	err    error
}

func (e *streamingUnsupportedError) Error() string {
	switch {
	case e.err != nil:
		return "the server refused the streaming list: " + e.reason
	case e.ended:
		return "streaming list cut short: " + e.reason
	}
	return "streaming list not supported by the server: " + e.reason
}

func (e *streamingUnsupportedError) Unwrap() error { return e.err }

// incompleteListError fails a streaming list one of whose initial events
// the Watcher skipped (err, wrapping ErrSkipped). It is a failure of the
// list, not an event skipped: errors.Is finds what err wraps, ErrSkipped
// aside.
type incompleteListError struct {
	name string
	err  error
}

func (e *incompleteListError) Error() string {
	return "listing " + e.name + " (streaming): incomplete, so listed again: " + e.err.Error()
}

func (e *incompleteListError) Is(target error) bool {
	return target != ErrSkipped && errors.Is(e.err, target)
}

func (e *incompleteListError) As(target any) bool { return errors.As(e.err, target) }

// statusOf finds the Status a server answered with in err: from an
// apimachinery StatusError (or anything with a Status method, as a
// ListerWatcher of your own may return) or from the HTTP client's APIError.
func statusOf(err error) (metav1.Status, bool) {
	var api *rest.APIError
	if errors.As(err, &api) {
		return api.ErrStatus, true
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return st.Status(), true
	}
	return metav1.Status{}, false
}

// isExpired reports a 410: the resourceVersion or continue token asked for
// is older than the server keeps.
func isExpired(err error) bool {
	s, ok := statusOf(err)
	return ok && (s.Code == http.StatusGone || s.Reason == metav1.StatusReasonExpired || s.Reason == metav1.StatusReasonGone)
}

// isForbidden reports a 403: the caller may not do what it asked, as a
// watch is for a role that grants list only.
func isForbidden(err error) bool {
	s, ok := statusOf(err)
	return ok && (s.Code == http.StatusForbidden || s.Reason == metav1.StatusReasonForbidden)
}

// isMethodNotAllowed reports a 405: the resource does not serve the verb
// asked for, as a resource that can be listed but not watched (an
// aggregated API's, such as metrics.k8s.io's) answers every watch.
func isMethodNotAllowed(err error) bool {
	s, ok := statusOf(err)
	return ok && (s.Code == http.StatusMethodNotAllowed || s.Reason == metav1.StatusReasonMethodNotAllowed)
}

// isNotFound reports a 404: the resource (or its namespace's collection)
// is not served.
func isNotFound(err error) bool {
	s, ok := statusOf(err)
	return ok && (s.Code == http.StatusNotFound || s.Reason == metav1.StatusReasonNotFound)
}

// isTooLargeResourceVersion reports the server saying it has not reached the
// resourceVersion asked for yet, in any of the shapes it has used for that
// answer: rest.IsTooLargeResourceVersion's reading, applied to a Status
// from any ListerWatcher.
func isTooLargeResourceVersion(err error) bool {
	s, ok := statusOf(err)
	return ok && rest.IsTooLargeResourceVersion(&rest.APIError{ErrStatus: s})
}

// refusesResourceVersion reports a server that calls the resourceVersion
// a request named invalid: kube-apiserver answers one that is not a
// decimal number with a 400 (LIST) or a 500 (WATCH, streaming lists
// included) whose message is, or ends with, the field error
// `resourceVersion: Invalid value: "abc"` (not `metadata.resourceVersion`,
// an object's). The Store holds such a resourceVersion only if a broken
// server or proxy sent it (in a list, a bookmark, or the last event before
// a watch ended): no watch from it and no list at least as new as it will
// ever be served.
func refusesResourceVersion(err error) bool {
	s, ok := statusOf(err)
	if !ok {
		return false
	}
	switch s.Code {
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusInternalServerError:
		return strings.HasPrefix(s.Message, invalidRVMessage) || strings.Contains(s.Message, ": "+invalidRVMessage)
	}
	return false
}

const invalidRVMessage = "resourceVersion: Invalid value"

// refusesStreaming reports an answer to a streaming-list watch that says
// the server does not serve them (as opposed to a transient failure).
func refusesStreaming(err error) bool {
	s, ok := statusOf(err)
	if !ok {
		return false
	}
	switch s.Code {
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusNotAcceptable,
		http.StatusNotImplemented, http.StatusMethodNotAllowed:
		return true
	}
	return false
}

// answeredBadly reports a watch failure that the server would likely repeat
// if the watch resumed from the same resourceVersion: an answer it gave (a
// Status other than 429 Too Many Requests, from the request or an ERROR
// event) or an event that could not be decoded. A cut or stalled stream, a
// refused connection, are not: resuming is what they need.
func answeredBadly(err error) bool {
	if s, ok := statusOf(err); ok {
		return s.Code != http.StatusTooManyRequests
	}
	for _, bad := range []error{wire.ErrMalformed, wire.ErrUnknownEventType, wire.ErrMissingObject, wire.ErrFrameTooLarge} {
		if errors.Is(err, bad) {
			return true
		}
	}
	return false
}

// outOfReach reports an error that says the server was not reached or did
// not answer: no Status from it (a connection refused, reset or timed out,
// a TLS handshake that failed, no answer at all), or a 502 or 503 from a
// proxy in front of it with no server behind. Such a server may come back
// restarted, or restored from a backup (Reflector.probe).
func outOfReach(err error) bool {
	if s, ok := statusOf(err); ok {
		return s.Code == http.StatusBadGateway || s.Code == http.StatusServiceUnavailable
	}
	return !answeredBadly(err) && !errors.Is(err, errNoWatcher) && !errors.Is(err, context.Canceled)
}

// goingAway reports a watch stream ended by the server going away (an
// HTTP/2 GOAWAY as kube-apiserver shuts down): it may come back restarted,
// or restored from a backup, before the Reflector's next attempt finds it
// out of reach.
func goingAway(err error) bool { return rest.IsGoAway(err) }

// retryablePage reports a failed LIST page worth asking for again with the
// same continue token: the server busy or failing for now (429, 500, 502,
// 503 or 504) or the connection lost on the way. Not a
// page that ran out of its time (WithListTimeout): that one is as slow the
// next time, and the list starts over after the backoff.
func retryablePage(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if s, ok := statusOf(err); ok {
		switch s.Code {
		case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
			http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		return false
	}
	return rest.IsRetryable(err)
}

// retryAfter returns how long the server asked us to wait, or 0.
func retryAfter(err error) time.Duration {
	var api *rest.APIError
	if errors.As(err, &api) && api.RetryAfter > 0 {
		return api.RetryAfter
	}
	if s, ok := statusOf(err); ok && s.Details != nil && s.Details.RetryAfterSeconds > 0 {
		return time.Duration(s.Details.RetryAfterSeconds) * time.Second
	}
	return 0
}
