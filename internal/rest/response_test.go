package rest

import (
	"errors"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// protobufStatus encodes status the way the apiserver does for a client
// that accepts application/vnd.kubernetes.protobuf.
func protobufStatus(t *testing.T, status *metav1.Status) []byte {
	t.Helper()
	raw, err := status.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	u := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "Status"}, Raw: raw}
	wrapped, err := u.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte("k8s\x00"), wrapped...)
}

func TestLimitReader(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		limit   int64
		want    string
		tooLong bool
	}{
		{"shorter", "hello", 10, "hello", false},
		{"exact", "hello", 5, "hello", false},
		{"one more", "hello!", 5, "hello", true},
		{"much more", strings.Repeat("x", 100000), 1000, strings.Repeat("x", 1000), true},
		{"zero limit, empty", "", 0, "", false},
		{"zero limit, one byte", "x", 0, "", true},
		{"negative limit", "x", -5, "", true},
		{"no limit to speak of", "hello", math.MaxInt64, "hello", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// OneByteReader makes the limit fall between reads as well.
			for _, r := range []io.Reader{strings.NewReader(tt.body), iotest.OneByteReader(strings.NewReader(tt.body))} {
				got, err := io.ReadAll(LimitReader(r, tt.limit))
				if string(got) != tt.want {
					t.Errorf("read %d bytes, want %d", len(got), len(tt.want))
				}
				if errors.Is(err, ErrBodyTooLarge) != tt.tooLong {
					t.Errorf("err = %v, want too large: %v", err, tt.tooLong)
				}
			}
		})
	}
}

func TestLimitReaderErrorIsSticky(t *testing.T) {
	r := LimitReader(strings.NewReader("abcdef"), 2)
	if _, err := io.ReadAll(r); !errors.Is(err, ErrBodyTooLarge) {
		t.Fatalf("err = %v", err)
	}
	if n, err := r.Read(make([]byte, 10)); n != 0 || !errors.Is(err, ErrBodyTooLarge) {
		t.Errorf("second Read = %d, %v; want 0, ErrBodyTooLarge", n, err)
	}
	if err := iotest.TestReader(LimitReader(strings.NewReader("abcdef"), 6), []byte("abcdef")); err != nil {
		t.Error(err)
	}
}

// A plain-text 429 whose Retry-After is an HTTP date: the made-up Status
// never suggests waiting less than the delay the header asked for (the
// delay, a fraction of a second past whole seconds, is rounded up).
func TestCheckResponseRetryAfterDateRoundsUp(t *testing.T) {
	when := time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)
	err := CheckResponse(fakeResponse(429, "text/plain", "Too many requests", http.Header{"Retry-After": {when}}))
	e, ok := asAPIError(err)
	if !ok || e.RetryAfter <= 0 || e.RetryAfter > 3*time.Second {
		t.Fatalf("RetryAfter = %v, want up to 3s", RetryAfter(err))
	}
	secs, ok := apierrors.SuggestsClientDelay(err)
	if !ok || time.Duration(secs)*time.Second < e.RetryAfter {
		t.Fatalf("SuggestsClientDelay = %d, %v: less than the %v asked for", secs, ok, e.RetryAfter)
	}
}

// The request's URL in an APIError never shows a password in its user
// info, in the URL field nor in the error's text.
func TestCheckResponseRedactsURLPassword(t *testing.T) {
	resp := fakeResponse(403, "text/plain", "forbidden", nil)
	resp.Request.URL = &url.URL{Scheme: "https", User: url.UserPassword("admin", "s3cr3t-pw"), Host: "apiserver.example:6443", Path: "/api/v1/pods"}
	err := CheckResponse(resp)
	e, _ := asAPIError(err)
	if e == nil || strings.Contains(e.URL, "s3cr3t-pw") || strings.Contains(err.Error(), "s3cr3t-pw") {
		t.Fatalf("the password shows: URL %q, error %q", e.URL, err)
	}
	if !strings.Contains(e.URL, "apiserver.example:6443/api/v1/pods") {
		t.Fatalf("URL %q does not name the request", e.URL)
	}
}

// A protobuf body whose envelope names another kind is not a Status,
// even when its bytes would decode as one: the error is made up from the
// HTTP status.
func TestCheckResponseProtobufOtherKind(t *testing.T) {
	raw, err := (&metav1.Status{Status: metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound, Message: "not me"}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	u := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "Event"}, Raw: raw}
	env, err := u.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	body := append([]byte("k8s\x00"), env...)
	e, _ := asAPIError(CheckResponse(fakeResponse(500, "application/vnd.kubernetes.protobuf", string(body), nil)))
	if e == nil || e.ErrStatus.Code != 500 || e.ErrStatus.Reason != metav1.StatusReasonInternalError {
		t.Fatalf("got %+v", e)
	}
}

// A made-up Status carries the cause UnexpectedServerResponse, as
// client-go's does, so apimachinery tells it from a Status the apiserver
// wrote; one the apiserver wrote does not get it.
func TestCheckResponseMadeUpStatusIsUnexpected(t *testing.T) {
	for _, body := range []string{"<html>bad gateway</html>", ""} {
		err := CheckResponse(fakeResponse(502, "text/html", body, http.Header{"Retry-After": {"2"}}))
		if !apierrors.IsUnexpectedServerError(err) {
			t.Errorf("body %q: IsUnexpectedServerError = false for %v", body, err)
		}
		if secs, ok := apierrors.SuggestsClientDelay(err); !ok || secs != 2 {
			t.Errorf("body %q: SuggestsClientDelay = %d, %v; want 2, true", body, secs, ok)
		}
	}
	written := `{"kind":"Status","apiVersion":"v1","status":"Failure","code":502,"reason":"InternalError","message":"etcd is down"}`
	if err := CheckResponse(fakeResponse(502, "application/json", written, nil)); apierrors.IsUnexpectedServerError(err) {
		t.Errorf("IsUnexpectedServerError = true for a Status the apiserver wrote: %v", err)
	}
}

// JSON keys are read as apimachinery's decoder (and client-go) reads
// them: a "Reason" or "Code" is no reason or code, but a "Kind" is the
// kind, which apimachinery finds with encoding/json.
func TestCheckResponseStatusKeysAreCaseSensitive(t *testing.T) {
	body := `{"kind":"Status","apiVersion":"v1","status":"Failure","code":403,"reason":"Forbidden","message":"no","Reason":"Expired","Code":410}`
	e, _ := asAPIError(CheckResponse(fakeResponse(403, "application/json", body, nil)))
	if e == nil || e.ErrStatus.Code != 403 || e.ErrStatus.Reason != metav1.StatusReasonForbidden || IsGone(e) {
		t.Fatalf("got %+v, want the 403 Forbidden the lower-case keys say", e)
	}
	capitals := `{"Kind":"Status","status":"Failure","Code":410,"Reason":"Expired","message":"capitals"}`
	e, _ = asAPIError(CheckResponse(fakeResponse(403, "application/json", capitals, nil)))
	if e == nil || e.ErrStatus.Code != 403 || e.ErrStatus.Reason != "" || e.ErrStatus.Message != "capitals" || apierrors.IsUnexpectedServerError(e) {
		t.Fatalf("got %+v, want the server's Status, with the HTTP code and no reason", e)
	}
}
