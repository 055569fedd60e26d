package reflector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Which failed pages are asked for again: the server busy or failing for
// now, or the connection lost; not a page that ran out of time, nor an
// answer the server would give again.
func TestRetryablePage(t *testing.T) {
	for err, want := range map[error]bool{
		apierrors.NewTooManyRequests("slow down", 1):                            true,
		apierrors.NewServiceUnavailable("down"):                                 true,
		apierrors.NewInternalError(errors.New("boom")):                          true,
		fmt.Errorf("reading the list: %w", io.ErrUnexpectedEOF):                 true,
		fmt.Errorf("listing: %w", context.DeadlineExceeded):                     false,
		apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil): false,
		apierrors.NewBadRequest("no"):                                           false,
		context.Canceled:                                                        false,
	} {
		assert.Equal(t, want, retryablePage(err), "%v", err)
	}
}

// Which refusals say the resourceVersion named is invalid: kube-apiserver's
// answers to a LIST (400) and a WATCH (500) from "abc", as the e2e suite
// recorded them; not other 400s, 422s or 500s, nor "too large".
func TestRefusesResourceVersion(t *testing.T) {
	const field = `resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`
	internal := apierrors.NewInternalError(errors.New(field))
	internal.ErrStatus.Message, internal.ErrStatus.Reason = field, "" // as kube-apiserver sends it
	for err, want := range map[error]bool{
		apierrors.NewBadRequest("invalid resource version: " + field): true,
		internal: true,
		apierrors.NewInternalError(errors.New("etcdserver: leader changed")):                       false,
		apierrors.NewBadRequest("fieldSelector metadata.name doesn't match"):                       false,
		apierrors.NewBadRequest(`admission webhook: metadata.resourceVersion: Invalid value: "x"`): false,
		apierrors.NewTimeoutError("Too large resource version: 20, current: 10", 1):                false,
		errors.New(field): false,
	} {
		assert.Equal(t, want, refusesResourceVersion(err), "%v", err)
	}
}

// The shapes "too large resource version" has come in, and a look-alike:
// a plain-text 500 whose body says it, which the HTTP client makes up a
// Status for with the body as its cause's message. The message counts
// only on a Timeout, as in client-go.
func TestIsTooLargeResourceVersion(t *testing.T) {
	withCause := func(reason metav1.StatusReason, cause metav1.StatusCause) error {
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Reason: reason,
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{cause}}}}
	}
	for name, tt := range map[string]struct {
		err  error
		want bool
	}{
		"cause type":                       {withCause(metav1.StatusReasonTimeout, metav1.StatusCause{Type: metav1.CauseTypeResourceVersionTooLarge}), true},
		"cause type, other reason":         {withCause(metav1.StatusReasonInternalError, metav1.StatusCause{Type: metav1.CauseTypeResourceVersionTooLarge}), true},
		"cause message (1.17.0 to 1.18.5)": {withCause(metav1.StatusReasonTimeout, metav1.StatusCause{Message: "Too large resource version"}), true},
		"message (before 1.17)":            {apierrors.NewTimeoutError("Too large resource version: 20, current: 10", 1), true},
		"made up from a plain-text 500": {withCause(metav1.StatusReasonInternalError,
			metav1.StatusCause{Type: metav1.CauseTypeUnexpectedServerResponse, Message: "Too large resource version"}), false},
		"made up from a 504 page that says it": {&apierrors.StatusError{ErrStatus: metav1.Status{Reason: metav1.StatusReasonTimeout,
			Message: "<h1>Gateway Timeout</h1> Too large resource version", Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{
				{Type: metav1.CauseTypeUnexpectedServerResponse, Message: "<h1>Gateway Timeout</h1> Too large resource version"}}}}}, false},
		"made up from a 504 whose body is the message": {withCause(metav1.StatusReasonTimeout,
			metav1.StatusCause{Type: metav1.CauseTypeUnexpectedServerResponse, Message: "Too large resource version"}), true},
		"another timeout": {apierrors.NewTimeoutError("request timed out", 1), false},
		"not a Status":    {errors.New("Too large resource version"), false},
	} {
		assert.Equal(t, tt.want, isTooLargeResourceVersion(tt.err), name)
	}
}
