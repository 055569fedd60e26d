package responsediff

import (
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// client-go's decisions that it does not export, copied from client-go
// v0.37.2 as they are, so that the test compares listwatch with what
// client-go does rather than with what its exported helpers say.

// isExpiredError is client-go's reason to relist
// (tools/cache/reflector.go, isExpiredError).
func isExpiredError(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

// isTooLargeResourceVersionError is client-go's reason to wait for the
// server's cache (tools/cache/reflector.go,
// isTooLargeResourceVersionError). It reads the message forms only when
// the Status has Details: see clientGoTooLargeNeedsDetails.
func isTooLargeResourceVersionError(err error) bool {
	if apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		return true
	}
	if !apierrors.IsTimeout(err) {
		return false
	}
	apierr, ok := err.(apierrors.APIStatus)
	if !ok || apierr == nil || apierr.Status().Details == nil {
		return false
	}
	for _, cause := range apierr.Status().Details.Causes {
		if cause.Message == "Too large resource version" {
			return true
		}
	}
	return strings.Contains(apierr.Status().Message, "Too large resource version")
}

// checkWait is how long client-go's REST client waits before it sends a
// request again, and whether it does (rest/with_retry.go, checkWait, with
// rest/request.go, retryAfterSeconds).
func checkWait(resp *http.Response) (int, bool) {
	switch r := resp.StatusCode; {
	case r == http.StatusTooManyRequests, r >= 500:
	default:
		return 0, false
	}
	if h := resp.Header.Get("Retry-After"); len(h) > 0 {
		if i, err := strconv.Atoi(h); err == nil {
			return i, true
		}
	}
	return 0, false
}
