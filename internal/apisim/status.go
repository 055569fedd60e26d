package apisim

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/apistatus"
	"github.com/listwatch/listwatch/internal/kubeproto"
)

// Status errors are built with k8s.io/apimachinery/pkg/api/errors, so their
// shape, reasons and messages are those of kube-apiserver; this file adds
// the few that the real server builds by hand, and writes them.

// toStatus returns the Status kube-apiserver would send for err.
func toStatus(err error) *metav1.Status {
	var st apierrors.APIStatus
	var status metav1.Status
	if errors.As(err, &st) {
		status = st.Status()
	} else {
		// What kube-apiserver sends for an error that is not a Status.
		status = metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
			Reason: metav1.StatusReasonUnknown, Message: err.Error()}
	}
	if status.Status == "" {
		status.Status = metav1.StatusFailure
	}
	if status.Code == 0 {
		status.Code = http.StatusInternalServerError
	}
	status.Kind, status.APIVersion = "Status", "v1"
	return &status
}

// writeStatus writes err as a Status response, with Retry-After when the
// status asks for a delay, as kube-apiserver's error writer does.
func writeStatus(w http.ResponseWriter, r *http.Request, err error, f format) {
	status := toStatus(err)
	if d := status.Details; d != nil && d.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(d.RetryAfterSeconds)))
	}
	body, ctype := encodeStatus(status, f)
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(int(status.Code))
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// encodeStatus returns a Status as a response body and its content type.
func encodeStatus(status *metav1.Status, f format) ([]byte, string) {
	if f.proto {
		raw, _ := status.Marshal() // plain struct: cannot fail
		return kubeproto.Envelope("v1", "Status", raw), mediaProtobuf
	}
	body, _ := json.Marshal(status) // plain struct: cannot fail
	return append(body, '\n'), mediaJSON
}

// notFound is a NotFound error for one object of c.
func notFound(c *collection, name string) error {
	return apierrors.NewNotFound(c.res.GroupResource(), name)
}

// errNoSuchPath is kube-apiserver's answer to a path it does not serve.
func errNoSuchPath() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
		Message: "the server could not find the requested resource", Details: &metav1.StatusDetails{},
	}}
}

// errMethodNotAllowed answers a verb the simulator does not serve.
func errMethodNotAllowed(c *collection, verb string) error {
	return apierrors.NewMethodNotSupported(c.res.GroupResource(), verb)
}

// errTooLargeRV is the answer to a read of a resourceVersion the server has
// not reached after waiting: 504 Timeout with cause ResourceVersionTooLarge.
func errTooLargeRV(requested, current uint64) error {
	return apistatus.TooLargeResourceVersion(requested, current)
}

// errServerClosing answers requests that arrive while the server closes.
func errServerClosing() error {
	return apierrors.NewServiceUnavailable("apisim: the server is shutting down")
}

// errUnauthorized is kube-apiserver's answer to a missing or bad token.
func errUnauthorized() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnauthorized,
		Reason: metav1.StatusReasonUnauthorized, Message: "Unauthorized",
	}}
}
