package apisim

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/kinds"
	"github.com/listwatch/listwatch/internal/kubeproto"
)

// page is the result of one LIST request, read under the lock and written
// after it is released.
type page struct {
	items     []*version
	rv        uint64 // the snapshot's resourceVersion
	cont      string
	remaining *int64
}

// serveList answers a LIST with kube-apiserver's resourceVersion rules:
//
//   - resourceVersion unset: the newest state (a consistent read);
//   - "0": any state; the simulator serves the newest, and ignores limit
//     as the watch cache does;
//   - N with resourceVersionMatch=Exact, or N with a limit and no match
//     (the legacy rule): the state at N, 410 Expired if N was compacted;
//   - N with NotOlderThan, or N without limit and without match: the
//     newest state once it is at least N;
//   - continue: the state at the token's snapshot, from the token's key;
//     410 Expired (with a token to go on from the newest state) once that
//     snapshot was compacted or the token outlived WithContinueTTL.
//
// A resourceVersion ahead of the server waits up to WithTooLargeWait for
// it, then fails with 504 Timeout, cause ResourceVersionTooLarge.
func (s *Server) serveList(w http.ResponseWriter, r *http.Request, req request) {
	ef := errorFormat(r)
	f, err := negotiate(r, req.c, kindList)
	if err != nil {
		writeStatus(w, r, err, ef)
		return
	}
	q, err := s.parseQuery(r, req)
	if err != nil {
		writeStatus(w, r, err, ef)
		return
	}
	p, err := s.readPage(r.Context(), req.c, q)
	if err != nil {
		writeStatus(w, r, err, ef)
		return
	}
	s.writeList(w, r, req.c, f, p)
}

// readPage picks the snapshot and reads one page from it.
//
// With a continue token, the token is checked first, then that no
// resourceVersion but "" or "0" comes with it, as kube-apiserver's
// storage.ValidateListOptions does; "0" reads the rest in one page there
// too (the watch cache's list limit is 0 for it, continue or not).
func (s *Server) readPage(ctx context.Context, c *collection, q *query) (*page, error) {
	var (
		startKey string
		readRV   uint64 // 0: the newest state
		exact    bool
		tokenRV  int64
		limit    = q.Limit
		err      error
	)
	if q.Continue != "" {
		if tokenRV, startKey, err = decodeContinue(q.Continue); err != nil {
			return nil, err
		}
		if q.ResourceVersion != "" && q.ResourceVersion != "0" {
			return nil, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
	}
	rv, err := parseRV(q.ResourceVersion, false)
	if err != nil {
		return nil, err
	}
	if q.ResourceVersion == "0" {
		limit = 0
	}
	switch {
	case q.Continue != "":
		if tokenRV > 0 {
			readRV, exact = uint64(tokenRV), true
		}
	case rv > 0 && (q.ResourceVersionMatch == metav1.ResourceVersionMatchExact ||
		(q.ResourceVersionMatch == "" && limit > 0)):
		readRV, exact = rv, true
	}
	// A server behind the one that issued the continue token (another
	// apiserver, lagging) waits for the token's resourceVersion, and
	// answers "too large" if it does not get there, as kube-apiserver's
	// watch cache does: reading its own state would stamp an older state
	// with the token's resourceVersion.
	if wait := max(rv, readRV); wait > 0 {
		if err := s.waitForRV(ctx, wait); err != nil {
			return nil, err
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if readRV == 0 {
		readRV = s.rv
	}
	if exact && readRV < c.compactedRV {
		if q.Continue != "" {
			return nil, errContinueExpired(startKey)
		}
		return nil, apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
	}
	if q.Continue != "" && tokenRV > 0 && s.tokenExpired(readRV) {
		return nil, errContinueExpired(startKey)
	}
	p := &page{rv: readRV}
	prefix := scopePrefix(c.res, q.filter.namespace)
	count := q.filter.empty()
	var more int64
	c.store.scan(prefix, prefix+startKey, readRV, func(v *version) bool {
		if limit > 0 && int64(len(p.items)) >= limit {
			more++
			return count // with a selector, knowing there is more is enough
		}
		if q.filter.matches(v) {
			p.items = append(p.items, v)
		}
		return true
	})
	if more > 0 && len(p.items) > 0 {
		last := p.items[len(p.items)-1]
		p.cont = encodeContinue(int64(readRV), last.key[len(prefix):]+"\x00")
		if count {
			p.remaining = &more
		}
		s.noteTokenIssued(readRV)
	}
	return p, nil
}

// waitForRV blocks until the server's resourceVersion reaches rv, for at
// most the too-large wait.
func (s *Server) waitForRV(ctx context.Context, rv uint64) error {
	timer := time.NewTimer(s.opts.tooLargeWait)
	defer timer.Stop()
	for {
		s.mu.Lock()
		cur := s.rv
		if cur >= rv {
			s.mu.Unlock()
			return nil
		}
		if s.rvWaiters == nil {
			s.rvWaiters = make(chan struct{})
		}
		wake := s.rvWaiters
		s.mu.Unlock()
		select {
		case <-wake:
		case <-timer.C:
			return errTooLargeRV(rv, cur)
		case <-ctx.Done():
			return ctx.Err()
		case <-s.closing:
			return errServerClosing()
		}
	}
}

// writeList writes a page as a PodList-like object (or a
// PartialObjectMetadataList), item bytes reused from storage.
func (s *Server) writeList(w http.ResponseWriter, r *http.Request, c *collection, f format, p *page) {
	out := newStream(s, w, r, f, false)
	lm := metav1.ListMeta{ResourceVersion: strconv.FormatUint(p.rv, 10), Continue: p.cont, RemainingItemCount: p.remaining}
	apiVersion, kind := c.res.APIVersion(), c.res.ListKind
	metaField, itemsField := c.listMetaField, c.listItemsField
	if f.partial {
		apiVersion, kind, metaField, itemsField = f.metaAPIVersion(), "PartialObjectMetadataList", 1, 2
	}
	items := make([]encoded, len(p.items))
	out.lastRV = p.rv
	for i, v := range p.items {
		out.items = i // lets a mutation due at item i apply
		items[i] = out.encodeFor(c, v, f)
		out.lastRV = v.rv
	}
	out.items, out.lastRV = 0, 0
	if f.proto {
		lmBytes, _ := lm.Marshal() // plain struct: cannot fail
		raw := kubeproto.FieldLen(metaField, len(lmBytes))
		for _, it := range items {
			raw += kubeproto.FieldLen(itemsField, len(it.body))
		}
		out.header(mediaProtobuf, http.StatusOK)
		head := kubeproto.AppendEnvelopeHead(nil, apiVersion, kind, raw)
		head = kubeproto.AppendField(head, metaField, len(lmBytes))
		out.write(append(head, lmBytes...))
		for i, it := range items {
			frame := kubeproto.AppendField(out.scratch[:0], itemsField, len(it.body))
			out.scratch = append(frame, it.body...)
			out.item(out.scratch, p.items[i].rv)
		}
		out.write([]byte(kubeproto.UnknownTrailer))
		out.finish()
		return
	}
	lmJSON, _ := json.Marshal(lm) // plain struct: cannot fail
	out.header(mediaJSON, http.StatusOK)
	out.write([]byte(`{"kind":"` + kind + `","apiVersion":"` + apiVersion + `","metadata":`))
	out.write(lmJSON)
	out.write([]byte(`,"items":[`))
	for i, it := range items {
		out.scratch = out.scratch[:0]
		if i > 0 {
			out.scratch = append(out.scratch, ',')
		}
		if !f.partial {
			out.scratch = c.appendListItem(out.scratch, it.body)
		} else {
			out.scratch = append(out.scratch, it.body...)
		}
		out.item(out.scratch, p.items[i].rv)
	}
	out.write([]byte("]}\n"))
	out.finish()
}

// appendListItem appends an object's JSON as an item of its list.
// kube-apiserver encodes a list of a built-in kind as its Go type (a
// PodList of Pods), whose items carry no kind or apiVersion: only the list
// does. So an item of a built-in kind goes without them; a custom
// resource's items (unstructured) keep theirs, and so does an item a fault
// gave another kind.
func (c *collection) appendListItem(b, obj []byte) []byte {
	switch {
	case !kinds.BuiltIn(c.res.Group): // a custom resource, whatever the scheme knows of its kind
	case c.typed != nil:
		// Encoded from its Go type: TypeMeta's fields come first.
		typeMeta := `{"kind":"` + c.res.Kind + `","apiVersion":"` + c.res.APIVersion() + `",`
		if bytes.HasPrefix(obj, []byte(typeMeta)) {
			b = append(b, '{')
			return append(b, obj[len(typeMeta):]...)
		}
	case c.known != nil:
		// Held unstructured, encoded with its keys sorted: slow, but no
		// benchmark lists such a kind.
		var fields map[string]json.RawMessage
		if json.Unmarshal(obj, &fields) == nil &&
			string(fields["kind"]) == strconv.Quote(c.res.Kind) &&
			string(fields["apiVersion"]) == strconv.Quote(c.res.APIVersion()) {
			delete(fields, "kind")
			delete(fields, "apiVersion")
			if item, err := json.Marshal(fields); err == nil {
				return append(b, item...)
			}
		}
	}
	return append(b, obj...)
}
