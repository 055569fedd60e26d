package reflector

import (
	"errors"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErrSkipped marks an error about one event or item that was skipped while
// the stream it came in goes on: an object of the wrong kind, say. A Watcher
// returns errors wrapping ErrSkipped when it can still deliver the next event.
var ErrSkipped = errors.New("skipped")

// ErrRejected marks an object that cannot be cached — one without a name or
// a resourceVersion. It is skipped and the resourceVersion does not advance.
var ErrRejected = errors.New("object rejected")

var (
	// errWentBackwards: the server sent a resourceVersion older than one
	// already applied. Not retryable as is: the Reflector relists.
	errWentBackwards = errors.New("resourceVersion went backwards")
	// errEmptyWatch: a watch ended at once without any event.
	errEmptyWatch = errors.New("watch ended at once without events")
	// errRelistDue: the periodic relist (WithRelistInterval) is due.
	errRelistDue = errors.New("periodic relist due")
)

// streamingUnsupportedError says the server cannot serve streaming lists;
// the Reflector falls back to LIST then WATCH.
type streamingUnsupportedError struct{ reason string }

func (e *streamingUnsupportedError) Error() string {
	return "streaming list not supported by the server: " + e.reason
}

// isExpired reports a 410: the resourceVersion or continue token asked for
// is older than the server keeps.
func isExpired(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

// isTooLargeResourceVersion reports the server saying it has not reached the
// resourceVersion asked for yet. It has used three shapes for that answer.
func isTooLargeResourceVersion(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	s := st.Status()
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			if c.Type == metav1.CauseTypeResourceVersionTooLarge || c.Message == "Too large resource version" {
				return true
			}
		}
	}
	return s.Reason == metav1.StatusReasonTimeout && containsTooLarge(s.Message)
}

func containsTooLarge(msg string) bool {
	const a, b = "Too large resource version", "too large resource version"
	for i := 0; i+len(a) <= len(msg); i++ {
		if m := msg[i : i+len(a)]; m == a || m == b {
			return true
		}
	}
	return false
}

// refusesStreaming reports an answer to a streaming-list watch that says
// the server does not serve them (as opposed to a transient failure).
func refusesStreaming(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	switch st.Status().Code {
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusNotAcceptable,
		http.StatusNotImplemented, http.StatusMethodNotAllowed:
		return true
	}
	return false
}

// retryAfter returns how long the server asked us to wait, or 0.
func retryAfter(err error) time.Duration {
	if s, ok := apierrors.SuggestsClientDelay(err); ok && s > 0 {
		return time.Duration(s) * time.Second
	}
	var ra interface{ RetryAfter() time.Duration }
	if errors.As(err, &ra) {
		return ra.RetryAfter()
	}
	return 0
}
