// Package apistatus builds the Status errors kube-apiserver answers with
// where their exact shape matters to a client (the reflector reads their
// causes, retry-after and continue token): the two fakes of the server,
// internal/apisim and internal/fakelw, give the same ones.
package apistatus

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TooLargeResourceVersion is the answer to a read at a resourceVersion the
// server has not reached (after waiting up to 3 seconds for it): 504
// Timeout, "Too large resource version: requested, current: current",
// retry after 1 second, cause ResourceVersionTooLarge.
func TooLargeResourceVersion(requested, current uint64) *apierrors.StatusError {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", requested, current), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type:    metav1.CauseTypeResourceVersionTooLarge,
		Message: "Too large resource version",
	}}
	return err
}

// ContinueExpired is the 410 Expired for a continue token whose state was
// compacted away. It carries, in the Status's metadata.continue, the token
// next: one that goes on with the list from a newer state (an inconsistent
// list).
func ContinueExpired(next string) *apierrors.StatusError {
	err := apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue token in this response to " +
		"retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - " +
		"objects that were created, modified, or deleted between the time the first chunk was returned and now may " +
		"show up in the list.")
	err.ErrStatus.ListMeta.Continue = next
	return err
}

// InvalidResourceVersion is the answer to a resourceVersion that is not a
// decimal number (parseErr: strconv.ParseUint's error): to a list, 400
// BadRequest "invalid resource version: " and the field error; to a watch
// or a streaming list (forWatch), 500 with the field error alone and no
// reason, as kube-apiserver v1.37 answers.
func InvalidResourceVersion(rv string, parseErr error, forWatch bool) *apierrors.StatusError {
	msg := field.ErrorList{field.Invalid(field.NewPath("resourceVersion"), rv, parseErr.Error())}.ToAggregate().Error()
	if forWatch {
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: msg,
		}}
	}
	return apierrors.NewBadRequest("invalid resource version: " + msg)
}
