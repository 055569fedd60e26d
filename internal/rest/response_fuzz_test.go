package rest

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// FuzzCheckResponse feeds arbitrary error responses (status code, content
// type, Retry-After header, body) to CheckResponse, which decodes the
// apiserver's Status objects from JSON and protobuf: it must never panic,
// always return an *APIError with a code, a printable message of bounded
// size, and a Retry-After that is not negative.
func FuzzCheckResponse(f *testing.F) {
	status := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired,
		Message: "too old resource version: 1 (2)",
		Details: &metav1.StatusDetails{RetryAfterSeconds: 3, Causes: []metav1.StatusCause{{Type: "ResourceVersionTooLarge", Message: "Too large resource version"}}},
	}
	raw, err := status.Marshal()
	if err != nil {
		f.Fatal(err)
	}
	unknown := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "Status"}, Raw: raw}
	envelope, err := unknown.Marshal()
	if err != nil {
		f.Fatal(err)
	}
	pb := append([]byte("k8s\x00"), envelope...)
	f.Add(410, "application/json", "", []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old","reason":"Expired","code":410}`))
	f.Add(410, "application/vnd.kubernetes.protobuf", "", pb)
	f.Add(504, "application/vnd.kubernetes.protobuf", "", pb[:len(pb)/2])
	f.Add(429, "application/json", "7", []byte(`{"kind":"Status","details":{"retryAfterSeconds":-5}}`))
	f.Add(429, "text/plain", "Wed, 21 Oct 2015 07:28:00 GMT", []byte("slow down"))
	f.Add(502, "text/html", "", []byte("<html><body>Bad Gateway</body></html>"))
	f.Add(500, "", "", []byte("k8s\x00\xff\xff"))
	f.Add(500, "application/vnd.kubernetes.protobuf", "", []byte("k8s\x00"))
	f.Add(410, "application/json", "", []byte(`{"kind":"Status","code":"410"}`))
	f.Add(401, "application/json;charset=utf-8", "-1", []byte{0xff, 0xfe, 'x'})

	f.Fuzz(func(t *testing.T, code int, contentType, retryAfter string, body []byte) {
		if code < 100 || code > 999 {
			code = 500 + code%100
			if code < 500 {
				code += 100
			}
		}
		resp := &http.Response{
			StatusCode: code,
			Header:     http.Header{"Content-Type": {contentType}, "Retry-After": {retryAfter}},
			Body:       io.NopCloser(bytes.NewReader(body)),
			Request:    &http.Request{Method: http.MethodGet},
		}
		err := CheckResponse(resp)
		if code >= 200 && code < 300 {
			if err != nil {
				t.Fatalf("%d: %v", code, err)
			}
			return
		}
		api, ok := err.(*APIError)
		if !ok {
			t.Fatalf("CheckResponse returned %T, want *APIError", err)
		}
		if api.ErrStatus.Code == 0 {
			t.Fatal("no code")
		}
		if api.RetryAfter < 0 {
			t.Fatalf("RetryAfter %v", api.RetryAfter)
		}
		msg := api.Error()
		if !looksStatus(body) && (len(msg) > maxSynthesizedMessage+64 || !utf8.ValidString(msg)) {
			t.Fatalf("message of %d bytes for a body that is not a Status: %q", len(msg), msg)
		}
		_ = api.Retryable()
	})
}

// looksStatus reports bodies that may decode as a Status, whose message is
// the server's own.
func looksStatus(body []byte) bool {
	return bytes.HasPrefix(body, []byte("k8s\x00")) || strings.Contains(string(body), "Status")
}
