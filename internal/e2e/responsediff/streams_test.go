package responsediff

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Watch streams answered 200: ordinary events, then an ERROR event whose
// object is a Status (or something else), or a last event that is
// malformed. A stream is served in JSON or in protobuf, as kube-apiserver
// writes them: one {"type":...,"object":...} object a line, or frames of a
// 4-byte big-endian length and a WatchEvent whose object is k8s\x00 and a
// runtime.Unknown.

const ctProtobufWatch = "application/vnd.kubernetes.protobuf;stream=watch"

// stream is a watch stream's body but for its ERROR event's object, the
// payload's status.
type stream struct {
	apps   bool     // deployments, else pods
	proto  bool     // protobuf frames, else JSON lines
	before []string // the ordinary events first: "ADDED" or "BOOKMARK"
	// last, when set, is a last event written as is, in place of the
	// ERROR event: a malformed one.
	last []byte
}

// body returns the stream with st as its ERROR event's object (none if
// st is nil and last is unset).
func (s *stream) body(st status) []byte {
	var b []byte
	for i, typ := range s.before {
		b = s.appendEvent(b, typ, s.object(typ, i))
	}
	switch {
	case s.last != nil:
		b = append(b, s.last...)
	case st != nil:
		b = s.appendEvent(b, "ERROR", s.errorObject(st))
	}
	return b
}

// watchStream is a 200 answer to a watch: s, with st as its ERROR event's
// object.
func watchStream(s stream, st status) payload {
	p := payload{st: st, stream: &s}
	p.body = s.body(st)
	return p
}

func (s *stream) contentType() string {
	if s.proto {
		return ctProtobufWatch
	}
	return ctJSON
}

// appendEvent appends one event whose object is obj: JSON, or k8s\x00 and
// a runtime.Unknown.
func (s *stream) appendEvent(b []byte, typ string, obj []byte) []byte {
	if !s.proto {
		return append(fmt.Appendf(b, `{"type":%q,"object":`, typ), append(obj, "}\n"...)...)
	}
	ev := metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: obj}}
	return appendFrame(b, &ev)
}

// appendFrame appends m as one length-prefixed frame.
func appendFrame(b []byte, m interface{ Marshal() ([]byte, error) }) []byte {
	raw, err := m.Marshal()
	if err != nil {
		panic(err)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(raw)))
	return append(b, raw...)
}

// object is the i-th ordinary event's object: a valid pod or deployment,
// or a bookmark of the resource's kind carrying only a resourceVersion.
func (s *stream) object(typ string, i int) []byte {
	meta := metav1.ObjectMeta{Name: fmt.Sprint("x", i), Namespace: "ns", ResourceVersion: fmt.Sprint(10 + i)}
	if typ == "BOOKMARK" {
		meta = metav1.ObjectMeta{ResourceVersion: fmt.Sprint(10 + i)}
	}
	if s.apps {
		return s.encode(&appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: meta})
	}
	return s.encode(&corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: meta})
}

// errorObject is the ERROR event's object: st, or, for a st whose kind is
// Pod, a pod.
func (s *stream) errorObject(st status) []byte {
	if st["kind"] == "Pod" {
		return s.encode(&corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: "not-a-status", Namespace: "ns"}})
	}
	if s.proto {
		return st.protobuf()
	}
	return st.json()
}

// encode writes obj, whose TypeMeta is set, as an event's object: JSON,
// or protobuf in an envelope naming its kind.
func (s *stream) encode(obj interface {
	runtime.Object
	Marshal() ([]byte, error)
}) []byte {
	if !s.proto {
		b, err := json.Marshal(obj)
		if err != nil {
			panic(err)
		}
		return b
	}
	raw, err := obj.Marshal()
	if err != nil {
		panic(err)
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	return kubeEnvelope(gvk.GroupVersion().String(), gvk.Kind, raw)
}

// watchStreams returns the written cases of watch streams.
func watchStreams() []*response {
	var cs []*response
	add := func(name string, p payload) {
		cs = append(cs, &response{name: name, watch: true, apps: p.stream.apps, code: 200,
			header: header(p.stream.contentType(), ""), payload: p})
	}
	expired := apiStatus(410, "too old resource version: 5 (9)")
	timeout := apiStatus(504, "Timeout: Too large resource version: 12, current: 5")
	shapes := []struct {
		name string
		st   status
	}{
		{"410 Expired", expired},
		{"410 Gone", expired.with(status{"reason": "Gone"})},
		{"504 too large, 1.18.6 and later", timeout.with(status{"details": tooLargeCause})},
		{"Timeout, too large cause message only", timeout.with(status{"details": map[string]any{"causes": []any{map[string]any{"message": "Too large resource version"}}}})},
		{"Timeout, too large message without details", timeout},
		{"500 InternalError", apiStatus(500, "etcdserver: request timed out")},
		{"429 with retryAfterSeconds", apiStatus(429, "Too many requests, please try again later.").with(status{"details": map[string]any{"retryAfterSeconds": 3}})},
		{"403", apiStatus(403, `pods is forbidden: User "x" cannot watch resource "pods"`)},
		{"a Status without a code", expired.with(status{"code": nil})},
		{"a Status without a reason", expired.with(status{"reason": nil})},
		{"code 0 and reason Expired", expired.with(status{"code": 0})},
		{"a Status without a code or a reason", expired.with(status{"code": nil, "reason": nil})},
		{"a Status without a kind", expired.with(status{"kind": nil})},
		{"a Status without an apiVersion", expired.with(status{"apiVersion": nil})},
		{"a Status of meta.k8s.io/v1", expired.with(status{"apiVersion": "meta.k8s.io/v1"})},
		{"a Status of v2", expired.with(status{"apiVersion": "v2"})},
		{"a Status of kind status", expired.with(status{"kind": "status"})},
		{"a Status whose kind key is capitalised", expired.with(status{"kind": nil, "Kind": "Status"})},
		{"a Status whose code key is capitalised", expired.with(status{"code": nil, "Code": 410})},
		{"a Pod", status{"kind": "Pod", "apiVersion": "v1"}},
		{"a Status whose status is Success", expired.with(status{"status": "Success"})},
	}
	for _, proto := range []bool{false, true} {
		enc := map[bool]string{false: "JSON", true: "protobuf"}[proto]
		for _, sh := range shapes {
			add(fmt.Sprintf("%s stream: ERROR %s", enc, sh.name), watchStream(stream{proto: proto}, sh.st))
		}
		for _, before := range [][]string{{"ADDED"}, {"ADDED", "BOOKMARK", "ADDED"}} {
			add(fmt.Sprintf("%s stream: %v, then ERROR 410 Expired", enc, before), watchStream(stream{proto: proto, before: before}, expired))
			add(fmt.Sprintf("%s stream of deployments: %v, then ERROR 504 too large", enc, before),
				watchStream(stream{proto: proto, apps: true, before: before}, timeout.with(status{"details": tooLargeCause})))
		}
		add(enc+" stream: ADDED, then its end", watchStream(stream{proto: proto, before: []string{"ADDED"}}, nil))
		add(enc+" stream: no event", watchStream(stream{proto: proto}, nil))
	}

	// Malformed last events.
	withLast := func(s stream, last []byte) payload { s.last = last; return watchStream(s, nil) }
	js := stream{before: []string{"ADDED"}}
	add("JSON stream: ERROR without an object", withLast(js, []byte(`{"type":"ERROR"}`+"\n")))
	add("JSON stream: ERROR with a null object", withLast(js, []byte(`{"type":"ERROR","object":null}`+"\n")))
	add("JSON stream: ERROR cut short", withLast(js, []byte(`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","code":4`)))
	add("JSON stream: an unknown event type", withLast(js, append([]byte(`{"type":"SURPRISE","object":`), append(expired.json(), "}\n"...)...)))
	add("JSON stream: ERROR whose object is no JSON object", withLast(js, []byte(`{"type":"ERROR","object":"gone"}`+"\n")))
	add("JSON stream: ERROR of a Status whose code is a string", watchStream(js, expired.with(status{"code": "410"})))
	add("JSON stream: ERROR with its object before its type", withLast(js, append(append([]byte(`{"object":`), expired.json()...), `,"type":"ERROR"}`+"\n"...)))
	add("JSON stream: ERROR without a type", withLast(js, append(append([]byte(`{"object":`), expired.json()...), "}\n"...)))
	ps := stream{proto: true, before: []string{"ADDED"}}
	add("protobuf stream: ERROR without an object", withLast(ps, appendFrame(nil, &metav1.WatchEvent{Type: "ERROR"})))
	add("protobuf stream: ERROR cut short", withLast(ps, appendFrame(nil, &metav1.WatchEvent{Type: "ERROR", Object: runtime.RawExtension{Raw: expired.protobuf()}})[:20]))
	add("protobuf stream: ERROR whose Status bytes are garbage", withLast(ps, appendFrame(nil, &metav1.WatchEvent{Type: "ERROR",
		Object: runtime.RawExtension{Raw: kubeEnvelope("v1", "Status", []byte("\xff\xff\xff"))}})))
	add("protobuf stream: an unknown event type", withLast(ps, appendFrame(nil, &metav1.WatchEvent{Type: "SURPRISE", Object: runtime.RawExtension{Raw: expired.protobuf()}})))
	return cs
}

// generateStream draws a random watch stream: up to three ordinary events,
// then an ERROR event of a random Status, sometimes of another kind or
// cut short.
func generateStream(r *rand.Rand) *response {
	s := stream{apps: r.IntN(3) == 0, proto: r.IntN(3) == 0}
	for range r.IntN(4) {
		s.before = append(s.before, pick(r, "ADDED", "BOOKMARK"))
	}
	code := pick(r, 410, 410, 504, 500, 429, 403, 404, 400, 503)
	st := randomStatus(r, code)
	if r.IntN(16) == 0 {
		st = status{"kind": "Pod", "apiVersion": "v1"}
	}
	p := watchStream(s, st)
	if r.IntN(16) == 0 { // cut inside the ERROR event
		head := len(watchStream(s, nil).body)
		p.body = p.body[:head+r.IntN(len(p.body)-head)]
		p.st = nil
	}
	return &response{watch: true, apps: s.apps, code: 200, header: header(s.contentType(), ""), payload: p}
}
