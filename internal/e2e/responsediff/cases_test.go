package responsediff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The responses: a written table, then random ones. A body is built from
// a status: a map rather than a metav1.Status, so that a field can be
// missing, of another kind or spelled with another case.

const (
	ctJSON     = "application/json"
	ctProtobuf = "application/vnd.kubernetes.protobuf"
	ctText     = "text/plain; charset=utf-8"
	ctHTML     = "text/html; charset=utf-8"
	ctYAML     = "application/yaml"
)

// errorCodes are the codes every written body is served with.
var errorCodes = []int{
	400, 401, 403, 404, 405, 406, 409, 410, 413, 415, 422, 429,
	500, 501, 502, 503, 504,
	// and a few odd ones
	207, 300, 418, 451, 499, 505, 511, 599, 999,
}

// reasonFor is the reason kube-apiserver pairs with a code.
func reasonFor(code int) metav1.StatusReason {
	switch code {
	case 400:
		return metav1.StatusReasonBadRequest
	case 401:
		return metav1.StatusReasonUnauthorized
	case 403:
		return metav1.StatusReasonForbidden
	case 404:
		return metav1.StatusReasonNotFound
	case 405:
		return metav1.StatusReasonMethodNotAllowed
	case 406:
		return metav1.StatusReasonNotAcceptable
	case 409:
		return metav1.StatusReasonConflict
	case 410:
		return metav1.StatusReasonExpired
	case 413:
		return metav1.StatusReasonRequestEntityTooLarge
	case 415:
		return metav1.StatusReasonUnsupportedMediaType
	case 422:
		return metav1.StatusReasonInvalid
	case 429:
		return metav1.StatusReasonTooManyRequests
	case 503:
		return metav1.StatusReasonServiceUnavailable
	case 504:
		return metav1.StatusReasonTimeout
	}
	if code >= 500 {
		return metav1.StatusReasonInternalError
	}
	return ""
}

// payload is a body: raw bytes, or a status encoded as enc ("json",
// "protobuf" or "yaml"), or a watch stream whose ERROR event's object is
// the status; a reading can rewrite the status.
type payload struct {
	body   []byte
	st     status
	enc    string
	stream *stream // a 200 watch stream (streams_test.go)
}

// with returns p with its status st, encoded again.
func (p payload) with(st status) payload {
	if p.stream != nil {
		return watchStream(*p.stream, st)
	}
	return st.as(p.enc)
}

func raw(b []byte) payload { return payload{body: b} }

// as encodes s as enc.
func (s status) as(enc string) payload {
	p := payload{st: s, enc: enc}
	switch enc {
	case "json":
		p.body = s.json()
	case "protobuf":
		p.body = s.protobuf()
	case "yaml":
		p.body = s.yaml()
	default:
		panic("unknown encoding " + enc)
	}
	return p
}

// status is a Status body's fields, in JSON's names.
type status map[string]any

// apiStatus is the Status kube-apiserver sends with code.
func apiStatus(code int, msg string) status {
	s := status{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Failure", "message": msg, "code": code}
	if r := reasonFor(code); r != "" {
		s["reason"] = string(r)
	}
	return s
}

// with returns s with the fields of more set (a nil value deletes one).
func (s status) with(more status) status {
	out := status{}
	for k, v := range s {
		out[k] = v
	}
	for k, v := range more {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

func (s status) json() []byte {
	b, err := json.Marshal(map[string]any(s))
	if err != nil {
		panic(err)
	}
	return b
}

// yaml writes s in YAML: scalars in block style, nested values in flow
// style (JSON, which YAML reads).
func (s status) yaml() []byte {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(s)) {
		v, _ := json.Marshal(s[k])
		fmt.Fprintf(&b, "%s: %s\n", k, v)
	}
	return []byte(b.String())
}

// protobuf encodes s as kube-apiserver does for a client that accepts
// protobuf: k8s\x00, then a runtime.Unknown whose Raw is the Status. The
// envelope names kind (the Status's "kind", if a string).
func (s status) protobuf() []byte {
	var st metav1.Status
	if err := json.Unmarshal(s.json(), &st); err != nil {
		// A field of the wrong type: what a Status can carry of it.
		st = metav1.Status{Message: fmt.Sprint(s["message"])}
	}
	raw, err := st.Marshal()
	if err != nil {
		panic(err)
	}
	kind, _ := s["kind"].(string)
	apiVersion, _ := s["apiVersion"].(string)
	return kubeEnvelope(apiVersion, kind, raw)
}

// kubeEnvelope is raw in protobuf's envelope: k8s\x00 and a
// runtime.Unknown naming its kind.
func kubeEnvelope(apiVersion, kind string, raw []byte) []byte {
	u := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: apiVersion, Kind: kind}, Raw: raw}
	env, err := u.Marshal()
	if err != nil {
		panic(err)
	}
	return append([]byte("k8s\x00"), env...)
}

// emptyList is a list of no items as kube-apiserver sends it, in JSON or
// protobuf.
func emptyList(apps, protobuf bool) []byte {
	kind, apiVersion := "PodList", "v1"
	if apps {
		kind, apiVersion = "DeploymentList", "apps/v1"
	}
	if !protobuf {
		return fmt.Appendf(nil, `{"kind":%q,"apiVersion":%q,"metadata":{"resourceVersion":"7"},"items":[]}`, kind, apiVersion)
	}
	raw, err := (&corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}}).Marshal() // the same bytes for any empty list
	if err != nil {
		panic(err)
	}
	return kubeEnvelope(apiVersion, kind, raw)
}

func header(contentType, retryAfter string) http.Header {
	h := http.Header{}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	if retryAfter != "" {
		h.Set("Retry-After", retryAfter)
	}
	return h
}

// tooLargeCause is the cause kube-apiserver 1.18.6 and later sends with a
// too-large resourceVersion.
var tooLargeCause = map[string]any{"causes": []any{map[string]any{
	"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}}, "retryAfterSeconds": 1}

// written returns the written cases.
func written() []*response {
	var cs []*response
	add := func(name string, code int, h http.Header, p payload, more ...func(*response)) {
		c := &response{name: name, code: code, header: h, payload: p}
		for _, m := range more {
			m(c)
		}
		cs = append(cs, c)
	}
	watch := func(c *response) { c.watch = true }
	apps := func(c *response) { c.apps = true }

	// Every code, with the bodies a server or a proxy sends.
	for _, code := range errorCodes {
		msg := fmt.Sprintf("something went wrong (%d)", code)
		add(fmt.Sprint(code, " JSON Status"), code, header(ctJSON, ""), apiStatus(code, msg).as("json"))
		add(fmt.Sprint(code, " JSON Status to a watch of apps"), code, header(ctJSON, ""), apiStatus(code, msg).as("json"), watch, apps)
		add(fmt.Sprint(code, " JSON Status without a code"), code, header(ctJSON, ""), apiStatus(code, msg).with(status{"code": nil}).as("json"))
		add(fmt.Sprint(code, " protobuf Status"), code, header(ctProtobuf, ""), apiStatus(code, msg).as("protobuf"))
		add(fmt.Sprint(code, " plain text"), code, header(ctText, ""), raw([]byte(msg+"\n")))
		add(fmt.Sprint(code, " HTML to a watch"), code, header(ctHTML, ""), raw([]byte("<html><body><h1>"+msg+"</h1></body></html>")), watch)
		add(fmt.Sprint(code, " empty"), code, header("", ""), raw(nil))
		add(fmt.Sprint(code, " JSON that is no Status"), code, header(ctJSON, ""), raw([]byte(`{"error":"`+msg+`"}`)), apps)
	}

	// 410: the relist.
	expired := apiStatus(410, "too old resource version: 5 (9)")
	add("410 Expired", 410, header(ctJSON, ""), expired.as("json"), watch)
	add("410 Gone", 410, header(ctJSON, ""), expired.with(status{"reason": "Gone"}).as("json"))
	add("410 without a reason", 410, header(ctJSON, ""), expired.with(status{"reason": nil}).as("json"))
	add("410 with the reason NotFound", 410, header(ctJSON, ""), expired.with(status{"reason": "NotFound"}).as("json"))
	add("Expired on a 500", 500, header(ctJSON, ""), expired.with(status{"code": 500}).as("json"))
	add("Expired without a code on a 500", 500, header(ctJSON, ""), expired.with(status{"code": nil}).as("json"), watch)
	add("410 Expired in protobuf", 410, header(ctProtobuf, ""), expired.as("protobuf"), apps)
	add("410 continue token expired", 410, header(ctJSON, ""), expired.with(status{"message": "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
		"metadata": map[string]any{"continue": "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTF9"}}).as("json"))

	// Too large resourceVersion, in the three forms apiservers sent.
	tooLarge := apiStatus(504, "Timeout: Too large resource version: 12, current: 5")
	add("too large, 1.18.6 and later", 504, header(ctJSON, "1"), tooLarge.with(status{"details": tooLargeCause}).as("json"))
	add("too large, 1.18.6 and later, to a watch", 504, header(ctJSON, "1"), tooLarge.with(status{"details": tooLargeCause}).as("json"), watch)
	add("too large, 1.18.6 and later, in protobuf", 504, header(ctProtobuf, "1"), tooLarge.with(status{"details": tooLargeCause}).as("protobuf"))
	add("too large, 1.17 to 1.18.5", 504, header(ctJSON, ""), tooLarge.with(status{"details": map[string]any{"causes": []any{map[string]any{"message": "Too large resource version"}}}}).as("json"))
	add("too large, before 1.17, with details", 504, header(ctJSON, ""), tooLarge.with(status{"details": map[string]any{"retryAfterSeconds": 1}}).as("json"))
	add("too large, before 1.17, without details", 504, header(ctJSON, ""), tooLarge.as("json"))
	add("too large cause on a 500", 500, header(ctJSON, ""), apiStatus(500, "x").with(status{"details": tooLargeCause}).as("json"))
	add("too large message on a 500", 500, header(ctJSON, ""), apiStatus(500, "Too large resource version").with(status{"details": map[string]any{}}).as("json"))
	add("too large as plain text on a 504", 504, header(ctText, ""), raw([]byte("Too large resource version")))
	add("too large on a 504 of another reason", 504, header(ctJSON, ""), tooLarge.with(status{"reason": "Conflict", "details": map[string]any{}}).as("json"))
	add("too large as a JSON-typed body on a 504", 504, header(ctJSON, ""), raw([]byte("Too large resource version")))
	add("too large in lower case", 504, header(ctJSON, ""), tooLarge.with(status{"message": "too large resource version", "details": map[string]any{}}).as("json"))

	// Retry-After: seconds, an HTTP date, garbage, negative; from the
	// header or the details.
	tooMany := apiStatus(429, "Too many requests, please try again later.")
	future := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	past := time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)
	for _, ra := range []string{"0", "1", "7", "120", "-3", " 2", "2.5", "soon", future, past} {
		add(fmt.Sprintf("429 JSON, Retry-After %q", ra), 429, header(ctJSON, ra), tooMany.as("json"))
		add(fmt.Sprintf("429 plain text, Retry-After %q", ra), 429, header(ctText, ra), raw([]byte("Too many requests, please try again later.\n")))
		add(fmt.Sprintf("503 HTML to a watch, Retry-After %q", ra), 503, header(ctHTML, ra), raw([]byte("<html>Service Unavailable</html>")), watch)
		add(fmt.Sprintf("403 JSON, Retry-After %q", ra), 403, header(ctJSON, ra), apiStatus(403, "no").as("json"))
	}
	add("TooManyRequests on a 404", 404, header(ctJSON, ""), tooMany.with(status{"code": 404}).as("json"), watch)
	add("429 with retryAfterSeconds", 429, header(ctJSON, ""), tooMany.with(status{"details": map[string]any{"retryAfterSeconds": 3}}).as("json"))
	add("429 with retryAfterSeconds and Retry-After", 429, header(ctJSON, "2"), tooMany.with(status{"details": map[string]any{"retryAfterSeconds": 3}}).as("json"))
	add("500 ServerTimeout with retryAfterSeconds", 500, header(ctJSON, ""), apiStatus(500, "the server cannot complete the requested operation at this time, try again later").with(status{"reason": "ServerTimeout", "details": map[string]any{"retryAfterSeconds": 2}}).as("json"), watch)
	add("500 with negative retryAfterSeconds", 500, header(ctJSON, ""), apiStatus(500, "x").with(status{"details": map[string]any{"retryAfterSeconds": -4}}).as("json"))

	// Odd bodies.
	add("403 invalid UTF-8 text", 403, header(ctText, ""), raw([]byte("forbidden \xff\xfe here")))
	add("403 invalid UTF-8 in a JSON Status", 403, header(ctJSON, ""), raw([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":403,"reason":"Forbidden","message":"bad \xff byte"}`)))
	add("404 Status of another kind", 404, header(ctJSON, ""), apiStatus(404, "no").with(status{"kind": "Pod"}).as("json"))
	add("404 Status without a kind", 404, header(ctJSON, ""), apiStatus(404, "no").with(status{"kind": nil}).as("json"))
	add("404 Status without an apiVersion", 404, header(ctJSON, ""), apiStatus(404, "no").with(status{"apiVersion": nil}).as("json"))
	add("404 Status of meta.k8s.io/v1", 404, header(ctJSON, ""), apiStatus(404, "no").with(status{"apiVersion": "meta.k8s.io/v1"}).as("json"))
	add("404 Status whose status is Success", 404, header(ctJSON, ""), apiStatus(404, "no").with(status{"status": "Success"}).as("json"))
	add("404 Status without a status", 404, header(ctJSON, ""), apiStatus(404, "no").with(status{"status": nil}).as("json"))
	add("500 Status with a reason of the future", 500, header(ctJSON, ""), apiStatus(500, "new").with(status{"reason": "SomethingNew"}).as("json"))
	add("400 Status with a 404 code", 400, header(ctJSON, ""), apiStatus(404, "no").as("json"))
	// The Status's code wins over the HTTP status (a proxy that passes the
	// apiserver's body on under a status of its own), in both libraries.
	add("503 Status with a 410 Expired code", 503, header(ctJSON, ""), expired.as("json"), watch)
	add("410 Status with a 500 code", 410, header(ctJSON, ""), apiStatus(500, "etcd is down").as("json"))
	add("500 protobuf Status with a 410 Expired code", 500, header(ctProtobuf, ""), expired.as("protobuf"), apps)
	add("429 Status with a 403 code, Retry-After 2", 429, header(ctJSON, "2"), apiStatus(403, "no").as("json"))
	add("422 Invalid with causes", 422, header(ctJSON, ""), apiStatus(422, `pods "x" is invalid`).with(status{"details": map[string]any{"name": "x", "kind": "pods", "causes": []any{map[string]any{"reason": "FieldValueInvalid", "message": "Invalid value", "field": "metadata.name"}}}}).as("json"))
	add("500 truncated JSON Status", 500, header(ctJSON, ""), raw(apiStatus(500, "cut").json()[:30]))
	add("404 JSON Status as text/plain", 404, header(ctText, ""), apiStatus(404, "no").as("json"))
	add("404 JSON Status without a content type", 404, header("", ""), apiStatus(404, "no").as("json"))
	add("404 protobuf Status as JSON", 404, header(ctJSON, ""), apiStatus(404, "no").as("protobuf"))
	add("404 protobuf Status without a content type", 404, header("", ""), apiStatus(404, "no").as("protobuf"), watch)
	add("404 protobuf envelope of another kind", 404, header(ctProtobuf, ""), apiStatus(404, "no").with(status{"kind": "Event"}).as("protobuf"))
	add("404 YAML Status", 404, header(ctYAML, ""), apiStatus(404, "not here").as("yaml"))
	add("410 YAML Status to a watch", 410, header(ctYAML, ""), expired.as("yaml"), watch)
	add("403 Status in capitalised keys", 403, header(ctJSON, ""), status{"Kind": "Status", "APIVersion": "v1", "Status": "Failure", "Code": 410, "Reason": "Expired", "Message": "capitals"}.as("json"))
	add("403 Status with one capitalised key", 403, header(ctJSON, ""), apiStatus(403, "forbidden").with(status{"Reason": "Expired"}).as("json"))
	add("500 a long HTML page", 500, header(ctHTML, ""), raw([]byte("<html>"+strings.Repeat("<p>error</p>", 300)+"</html>")))
	add("502 a bad content type", 502, header("not a/type;;", ""), apiStatus(502, "x").as("json"))

	// 2xx answers to a list.
	for _, a := range []bool{false, true} {
		g := map[bool]string{false: "pods", true: "deployments"}[a]
		with := func(c *response) { c.apps = a }
		add("200 an empty list of "+g, 200, header(ctJSON, ""), raw(emptyList(a, false)), with)
		add("200 an empty list of "+g+" in protobuf", 200, header(ctProtobuf, ""), raw(emptyList(a, true)), with)
		add("200 {} for "+g, 200, header(ctJSON, ""), raw([]byte(`{}`)), with)
		add("200 a list without items for "+g, 200, header(ctJSON, ""), raw(bytes.Replace(emptyList(a, false), []byte(`,"items":[]`), nil, 1)), with)
		add("200 a list whose items are null for "+g, 200, header(ctJSON, ""), raw(bytes.Replace(emptyList(a, false), []byte(`"items":[]`), []byte(`"items":null`), 1)), with)
		add("200 a list of the other resource for "+g, 200, header(ctJSON, ""), raw(emptyList(!a, false)), with)
		add("200 a Failure Status for "+g, 200, header(ctJSON, ""), apiStatus(410, "expired").as("json"), with)
		add("200 a Success Status for "+g, 200, header(ctJSON, ""), apiStatus(200, "").with(status{"status": "Success", "reason": nil, "message": nil}).as("json"), with)
		add("200 a ConfigMap for "+g, 200, header(ctJSON, ""), raw([]byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c"}}`)), with)
		add("201 an empty list of "+g, 201, header(ctJSON, ""), raw(emptyList(a, false)), with)
	}
	add("200 a PodList of apps/v1 for pods", 200, header(ctJSON, ""), raw([]byte(`{"kind":"PodList","apiVersion":"apps/v1","metadata":{"resourceVersion":"7"},"items":[]}`)))
	add("200 a DeploymentList of v1 for deployments", 200, header(ctJSON, ""), raw([]byte(`{"kind":"DeploymentList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[]}`)), apps)
	add("200 a DeploymentList without an apiVersion", 200, header(ctJSON, ""), raw([]byte(`{"kind":"DeploymentList","metadata":{"resourceVersion":"7"},"items":[]}`)), apps)
	add("200 an empty list as application/octet-stream", 200, header("application/octet-stream", ""), raw(emptyList(false, false)))
	add("200 a Failure Status whose Kind key is capitalised", 200, header(ctJSON, ""), apiStatus(404, "no").with(status{"kind": nil, "Kind": "Status"}).as("json"))
	add("200 plain text", 200, header(ctText, ""), raw([]byte("ok")))
	add("200 empty", 200, header(ctJSON, ""), raw(nil))
	add("204 no content to a watch", 204, header("", ""), raw(nil), watch)
	add("201 JSON to a watch", 201, header(ctJSON, ""), raw([]byte(`{"type":"ADDED","object":{}}`)), watch)
	return append(cs, watchStreams()...)
}

// generate draws a random response.
func generate(r *rand.Rand) *response {
	c := &response{watch: r.IntN(3) == 0, apps: r.IntN(3) == 0}
	codes := errorCodes
	if !c.watch {
		codes = append(slices.Clone(codes), 200, 200, 200, 201, 204)
	}
	c.code = codes[r.IntN(len(codes))]
	if r.IntN(4) == 0 { // anything a proxy may send
		c.code = 400 + r.IntN(200)
	}
	s := randomStatus(r, c.code)
	var ct string
	switch r.IntN(10) {
	case 0, 1, 2, 3:
		c.payload, ct = s.as("json"), ctJSON
	case 4:
		c.payload, ct = s.as("protobuf"), ctProtobuf
	case 5:
		c.payload, ct = s.as("yaml"), ctYAML
	case 6:
		c.payload, ct = raw([]byte(pick(r, "Internal Server Error", "upstream connect error or disconnect/reset before headers", "Too large resource version", "Too many requests, please try again later.", "404 page not found"))), ctText
	case 7:
		c.payload, ct = raw([]byte("<html><head><title>"+http.StatusText(c.code)+"</title></head></html>")), ctHTML
	case 8:
		c.payload = raw(nil)
	default:
		switch r.IntN(4) {
		case 0:
			c.payload, ct = raw(emptyList(c.apps, r.IntN(2) == 0)), ctJSON
		case 1:
			c.payload, ct = raw([]byte("bad \xff\xfe bytes")), ctText
		case 2:
			c.payload, ct = raw([]byte(`{}`)), ctJSON
		default:
			b := s.json()
			c.payload, ct = raw(b[:r.IntN(len(b))]), ctJSON
		}
	}
	if r.IntN(5) == 0 { // a content type that does not say what the body is
		ct = pick(r, "", ctJSON, ctProtobuf, ctText, ctYAML, "application/json;charset=utf-8", "application/octet-stream")
	}
	var ra string
	if r.IntN(3) == 0 {
		ra = pick(r, "0", "1", "3", "60", "-1", "x", " 4", time.Now().Add(30*time.Second).UTC().Format(http.TimeFormat),
			time.Now().Add(-time.Minute).UTC().Format(http.TimeFormat))
	}
	c.header = header(ct, ra)
	return c
}

// randomStatus draws a Status body for code: mostly what kube-apiserver
// would send, sometimes with fields missing, wrong or spelled otherwise.
func randomStatus(r *rand.Rand, code int) status {
	s := apiStatus(code, pick(r, "the server could not find the requested resource", "Too large resource version",
		"Timeout: Too large resource version: 9, current: 4", "too large resource version", "too old resource version: 1 (2)",
		"pods is forbidden: User \"x\" cannot list resource \"pods\"", "ünïcödé ✓", ""))
	if r.IntN(3) == 0 {
		s["reason"] = pick(r, "", "Expired", "Gone", "NotFound", "Timeout", "TooManyRequests", "InternalError", "ServerTimeout",
			"Conflict", "AlreadyExists", "Invalid", "BadRequest", "Forbidden", "Unauthorized", "MethodNotAllowed", "NotAcceptable",
			"UnsupportedMediaType", "RequestEntityTooLarge", "ServiceUnavailable", "SomethingNew")
	}
	switch r.IntN(6) {
	case 0:
		delete(s, "code")
	case 1:
		s["code"] = pick(r, 400, 404, 410, 429, 500, 504)
	}
	if r.IntN(8) == 0 {
		s["kind"] = pick[any](r, nil, "Pod", "status")
	}
	if r.IntN(8) == 0 {
		s["apiVersion"] = pick[any](r, nil, "meta.k8s.io/v1", "v2")
	}
	if r.IntN(8) == 0 {
		s["status"] = pick[any](r, nil, "Success", "Bogus")
	}
	if r.IntN(3) == 0 {
		d := map[string]any{}
		if r.IntN(2) == 0 {
			d["retryAfterSeconds"] = pick(r, 0, 1, 5, -2)
		}
		if r.IntN(2) == 0 {
			cause := map[string]any{"message": pick(r, "Too large resource version", "other")}
			if r.IntN(2) == 0 {
				// Not UnexpectedServerResponse, the cause of a Status made
				// up by a client: the test tells those apart by it.
				cause["reason"] = pick(r, "ResourceVersionTooLarge", "FieldValueInvalid")
			}
			d["causes"] = []any{cause}
		}
		s["details"] = d
	}
	if r.IntN(12) == 0 { // one key in another case
		k := pick(r, "kind", "code", "reason", "message", "status")
		v, ok := s[k]
		if ok {
			delete(s, k)
			s[strings.ToUpper(k[:1])+k[1:]] = v
		}
	}
	for k, v := range s {
		if v == nil {
			delete(s, k)
		}
	}
	return s
}

func pick[T any](r *rand.Rand, choices ...T) T { return choices[r.IntN(len(choices))] }
