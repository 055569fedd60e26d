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
