package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "sigs.k8s.io/json"
)

// maxStatusBody bounds how much of an error response CheckResponse reads. A
// Status object is a few hundred bytes; anything much larger is not one.
const maxStatusBody = 1 << 20

// maxSynthesizedMessage bounds how much of a body that is not a Status
// object ends up in an APIError's message.
const maxSynthesizedMessage = 512

// protobufMagic starts every protobuf-encoded object the apiserver sends.
var protobufMagic = []byte("k8s\x00")

// CheckResponse returns nil for any 2xx response (client-go's REST client
// refuses those above 206). For any other status it reads (at most 1 MiB
// of) and closes the body and returns an *APIError: the Status object the
// apiserver sent, whatever its status field says (client-go takes only a
// Failure), given the HTTP status as its code if it has none; or one made
// up from the HTTP status and the start of the body when the body is
// something else (a proxy's HTML page, plain text, nothing), whatever its
// Content-Type (client-go keeps a text/* body only). A Status is
// read in protobuf when the Content-Type says so or the body starts with
// k8s\x00, else in JSON, whatever the Content-Type says; a YAML body is
// not read (client-go reads one), as kube-apiserver never answers a list
// or a watch in YAML. RetryAfter comes from the Retry-After header, else
// from the Status details.
func CheckResponse(resp *http.Response) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	var body []byte
	if resp.Body != nil {
		// A body cut short or too long is still worth a look: the status
		// line alone makes a useful error.
		body, _ = io.ReadAll(LimitReader(resp.Body, maxStatusBody))
		_ = resp.Body.Close()
	}
	e := &APIError{}
	if req := resp.Request; req != nil {
		e.Method = req.Method
		if req.URL != nil {
			e.URL = req.URL.Redacted()
		}
	}
	status, ok := decodeStatus(resp.Header.Get("Content-Type"), body)
	if ok {
		e.ErrStatus = *status
		if e.ErrStatus.Code == 0 {
			e.ErrStatus.Code = int32(resp.StatusCode)
		}
	} else {
		e.ErrStatus = synthesizeStatus(resp.StatusCode, body)
	}
	e.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), e.ErrStatus.Details)
	if !ok && e.RetryAfter > 0 {
		// As client-go's made-up Status carries it, so that apimachinery's
		// errors.SuggestsClientDelay finds the delay of a 429 sent as
		// plain text (API Priority and Fairness sends those).
		secs := e.RetryAfter / time.Second
		if e.RetryAfter%time.Second != 0 {
			secs++ // an HTTP date's delay, rounded up
		}
		e.ErrStatus.Details.RetryAfterSeconds = int32(min(secs, math.MaxInt32))
	}
	return e
}

// decodeStatus decodes body as a Status object, in protobuf when the
// content type says so or the body starts with k8s\x00, else in JSON
// whatever the content type says. It reports false when body is not a
// Status. JSON keys are read as apimachinery reads them: the kind's in any
// case ({"Kind":"Status"} is a Status), the others only in their own
// ({"Code":410} sets no code).
func decodeStatus(contentType string, body []byte) (*metav1.Status, bool) {
	mediaType, _, _ := mime.ParseMediaType(contentType)
	if mediaType == "application/vnd.kubernetes.protobuf" || bytes.HasPrefix(body, protobufMagic) {
		if !bytes.HasPrefix(body, protobufMagic) {
			return nil, false
		}
		var u runtime.Unknown
		if err := u.Unmarshal(body[len(protobufMagic):]); err != nil || u.Kind != "Status" {
			return nil, false
		}
		var s metav1.Status
		if err := s.Unmarshal(u.Raw); err != nil {
			return nil, false
		}
		return &s, true
	}
	var kind struct {
		Kind string `json:"kind"`
	}
	var s metav1.Status
	if json.Unmarshal(body, &kind) != nil || kind.Kind != "Status" ||
		kjson.UnmarshalCaseSensitivePreserveInts(body, &s) != nil {
		return nil, false
	}
	s.Kind = kind.Kind
	return &s, true
}

// synthesizeStatus makes a Status for a response whose body is not one,
// with the cause UnexpectedServerResponse.
func synthesizeStatus(code int, body []byte) metav1.Status {
	msg := strings.TrimSpace(string(body))
	cut := len(msg) > maxSynthesizedMessage
	if cut { // at the start of a rune
		i := maxSynthesizedMessage
		for i > 0 && !utf8.RuneStart(msg[i]) {
			i--
		}
		msg = msg[:i]
	}
	switch {
	case msg == "" || !utf8.ValidString(msg): // none, or binary (gzip, an image)
		msg = fmt.Sprintf("the server responded with %d %s and no Status object", code, http.StatusText(code))
	case cut:
		msg += "..."
	}
	return metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Code:     int32(code),
		Reason:   reasonForCode(code),
		Message:  msg,
		// The cause client-go's made-up Status carries too, so that
		// apimachinery's errors.IsUnexpectedServerError tells this error
		// from one the apiserver wrote.
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{
			Type:    metav1.CauseTypeUnexpectedServerResponse,
			Message: msg,
		}}},
	}
}

// retryAfter reads a Retry-After header (seconds, or an HTTP date) and
// falls back to the Status details.
func retryAfter(header string, details *metav1.StatusDetails) time.Duration {
	if header != "" {
		if secs, err := strconv.ParseInt(strings.TrimSpace(header), 10, 64); err == nil && secs >= 0 {
			// Beyond 292 years a Duration overflows into the negative.
			return time.Duration(min(secs, math.MaxInt64/int64(time.Second))) * time.Second
		}
		if t, err := http.ParseTime(header); err == nil {
			if d := time.Until(t); d > 0 {
				return d
			}
			return 0
		}
	}
	if details != nil && details.RetryAfterSeconds > 0 {
		return time.Duration(details.RetryAfterSeconds) * time.Second
	}
	return 0
}

// LimitReader returns a reader that reads from r and fails with an error
// wrapping ErrBodyTooLarge as soon as r holds more than n bytes, instead of
// cutting the stream short silently as io.LimitReader does. The first n
// bytes are returned as usual. Use it for every body read from the server:
// LIST pages and watch frames (with a bound fit for the largest object
// expected), error bodies. The bound applies after gzip decompression, so it
// also bounds a compressed body that expands. The reader is not safe for
// concurrent use, like any reader.
func LimitReader(r io.Reader, n int64) io.Reader {
	n = max(n, 0)
	return &limitedReader{r: r, left: n, limit: n}
}

type limitedReader struct {
	r     io.Reader
	left  int64 // bytes that may still be returned
	limit int64
	err   error // sticky once the limit is exceeded
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	// Ask for one byte more than allowed: getting it proves the body is
	// too large without waiting for another Read.
	if int64(len(p))-1 > l.left { // not l.left+1, which overflows at math.MaxInt64
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	if int64(n) > l.left {
		n = int(l.left)
		l.left = 0
		l.err = fmt.Errorf("%w: more than %d bytes", ErrBodyTooLarge, l.limit)
		return n, l.err
	}
	l.left -= int64(n)
	return n, err
}
