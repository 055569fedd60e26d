package rest

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Status bodies as kube-apiserver sends them.
const (
	status403 = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods is forbidden: User \"system:serviceaccount:default:default\" cannot list resource \"pods\" in API group \"\" at the cluster scope","reason":"Forbidden","details":{"kind":"pods"},"code":403}`
	status401 = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`
	status410 = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5012)","reason":"Expired","code":410}`
	// Kubernetes 1.17 and earlier said Gone instead of Expired.
	status410Gone = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5012)","reason":"Gone","code":410}`
	// Since 1.18.6: a cause of type ResourceVersionTooLarge.
	status504TooLarge = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: Too large resource version: 9999, current: 5012","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":1},"code":504}`
	// 1.17.0 to 1.18.5: a cause with the message only.
	status504TooLarge117 = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: Too large resource version: 9999, current: 5012","reason":"Timeout","details":{"causes":[{"message":"Too large resource version"}],"retryAfterSeconds":1},"code":504}`
	// Before 1.17: the message only.
	status504TooLarge116 = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: Too large resource version: 9999, current: 5012","reason":"Timeout","details":{"retryAfterSeconds":1},"code":504}`
	status504Plain       = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: request did not complete within requested timeout - context deadline exceeded","reason":"Timeout","details":{},"code":504}`
	status429            = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Too many requests, please try again later.","reason":"TooManyRequests","details":{"retryAfterSeconds":1},"code":429}`
)

// fakeResponse is what the apiserver would send for a GET of the pods list.
func fakeResponse(code int, contentType, body string, header http.Header) *http.Response {
	u, _ := url.Parse("https://apiserver.example:6443/api/v1/pods?limit=500")
	h := http.Header{}
	for k, v := range header {
		h[k] = v
	}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	return &http.Response{
		StatusCode: code,
		Status:     fmt.Sprintf("%d %s", code, http.StatusText(code)),
		Header:     h,
		Body:       io.NopCloser(strings.NewReader(body)),
		Request:    &http.Request{Method: http.MethodGet, URL: u},
	}
}

func checkStatusBody(t *testing.T, code int, body string, header http.Header) *APIError {
	t.Helper()
	err := CheckResponse(fakeResponse(code, "application/json", body, header))
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("CheckResponse(%d) = %v, want *APIError", code, err)
	}
	return apiErr
}

func TestAPIErrorFromRealStatusBodies(t *testing.T) {
	tests := []struct {
		name       string
		code       int
		body       string
		header     http.Header
		wantErr    string
		gone       bool
		tooLarge   bool
		retryable  bool
		forbidden  bool
		retryAfter time.Duration
	}{
		{name: "403 forbidden", code: 403, body: status403,
			wantErr:   `403 Forbidden: pods is forbidden: User "system:serviceaccount:default:default" cannot list resource "pods" in API group "" at the cluster scope`,
			forbidden: true},
		{name: "401 unauthorized", code: 401, body: status401, wantErr: "401 Unauthorized: Unauthorized"},
		{name: "410 expired", code: 410, body: status410, wantErr: "410 Expired: too old resource version: 1 (5012)", gone: true},
		{name: "410 gone (old servers)", code: 410, body: status410Gone, wantErr: "410 Gone: too old resource version: 1 (5012)", gone: true},
		{name: "504 too large RV", code: 504, body: status504TooLarge,
			wantErr: "504 Timeout: Timeout: Too large resource version: 9999, current: 5012", tooLarge: true, retryable: true, retryAfter: time.Second},
		{name: "504 too large RV, 1.17 form", code: 504, body: status504TooLarge117, tooLarge: true, retryable: true, retryAfter: time.Second},
		{name: "504 too large RV, 1.16 form", code: 504, body: status504TooLarge116, tooLarge: true, retryable: true, retryAfter: time.Second},
		{name: "504 plain timeout", code: 504, body: status504Plain, retryable: true},
		{name: "429 with Retry-After header", code: 429, body: status429, header: http.Header{"Retry-After": {"3"}},
			wantErr: "429 TooManyRequests: Too many requests, please try again later.", retryable: true, retryAfter: 3 * time.Second},
		{name: "429 without header", code: 429, body: status429, retryable: true, retryAfter: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apiErr := checkStatusBody(t, tt.code, tt.body, tt.header)
			// Callers wrap it; the helpers must see through the wrapping.
			err := fmt.Errorf("listing pods: %w", apiErr)
			if tt.wantErr != "" && apiErr.Error() != tt.wantErr {
				t.Errorf("Error() = %q\nwant      %q", apiErr.Error(), tt.wantErr)
			}
			if int(apiErr.ErrStatus.Code) != tt.code {
				t.Errorf("Status.Code = %d, want %d", apiErr.ErrStatus.Code, tt.code)
			}
			if apiErr.Method != "GET" || apiErr.URL != "https://apiserver.example:6443/api/v1/pods?limit=500" {
				t.Errorf("Method, URL = %q, %q", apiErr.Method, apiErr.URL)
			}
			checks := []struct {
				name      string
				got, want bool
			}{
				{"IsGone", IsGone(err), tt.gone},
				{"IsTooLargeResourceVersion", IsTooLargeResourceVersion(err), tt.tooLarge},
				{"IsRetryable", IsRetryable(err), tt.retryable},
				{"IsForbidden", IsForbidden(err), tt.forbidden},
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
				}
			}
			if got := RetryAfter(err); got != tt.retryAfter {
				t.Errorf("RetryAfter = %v, want %v", got, tt.retryAfter)
			}
		})
	}
}

func TestCheckResponseAcceptsSuccess(t *testing.T) {
	for _, code := range []int{200, 201, 204} {
		if err := CheckResponse(fakeResponse(code, "application/json", `{}`, nil)); err != nil {
			t.Errorf("CheckResponse(%d) = %v, want nil", code, err)
		}
	}
}

func TestCheckResponseWithoutStatusBody(t *testing.T) {
	tests := []struct {
		name, contentType, body string
		code                    int
		wantReason              metav1.StatusReason
		wantMessage             string
	}{
		{"proxy html", "text/html", "<html><body>502 Bad Gateway</body></html>", 502, metav1.StatusReasonInternalError,
			"<html><body>502 Bad Gateway</body></html>"},
		{"plain text", "text/plain", "service unavailable\n", 503, metav1.StatusReasonServiceUnavailable, "service unavailable"},
		{"empty", "", "", 404, metav1.StatusReasonNotFound, "the server responded with 404 Not Found and no Status object"},
		{"json but not a Status", "application/json", `{"kind":"PodList","items":[]}`, 500, metav1.StatusReasonInternalError,
			`{"kind":"PodList","items":[]}`},
		{"garbage protobuf", "application/vnd.kubernetes.protobuf", "k8s\x00\xff\xff", 500, metav1.StatusReasonInternalError, ""},
		{"protobuf envelope cut short", "application/vnd.kubernetes.protobuf", "k8s\x00\x12\x05", 500, metav1.StatusReasonInternalError, ""},
		// An envelope that says Status around bytes that are not one.
		{"protobuf Status cut short", "application/vnd.kubernetes.protobuf", "k8s\x00\x0a\x08\x12\x06Status\x12\x02\x2a\x10", 500,
			metav1.StatusReasonInternalError, ""},
		{"not utf-8", "application/octet-stream", "\xff\xfe\xfd", 400, metav1.StatusReasonBadRequest,
			"the server responded with 400 Bad Request and no Status object"},
		{"long and not utf-8", "application/octet-stream", "\x1f\x8b" + strings.Repeat("a", 600), 502, metav1.StatusReasonInternalError,
			"the server responded with 502 Bad Gateway and no Status object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckResponse(fakeResponse(tt.code, tt.contentType, tt.body, nil))
			var apiErr *APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("CheckResponse = %v, want *APIError", err)
			}
			if int(apiErr.ErrStatus.Code) != tt.code || apiErr.ErrStatus.Reason != tt.wantReason {
				t.Errorf("code, reason = %d, %q; want %d, %q", apiErr.ErrStatus.Code, apiErr.ErrStatus.Reason, tt.code, tt.wantReason)
			}
			if tt.wantMessage != "" && apiErr.ErrStatus.Message != tt.wantMessage {
				t.Errorf("message = %q, want %q", apiErr.ErrStatus.Message, tt.wantMessage)
			}
		})
	}
}

func TestCheckResponseTruncatesLongBodies(t *testing.T) {
	body := strings.Repeat("é", 2*maxStatusBody) // larger than what is read
	err := CheckResponse(fakeResponse(502, "text/plain", body, nil))
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("CheckResponse = %v, want *APIError", err)
	}
	if n := len(apiErr.ErrStatus.Message); n > maxSynthesizedMessage+3 {
		t.Errorf("message is %d bytes, want at most %d", n, maxSynthesizedMessage+3)
	}
	if !strings.HasSuffix(apiErr.ErrStatus.Message, "...") {
		t.Errorf("message %q does not say it was cut", apiErr.ErrStatus.Message[:20])
	}
}

func TestCheckResponseDecodesProtobufStatus(t *testing.T) {
	status := metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    410,
		Reason:  metav1.StatusReasonExpired,
		Message: "too old resource version: 1 (5012)",
	}
	body := protobufStatus(t, &status)
	err := CheckResponse(fakeResponse(410, "application/vnd.kubernetes.protobuf", string(body), nil))
	if !IsGone(err) {
		t.Fatalf("CheckResponse = %v, want a 410 Expired", err)
	}
	if got := err.Error(); got != "410 Expired: too old resource version: 1 (5012)" {
		t.Errorf("Error() = %q", got)
	}
}

func TestCheckResponseRetryAfterDate(t *testing.T) {
	when := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	apiErr := checkStatusBody(t, 503, `not a status`, http.Header{"Retry-After": {when}})
	if apiErr.RetryAfter < 58*time.Minute || apiErr.RetryAfter > time.Hour {
		t.Errorf("RetryAfter = %v, want about an hour", apiErr.RetryAfter)
	}
}

// A 429 sent as plain text with a Retry-After header, as API Priority and
// Fairness sends it: the made-up Status carries the delay, as client-go's
// does, so that apimachinery's errors.SuggestsClientDelay finds it.
func TestCheckResponseRetryAfterInMadeUpStatus(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   int
		ok     bool
	}{
		{"7", 7, true},
		{"0", 0, false},
		{"", 0, false},
		{"99999999999", math.MaxInt32, true},
	} {
		h := http.Header{}
		if tc.header != "" {
			h.Set("Retry-After", tc.header)
		}
		err := CheckResponse(fakeResponse(429, "text/plain", "Too many requests, please try again later.", h))
		secs, ok := apierrors.SuggestsClientDelay(err)
		if secs != tc.want || ok != tc.ok {
			t.Errorf("Retry-After %q: SuggestsClientDelay = %d, %v; want %d, %v", tc.header, secs, ok, tc.want, tc.ok)
		}
		if !apierrors.IsTooManyRequests(err) {
			t.Errorf("Retry-After %q: not a 429: %v", tc.header, err)
		}
	}
}

func TestFromStatus(t *testing.T) {
	// An ERROR event of a watch: the Status has a code.
	err := error(FromStatus(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired,
		Message: "too old resource version: 1 (5012)"}))
	if !IsGone(err) || IsRetryable(err) {
		t.Errorf("410 Expired: IsGone=%v IsRetryable=%v", IsGone(err), IsRetryable(err))
	}
	// A Status without a code gets the one its reason implies.
	e := FromStatus(&metav1.Status{Reason: metav1.StatusReasonTimeout, Message: "Too large resource version: 10, current: 5",
		Details: &metav1.StatusDetails{RetryAfterSeconds: 2}})
	if e.ErrStatus.Code != 504 || !IsTooLargeResourceVersion(e) || e.RetryAfter != 2*time.Second {
		t.Errorf("got code %d, too large %v, retry after %v", e.ErrStatus.Code, IsTooLargeResourceVersion(e), e.RetryAfter)
	}
	if e := FromStatus(nil); e.ErrStatus.Code != 500 || !e.Retryable() {
		t.Errorf("FromStatus(nil) = %v", e)
	}
	if e := FromStatus(&metav1.Status{Reason: "SomethingNew"}); e.ErrStatus.Code != 500 || e.Error() != "500 SomethingNew" {
		t.Errorf("unknown reason: %v", e)
	}
	if e := FromStatus(&metav1.Status{Message: "neither"}); e.ErrStatus.Code != 500 || e.Error() != "500 Internal Server Error: neither" {
		t.Errorf("no code and no reason: %v", e)
	}
	// An ERROR event carrying another object (decoded into a Status, it
	// keeps only its kind): the message says so.
	pod := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}}
	if e := FromStatus(pod); e.ErrStatus.Code != 500 || !strings.Contains(e.Error(), "ERROR event whose object is a Pod, not a Status") {
		t.Errorf("an ERROR event's Pod: %v", e)
	}
}

func TestIsRetryableConnectionErrors(t *testing.T) {
	opErr := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	urlErr := func(err error) error { return &url.Error{Op: "Get", URL: "https://x", Err: err} }
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"refused", urlErr(opErr), true},
		{"reset", urlErr(syscall.ECONNRESET), true},
		{"unexpected EOF", fmt.Errorf("reading watch frame: %w", io.ErrUnexpectedEOF), true},
		{"EOF before response", urlErr(io.EOF), true},
		{"http2 lost", errors.New("http2: client connection lost"), true},
		{"http2 goaway", errors.New("http2: server sent GOAWAY and closed the connection; LastStreamID=1"), true},
		{"deadline", urlErr(context.DeadlineExceeded), true},
		{"canceled", urlErr(context.Canceled), false},
		{"unknown CA", urlErr(x509.UnknownAuthorityError{}), false},
		{"body too large", fmt.Errorf("x: %w", ErrBodyTooLarge), false},
		{"exec plugin failed", urlErr(errors.New(`exec plugin "aws": exit status 1`)), false},
		{"404", &APIError{ErrStatus: metav1.Status{Code: 404}}, false},
		{"500", &APIError{ErrStatus: metav1.Status{Code: 500}}, true},
		{"502", &APIError{ErrStatus: metav1.Status{Code: 502}}, true},
		{"503", &APIError{ErrStatus: metav1.Status{Code: 503}}, true},
	}
	for _, tt := range tests {
		if got := IsRetryable(tt.err); got != tt.want {
			t.Errorf("%s: IsRetryable(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

func TestHelpersOnOtherErrors(t *testing.T) {
	err := errors.New("boom")
	if IsGone(err) || IsTooLargeResourceVersion(err) || IsForbidden(err) || RetryAfter(err) != 0 {
		t.Error("a plain error matched an API error helper")
	}
	if IsGone(nil) || IsTooLargeResourceVersion(nil) || RetryAfter(nil) != 0 {
		t.Error("nil matched an API error helper")
	}
	var nilAPIErr *APIError
	if IsGone(nilAPIErr) {
		t.Error("a nil *APIError matched IsGone")
	}
}

// An ERROR event's Status with reason Expired and no code is a 410: gone,
// not retryable (the informer must relist), whatever else looks at it.
func TestExpiredWithoutCodeIsGone(t *testing.T) {
	e := FromStatus(&metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonExpired, Message: "too old resource version: 1 (2)"})
	if e.ErrStatus.Code != http.StatusGone || e.Retryable() || IsRetryable(e) || !IsGone(e) || !apierrors.IsResourceExpired(e) {
		t.Fatalf("code %d, Retryable %v, IsRetryable %v, IsGone %v", e.ErrStatus.Code, e.Retryable(), IsRetryable(e), IsGone(e))
	}
	// An APIError made by hand, without a code: the reason alone says it.
	for _, r := range []metav1.StatusReason{metav1.StatusReasonExpired, metav1.StatusReasonGone} {
		if !IsGone(&APIError{ErrStatus: metav1.Status{Reason: r}}) {
			t.Errorf("IsGone(reason %s, no code) = false", r)
		}
	}
}

// The classifiers look at each of the signs client-go looks at: a 410
// whatever its reason; a ResourceVersionTooLarge cause whatever the
// reason and message around it.
func TestClassifiersEachSign(t *testing.T) {
	if !IsGone(&APIError{ErrStatus: metav1.Status{Code: http.StatusGone}}) {
		t.Error("IsGone(410 without a reason) = false")
	}
	tooLarge := &APIError{ErrStatus: metav1.Status{Code: 500, Details: &metav1.StatusDetails{
		Causes: []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge}}}}}
	if !IsTooLargeResourceVersion(tooLarge) {
		t.Error("IsTooLargeResourceVersion(a ResourceVersionTooLarge cause alone) = false")
	}
}

// A Status made up from a 504 whose body merely contains "Too large
// resource version" (a proxy's page) does not say it, as in client-go,
// whose made-up Status has a message of its own; a body that is that
// text and nothing else does, as its cause's message.
func TestTooLargeResourceVersionMadeUp(t *testing.T) {
	page := CheckResponse(fakeResponse(504, "text/html", "<h1>Gateway Timeout</h1> Too large resource version", nil))
	if IsTooLargeResourceVersion(page) {
		t.Errorf("IsTooLargeResourceVersion = true for a made-up Status: %v", page)
	}
	exact := CheckResponse(fakeResponse(504, "text/plain", "Too large resource version\n", nil))
	if !IsTooLargeResourceVersion(exact) {
		t.Errorf("IsTooLargeResourceVersion = false for a 504 whose body is the message: %v", exact)
	}
}
