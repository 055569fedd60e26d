package main

import (
	"context"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/kubeproto"
)

const (
	mediaJSON     = "application/json"
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
	// writeSize is how many bytes the server gathers before a write when
	// it is not pacing events.
	writeSize = 64 << 10
)

// wantsProtobuf picks the format as kube-apiserver does for built-in
// types: the first Accept clause that is JSON or protobuf wins. It falls
// back to JSON when protobuf was not prepared.
func (s *server) wantsProtobuf(r *http.Request) bool {
	for part := range strings.SplitSeq(r.Header.Get("Accept"), ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case mediaProtobuf:
			return s.enc[true] != nil
		case mediaJSON, "application/*", "*/*":
			return false
		}
	}
	return false
}

// serveList writes one page: items [continue, continue+limit).
func (s *server) serveList(w http.ResponseWriter, r *http.Request) {
	s.stats.Lists.Add(1)
	q := r.URL.Query()
	proto := s.wantsProtobuf(r)
	enc := s.enc[proto]
	if enc == nil {
		http.Error(w, "format not prepared", http.StatusNotAcceptable)
		return
	}
	from := 0
	if c := q.Get("continue"); c != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(c, "o"))
		if err != nil || n < 0 || n > s.objects {
			http.Error(w, "bad continue token", http.StatusBadRequest)
			return
		}
		from = n
	}
	to := s.objects
	if l, err := strconv.Atoi(q.Get("limit")); err == nil && l > 0 {
		to = min(from+l, s.objects)
	}
	lm := metav1.ListMeta{ResourceVersion: strconv.FormatUint(s.listRV, 10)}
	if to < s.objects {
		lm.Continue = "o" + strconv.Itoa(to)
		left := int64(s.objects - to)
		lm.RemainingItemCount = &left
	}
	items := enc.items[from:to]

	var buf []byte
	var err error
	if proto {
		size := 0
		for _, it := range items {
			size += kubeproto.FieldLen(2, len(it))
		}
		w.Header().Set("Content-Type", mediaProtobuf)
		buf, err = appendListProtoHead(make([]byte, 0, writeSize+8<<10), s.kind.ListKind, lm, size)
	} else {
		w.Header().Set("Content-Type", mediaJSON)
		buf, err = appendListJSONHead(make([]byte, 0, writeSize+8<<10), s.kind.ListKind, lm)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	for i, it := range items {
		if proto {
			buf = kubeproto.AppendField(buf, 2, len(it))
		} else if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, it...)
		if len(buf) >= writeSize {
			if _, err := w.Write(buf); err != nil {
				return
			}
			buf = buf[:0]
		}
	}
	if proto {
		buf = append(buf, kubeproto.UnknownTrailer...)
	} else {
		buf = append(buf, "]}\n"...)
	}
	w.Write(buf)
}

// serveWatch streams the initial state if asked, then waits for /bench/go,
// then replays the events after the requested resourceVersion. It ends
// when the client goes away or timeoutSeconds pass.
func (s *server) serveWatch(w http.ResponseWriter, r *http.Request) {
	s.stats.Watches.Add(1)
	q := r.URL.Query()
	proto := s.wantsProtobuf(r)
	enc := s.enc[proto]
	if enc == nil {
		http.Error(w, "format not prepared", http.StatusNotAcceptable)
		return
	}
	ctx := r.Context()
	if t, err := strconv.Atoi(q.Get("timeoutSeconds")); err == nil && t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(t)*time.Second)
		defer cancel()
	}
	rv := q.Get("resourceVersion")
	streamingList := isTrue(q.Get("sendInitialEvents"))
	from := s.listRV // replay events with a resourceVersion above this
	if !streamingList && rv != "" && rv != "0" {
		n, err := strconv.ParseUint(rv, 10, 64)
		if err != nil {
			http.Error(w, "bad resourceVersion", http.StatusBadRequest)
			return
		}
		from = max(n, s.listRV)
	}
	if proto {
		w.Header().Set("Content-Type", mediaProtobuf+";stream=watch")
	} else {
		w.Header().Set("Content-Type", mediaJSON)
	}
	w.WriteHeader(http.StatusOK)
	flusher := w.(http.Flusher)
	flusher.Flush()

	out := &writer{w: w, buf: make([]byte, 0, writeSize+8<<10)}
	// Without sendInitialEvents, resourceVersion "" or "0" also starts with
	// the current state, as kube-apiserver does (without the bookmark).
	if streamingList || rv == "" || rv == "0" {
		if streamingList {
			s.stats.WatchLists.Add(1)
		}
		for _, it := range enc.items {
			if proto {
				out.buf = appendProtoEvent(out.buf, "ADDED", s.kind.Kind, it)
			} else {
				out.buf = appendJSONAdded(out.buf, s.kind.Kind, it)
			}
			if !out.maybeWrite() {
				return
			}
		}
		if streamingList && isTrue(q.Get("allowWatchBookmarks")) {
			out.buf = append(out.buf, enc.bookmark...)
		}
		if !out.write() {
			return
		}
		flusher.Flush()
	}

	first := int(from - s.listRV) // index of the first event to send
	if first < s.events {
		select {
		case <-s.released():
		case <-ctx.Done():
			return
		}
		if s.rate > 0 {
			s.replayPaced(ctx, out, flusher, enc, first)
		} else {
			s.replay(out, flusher, enc, first)
		}
	}
	if isTrue(q.Get("benchClose")) {
		return
	}
	<-ctx.Done()
}

// replay writes events first.. as fast as the connection takes them.
func (s *server) replay(out *writer, flusher http.Flusher, enc *encoding, first int) {
	for k := first; k < s.events; k++ {
		out.buf = enc.events[k%s.distinct].Stamp(out.buf, s.listRV+uint64(k)+1, 0)
		if !out.maybeWrite() {
			return
		}
		s.stats.EventsWritten.Add(1)
	}
	if out.write() {
		flusher.Flush()
	}
}

// replayPaced writes events first.. at s.rate per second, each stamped
// with its write time and flushed on its own.
func (s *server) replayPaced(ctx context.Context, out *writer, flusher http.Flusher, enc *encoding, first int) {
	interval := time.Duration(float64(time.Second) / s.rate)
	start := time.Now()
	for k := first; k < s.events; k++ {
		if !sleepUntil(ctx, start.Add(time.Duration(k-first)*interval)) {
			return
		}
		out.buf = enc.events[k%s.distinct].Stamp(out.buf[:0], s.listRV+uint64(k)+1, time.Now().UnixNano())
		if !out.write() {
			return
		}
		flusher.Flush()
		s.stats.EventsWritten.Add(1)
	}
}

// writer gathers bytes and writes them to the response.
type writer struct {
	w   http.ResponseWriter
	buf []byte
}

// maybeWrite writes once enough bytes are gathered; false if the client is
// gone.
func (o *writer) maybeWrite() bool {
	if len(o.buf) < writeSize {
		return true
	}
	return o.write()
}

func (o *writer) write() bool {
	if len(o.buf) == 0 {
		return true
	}
	_, err := o.w.Write(o.buf)
	o.buf = o.buf[:0]
	return err == nil
}
