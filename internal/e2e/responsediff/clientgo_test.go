package responsediff

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// client-go's decisions that it does not export, restated here from
// client-go v0.37.2's behaviour (the file each lives in is named), so that
// the test compares listwatch with what client-go does rather than with
// what its exported helpers say.

// isExpiredError is client-go's reason to relist
// (tools/cache/reflector.go, isExpiredError).
func isExpiredError(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

// isTooLargeResourceVersionError is client-go's reason to wait for the
// server's cache (tools/cache/reflector.go,
// isTooLargeResourceVersionError): the cause ResourceVersionTooLarge; or,
// on a Timeout that has Details, a cause whose message is the text or a
// message that contains it. Without Details the message is not read: see
// clientGoTooLargeNeedsDetails.
func isTooLargeResourceVersionError(err error) bool {
	const text = "Too large resource version"
	if apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		return true
	}
	s, ok := err.(apierrors.APIStatus)
	if !ok || s == nil || !apierrors.IsTimeout(err) {
		return false
	}
	st := s.Status()
	if st.Details == nil {
		return false
	}
	return slices.ContainsFunc(st.Details.Causes, func(c metav1.StatusCause) bool { return c.Message == text }) ||
		strings.Contains(st.Message, text)
}

// checkWait is how long client-go's REST client waits before it sends a
// request again, and whether it does (rest/with_retry.go, checkWait, and
// rest/request.go, retryAfterSeconds): only after a 429 or a 5xx, and only
// for a Retry-After header in whole seconds.
func checkWait(resp *http.Response) (int, bool) {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < 500 {
		return 0, false
	}
	secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	return secs, err == nil
}
