// Package responsediff checks how listwatch reads the apiserver's error
// answers against how client-go reads them.
//
// TestErrorResponsesMatchClientGo serves scripted responses from a local
// HTTP server (127.0.0.1) to a LIST and a WATCH, of pods in v1 and of
// deployments in apps/v1: written cases (every status code that matters
// from 400 to 504 and a few odd ones, 2xx answers to a list; Status bodies
// in JSON, protobuf and YAML, with and without a code, a reason, causes,
// retryAfterSeconds, of another kind or status; plain text, HTML, empty
// bodies and invalid UTF-8; Retry-After in seconds, as an HTTP date,
// negative, garbage); watch streams answered 200, in JSON and in
// protobuf, whose ordinary events (ADDED, BOOKMARK) end in an ERROR event
// whose object is a Status of every shape that matters (410 Expired and
// Gone, too large in its three forms, 500, 429 with retryAfterSeconds,
// 403; without a code, a reason, a kind or an apiVersion, of another
// status) or another object, or in a malformed event (no object, a null
// one, an unknown type, cut short); then random ones from seeded
// randomness (a failure names its case or seed and prints the response).
//
// Each response is read by listwatch's HTTPListerWatcher (List or Watch,
// through rest.Client and rest.CheckResponse, as the Reflector reads it)
// and by a client-go RESTClient (Do(...).Into a typed list, or Watch, as
// its reflector's ListWatch does, without the client's own retries). A
// watch that opens is read to its end or its ERROR event, as each
// reflector reads it: listwatch's ERROR event becomes rest.FromStatus of
// its Status, and Next failing is an error too; client-go's becomes
// apierrors.FromObject of its object (its watch sends one of its own for
// an event it cannot decode); a clean end is no error. The libraries must
// agree on the events before; on whether it is an error; on the error's
// code and
// reason; on what apimachinery's helpers say of it (IsNotFound, IsGone,
// IsResourceExpired, IsTimeout, IsTooManyRequests, IsUnexpectedServerError
// and the others; HasStatusCause ResourceVersionTooLarge;
// SuggestsClientDelay); and on their own decisions: relist (client-go's
// isExpiredError against rest.IsGone), wait for the server's cache
// (isTooLargeResourceVersionError against rest.IsTooLargeResourceVersion),
// how long to wait (client-go's checkWait against rest.RetryAfter; after an
// ERROR event client-go's reflector waits on its own backoff, so 0), and
// retrying a 429 (IsTooManyRequests against rest.IsRetryable). A message
// the server wrote in a Status must reach listwatch's error text, and
// listwatch's Status always has a code (rest.APIError), where client-go's
// may be 0.
// client-go's unexported decisions are copied in clientgo_test.go.
//
// The differences expected are named in differences_test.go, each with
// where listwatch documents it: readings (listwatch reads a response in a
// way of its own; client-go runs again on the response rewritten to that
// reading, and everything is compared), differences in single fields, and
// one client-go bug. Any other difference fails, and so does an entry that
// no case shows.
//
// It needs no kube-apiserver:
//
//	go test -race ./responsediff/
//
// LISTWATCH_RESPDIFF_SEEDS=N runs N random responses instead of 1,500:
// every fourth a watch stream, the others answers to a LIST or a WATCH.
package responsediff
