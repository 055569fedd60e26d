package apisim

import (
	"bufio"
	"fmt"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/kubeproto"
)

// stream writes one LIST body or WATCH stream and applies the request's
// fault while doing so. Writes go through a buffer; flush sends what is
// buffered to the client. After the first write error (the client went
// away) or once a fault ended the response, ok reports false and every
// write is a no-op.
type stream struct {
	s       *Server
	w       http.ResponseWriter
	r       *http.Request
	bw      *bufio.Writer
	fault   Fault
	f       format
	watch   bool // a watch stream (else a LIST body)
	scratch []byte
	ended   bool

	items  int    // events (not bookmarks) or list items written
	lastRV uint64 // resourceVersion of the last event written, for RV mutations
}

func newStream(s *Server, w http.ResponseWriter, r *http.Request, f format, watch bool) *stream {
	return &stream{s: s, w: w, r: r, f: f, watch: watch,
		bw: bufio.NewWriterSize(w, 32<<10), fault: faultFrom(r.Context())}
}

func (st *stream) ok() bool { return !st.ended }

// header sends the response headers, then applies faults due before any
// item (After(0)).
func (st *stream) header(contentType string, code int) {
	st.w.Header().Set("Content-Type", contentType)
	st.w.WriteHeader(code)
	st.flush()
	st.afterItems()
}

func (st *stream) write(b []byte) {
	if st.ended {
		return
	}
	if st.fault.kind == faultTrickle {
		st.trickle(b)
		return
	}
	if _, err := st.bw.Write(b); err != nil {
		st.ended = true
	}
}

// trickle sends b one byte per interval.
func (st *stream) trickle(b []byte) {
	t := time.NewTicker(st.fault.interval)
	defer t.Stop()
	for i := range b {
		if _, err := st.w.Write(b[i : i+1]); err != nil {
			st.ended = true
			return
		}
		st.flushWire()
		select {
		case <-t.C:
		case <-st.r.Context().Done():
			st.ended = true
			return
		case <-st.s.closing:
			st.ended = true
			return
		}
	}
}

func (st *stream) flush() {
	if st.ended {
		return
	}
	if err := st.bw.Flush(); err != nil {
		st.ended = true
		return
	}
	st.flushWire()
}

func (st *stream) flushWire() {
	if f, ok := st.w.(http.Flusher); ok {
		f.Flush()
	}
}

// finish flushes the end of a complete response.
func (st *stream) finish() { st.flush() }

// item writes one list item or watch event frame and counts it. frame is
// the complete frame; a TruncateFrame fault due now sends half of it and
// drops the connection instead.
func (st *stream) item(frame []byte, rv uint64) {
	if st.ended {
		return
	}
	if st.fault.kind == faultTruncate && st.items == st.fault.after {
		st.write(frame[:len(frame)/2])
		st.abort()
		return
	}
	st.write(frame)
	st.items++
	st.lastRV = rv
	st.afterItems()
}

// afterItems applies the faults due once st.items items went out.
func (st *stream) afterItems() {
	if st.items != st.fault.after || st.ended {
		return
	}
	switch st.fault.kind {
	case faultDrop:
		st.abort()
	case faultSilent:
		st.flush()
		st.s.stall(st.r.Context())
		st.ended = true
	case faultMalformed:
		st.write(st.garbage())
	case faultErrorEvent:
		if st.watch {
			status := st.fault.status
			if status == nil {
				status = &metav1.Status{
					TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
					Status:   metav1.StatusFailure, Code: st.fault.code, Reason: st.fault.reason,
					Message: fmt.Sprintf("apisim: injected %s (%d)", st.fault.reason, st.fault.code),
				}
			}
			st.errorEvent(status)
			st.flush()
			st.ended = true
		}
	case faultEnd:
		st.flush()
		st.ended = true
	}
}

// garbage returns a frame that does not decode in the stream's format.
func (st *stream) garbage() []byte {
	switch {
	case st.f.proto && st.watch:
		return []byte{0, 0, 0, 4, 0xff, 0xff, 0xff, 0xff}
	case st.f.proto:
		return []byte{0xff, 0xff, 0xff, 0xff}
	case st.watch:
		return []byte("{\"type\":\"ADDED\",\"object\":{\"kind\":\n")
	}
	return []byte("{\"kind\":")
}

// event writes one watch event frame.
func (st *stream) event(typ string, obj encoded, rv uint64) {
	if st.f.unservable {
		st.end()
		return
	}
	st.item(st.frame(typ, obj), rv)
}

// bookmark writes one BOOKMARK frame; it does not count as an item.
func (st *stream) bookmark(obj encoded, rv uint64) {
	if st.f.unservable {
		st.end()
		return
	}
	st.write(st.frame("BOOKMARK", obj))
	st.lastRV = rv
}

// end ends the response cleanly.
func (st *stream) end() {
	st.flush()
	st.ended = true
}

// frame encodes one watch event in the stream's format, in st.scratch.
func (st *stream) frame(typ string, obj encoded) []byte {
	if st.f.proto {
		st.scratch = appendProtoEventHead(st.scratch[:0], typ, obj)
		st.scratch = append(st.scratch, obj.body...)
		st.scratch = append(st.scratch, kubeproto.UnknownTrailer...)
		return st.scratch
	}
	st.scratch = appendJSONEvent(st.scratch[:0], typ, obj.body)
	return st.scratch
}

// errorEvent writes an ERROR event carrying status; it does not count as
// an item.
func (st *stream) errorEvent(status *metav1.Status) {
	st.write(st.frame("ERROR", encodedStatus(status, st.f)))
}

// abort drops the connection without ending the response: on HTTP/1.1 the
// connection is hijacked and closed; on HTTP/2 the handler aborts, which
// resets the stream.
func (st *stream) abort() {
	st.flush()
	st.ended = true
	if hj, ok := st.w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler) // net/http's documented way to abort a response
}

// mutationDue reports whether the next item must be mutated.
func (st *stream) mutationDue() bool {
	return st.fault.kind >= mutUnknownType && st.items == st.fault.after
}
