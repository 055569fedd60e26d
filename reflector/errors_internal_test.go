package reflector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
