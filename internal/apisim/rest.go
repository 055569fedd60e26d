package apisim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/internal/kubeproto"
	"github.com/listwatch/listwatch/internal/strategy"
)

// Verb names what a request does, as kube-apiserver's audit log and
// authorization do.
type Verb string

// The verbs the simulator serves.
const (
	VerbList   Verb = "list"
	VerbWatch  Verb = "watch"
	VerbGet    Verb = "get"
	VerbCreate Verb = "create"
	VerbUpdate Verb = "update"
	VerbDelete Verb = "delete"
)

// maxBodyBytes bounds request bodies (kube-apiserver allows 3 MiB; tests
// of large objects may go beyond).
const maxBodyBytes = 64 << 20

// subresources are the subresources simulated: of every kind with a
// status, "status"; of Namespaces, "finalize"; of
// CertificateSigningRequests, "approval".
var subresources = []string{"status", "finalize", "approval"}

// csrResource is the resource whose objects have an approval subresource.
var csrResource = schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}

// request is a routed API request.
type request struct {
	verb      Verb
	c         *collection
	namespace string // from the path; "" when none
	name      string // from the path; "" for collections
	// subresource is the object's subresource the path names: "status",
	// "finalize" (a Namespace's) or "approval" (a
	// CertificateSigningRequest's); "" for none.
	subresource string
	watchPath   bool // the legacy /watch/ path prefix
}

// route dispatches a request by path and method.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/healthz", "/readyz", "/livez":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
		return
	case "/version":
		s.serveVersion(w)
		return
	}
	w.Header().Set("Cache-Control", "no-cache, private")
	if s.opts.bearerToken != "" && r.Header.Get("Authorization") != "Bearer "+s.opts.bearerToken {
		writeStatus(w, r, errUnauthorized(), errorFormat(r))
		return
	}
	gv, rest, ok := splitAPIPath(r.URL.Path)
	if !ok || !s.serves(gv) {
		// Outside the served API groups kube-apiserver's mux answers, not
		// its API machinery: plain text.
		http.NotFound(w, r)
		return
	}
	if len(rest) == 0 {
		s.serveDiscovery(w, r, gv)
		return
	}
	req, err := s.resolve(r, gv, rest)
	if err != nil {
		writeStatus(w, r, err, errorFormat(r))
		return
	}
	s.countRequest(req.verb, req.c.res.Group, req.resource())
	s.log.Debug("apisim: request", "verb", req.verb, "url", r.URL.String())
	if inj := s.takeFault(req, r); inj != nil {
		s.log.Info("apisim: injecting fault", "fault", inj.fault.String(), "verb", req.verb, "url", r.URL.String())
		if done := inj.fault.before(s, w, r, req); done {
			return
		}
		r = r.WithContext(withFault(r.Context(), inj.fault))
	}
	switch req.verb {
	case VerbList:
		s.serveList(w, r, req)
	case VerbWatch:
		s.serveWatch(w, r, req)
	case VerbGet:
		s.serveGet(w, r, req)
	case VerbCreate, VerbUpdate:
		s.serveWrite(w, r, req)
	case VerbDelete:
		s.serveDelete(w, r, req)
	}
}

// serves reports whether the server has the group (version) gv: core v1
// always, other groups when a resource of theirs is registered. An empty
// group or version stands for any.
func (s *Server) serves(gv schema.GroupVersion) bool {
	if gv.Group == "" && (gv.Version == "" || gv.Version == "v1") {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for gvr := range s.collections {
		if gvr.Group == gv.Group && (gv.Version == "" || gvr.Version == gv.Version) {
			return true
		}
	}
	return false
}

// splitAPIPath splits /api/v1/... and /apis/g/v/... into the group version
// and the path segments after it. A path that stops at or before the
// version (discovery) returns no segments and a partial group version.
func splitAPIPath(p string) (schema.GroupVersion, []string, bool) {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	switch {
	case parts[0] == "api" && len(parts) == 1:
		return schema.GroupVersion{}, nil, true
	case parts[0] == "api":
		return schema.GroupVersion{Version: parts[1]}, parts[2:], true
	case parts[0] == "apis" && len(parts) <= 2:
		g := ""
		if len(parts) == 2 {
			g = parts[1]
		}
		return schema.GroupVersion{Group: g}, nil, true
	case parts[0] == "apis":
		return schema.GroupVersion{Group: parts[1], Version: parts[2]}, parts[3:], true
	}
	return schema.GroupVersion{}, nil, false
}

// resolve maps the path segments after the group version to a collection,
// namespace, name and verb.
func (s *Server) resolve(r *http.Request, gv schema.GroupVersion, rest []string) (request, error) {
	var req request
	if rest[0] == "watch" {
		req.watchPath, rest = true, rest[1:]
	}
	// namespaces/{ns}/{resource}..., but namespaces/{name}/status and
	// namespaces/{name}/finalize are a Namespace's own subresources, as
	// kube-apiserver's RequestInfo reads them.
	if len(rest) >= 3 && rest[0] == "namespaces" && !(len(rest) == 3 && (rest[2] == "status" || rest[2] == "finalize")) {
		req.namespace, rest = rest[1], rest[2:]
	}
	if len(rest) == 0 || len(rest) > 3 || (len(rest) == 3 && (!slices.Contains(subresources, rest[2]) || req.watchPath)) {
		return req, errNoSuchPath()
	}
	if len(rest) >= 2 {
		req.name = rest[1]
		if req.name == "" && len(rest) == 3 {
			return req, apierrors.NewBadRequest("name must be provided")
		}
	}
	if len(rest) == 3 {
		req.subresource = rest[2]
	}
	s.mu.Lock()
	c, ok := s.collections[gv.WithResource(rest[0])]
	s.mu.Unlock()
	if !ok || (req.namespace != "" && !c.res.Namespaced) || (req.name != "" && c.res.Namespaced && req.namespace == "") ||
		(req.subresource == "status" && !c.status.has) ||
		(req.subresource == "finalize" && c.res.GroupResource() != schema.GroupResource{Resource: "namespaces"}) ||
		(req.subresource == "approval" && c.res.GroupResource() != csrResource) {
		return req, errNoSuchPath()
	}
	req.c = c
	// ?watch=1 on an object's own path is a GET, as on kube-apiserver:
	// only collections turn a GET into a watch that way.
	watch := req.watchPath || (req.name == "" && isTrue(r.URL.Query().Get("watch")))
	switch {
	case req.subresource == "finalize" && r.Method != http.MethodPut:
		// A Namespace's finalize REST serves only updates.
		return req, errMethodNotAllowed(c, strings.ToLower(r.Method))
	case r.Method == http.MethodGet && watch:
		req.verb = VerbWatch
	case r.Method == http.MethodGet && req.name == "":
		req.verb = VerbList
	case r.Method == http.MethodGet:
		req.verb = VerbGet
	case r.Method == http.MethodPost && req.name == "":
		req.verb = VerbCreate
	case r.Method == http.MethodPut && req.name != "":
		req.verb = VerbUpdate
	case r.Method == http.MethodDelete && req.name != "" && req.subresource == "":
		req.verb = VerbDelete
	default:
		return req, errMethodNotAllowed(c, strings.ToLower(r.Method))
	}
	return req, nil
}

// resource names what a request is made to, as RBAC names it: the
// resource ("pods"), or its subresource ("pods/status",
// "namespaces/finalize", "certificatesigningrequests/approval").
func (req request) resource() string {
	if req.subresource != "" {
		return req.c.res.Resource + "/" + req.subresource
	}
	return req.c.res.Resource
}

func isTrue(v string) bool {
	return v != "" && v != "0" && !strings.EqualFold(v, "false")
}

// serveGet returns one object (of its status subresource too: the whole
// object, as kube-apiserver answers), with kube-apiserver's
// resourceVersion rules for a GET, those of a list without limit:
//
//   - resourceVersion unset: the newest state (a read from etcd);
//   - "0": any state; the simulator serves the newest;
//   - N: the newest state once it is at least N (the watch cache's
//     answer): a resourceVersion ahead of the server waits up to
//     WithTooLargeWait for it, then fails with 504 Timeout, cause
//     ResourceVersionTooLarge.
//
// A resourceVersion that is not a number gets the 500 a watch gets: the
// storage layer's error, which the GET handler passes on unwrapped.
func (s *Server) serveGet(w http.ResponseWriter, r *http.Request, req request) {
	f, err := negotiate(r, req.c, kindObject)
	if err != nil {
		writeStatus(w, r, err, errorFormat(r))
		return
	}
	rv, err := parseRV(r.URL.Query().Get("resourceVersion"), true)
	if err == nil && rv > 0 {
		err = s.waitForRV(r.Context(), rv)
	}
	if err != nil {
		writeStatus(w, r, err, errorFormat(r))
		return
	}
	s.mu.Lock()
	v := req.c.store.current(objectKey(req.namespace, req.name))
	s.mu.Unlock()
	if v == nil {
		writeStatus(w, r, notFound(req.c, req.name), errorFormat(r))
		return
	}
	writeObject(w, req.c.encodedVersion(v, f), f, http.StatusOK)
}

// serveWrite creates (POST) or replaces (PUT) an object, or its status, a
// Namespace's finalizers (PUT .../finalize) or a
// CertificateSigningRequest's conditions (PUT .../approval).
func (s *Server) serveWrite(w http.ResponseWriter, r *http.Request, req request) {
	f, err := negotiate(r, req.c, kindObject)
	if err != nil {
		writeStatus(w, r, err, errorFormat(r))
		return
	}
	obj, err := readBody(r, req.c)
	if err != nil {
		writeStatus(w, r, err, errorFormat(r))
		return
	}
	var v *version
	code := http.StatusOK
	switch {
	case req.verb == VerbCreate && strategy.RefusedOnCreate(metaResourceVersion(obj)):
		// As kube-apiserver's storage does: a create that carries a
		// resourceVersion (an object re-created from a cached copy, say)
		// is refused, with a 500.
		err = apierrors.NewInternalError(errors.New("resourceVersion should not be set on objects to be created"))
	case req.verb == VerbCreate:
		v, err = s.create(req.c, obj, req.namespace)
		code = http.StatusCreated
	default:
		if name := metaName(obj); name != req.name {
			writeStatus(w, r, apierrors.NewBadRequest(fmt.Sprintf(
				"the name of the object (%s) does not match the name on the URL (%s)", name, req.name)), errorFormat(r))
			return
		}
		kind := writePut
		switch req.subresource {
		case "status":
			kind = writePutStatus
		case "finalize":
			kind = writePutFinalize
		case "approval":
			kind = writePutApproval
		}
		var created bool
		if v, created, err = s.update(req.c, obj, req.namespace, kind); created {
			code = http.StatusCreated
		}
	}
	if err != nil {
		writeStatus(w, r, err, errorFormat(r))
		return
	}
	writeObject(w, req.c.encodedVersion(v, f), f, code)
}

// serveDelete deletes an object. Pods answer with the deleted object,
// other resources with a Success status, as kube-apiserver does.
func (s *Server) serveDelete(w http.ResponseWriter, r *http.Request, req request) {
	f, err := negotiate(r, req.c, kindObject)
	if err != nil {
		writeStatus(w, r, err, errorFormat(r))
		return
	}
	var opts metav1.DeleteOptions
	if body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBodyBytes)); err == nil && len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &opts); err != nil {
			writeStatus(w, r, apierrors.NewBadRequest(fmt.Sprintf("decoding DeleteOptions: %v", err)), errorFormat(r))
			return
		}
	}
	v, err := s.remove(req.c, req.namespace, req.name, opts.Preconditions)
	if err != nil {
		writeStatus(w, r, err, errorFormat(r))
		return
	}
	if req.c.res.GroupResource() == (schema.GroupResource{Resource: "pods"}) {
		writeObject(w, req.c.encodedVersion(v, f), f, http.StatusOK)
		return
	}
	status := &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details: &metav1.StatusDetails{Name: req.name, Group: req.c.res.Group,
			Kind: req.c.res.Resource, UID: v.obj.(metav1.Object).GetUID()},
	}
	body, ctype := encodeStatus(status, errorFormat(r))
	w.Header().Set("Content-Type", ctype)
	_, _ = w.Write(body)
}

// writeObject writes a single-object response.
func writeObject(w http.ResponseWriter, e encoded, f format, code int) {
	if f.proto {
		w.Header().Set("Content-Type", mediaProtobuf)
		w.WriteHeader(code)
		_, _ = w.Write(kubeproto.Envelope(e.apiVersion, e.kind, e.body))
		return
	}
	w.Header().Set("Content-Type", mediaJSON)
	w.WriteHeader(code)
	_, _ = w.Write(append(e.body[:len(e.body):len(e.body)], '\n'))
}

// readBody decodes a request body, JSON or (for built-in types) protobuf.
func readBody(r *http.Request, c *collection) (runtime.Object, error) {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBodyBytes))
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading the request body: %v", err))
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), mediaProtobuf) && c.typed != nil {
		obj, err := c.decodeProtobuf(body)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		return obj, nil
	}
	obj, err := c.decode(body)
	if _, refused := err.(*apierrors.StatusError); refused {
		return nil, err
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body of the request was in an unknown format: %v", err))
	}
	return obj, nil
}

// decodeProtobuf parses "k8s\x00" + Unknown into the canonical typed form.
func (c codec) decodeProtobuf(body []byte) (runtime.Object, error) {
	if !bytes.HasPrefix(body, []byte(kubeproto.Magic)) {
		return nil, fmt.Errorf("protobuf body does not start with the k8s magic prefix")
	}
	var unk runtime.Unknown
	if err := unk.Unmarshal(body[len(kubeproto.Magic):]); err != nil {
		return nil, fmt.Errorf("decoding protobuf envelope: %w", err)
	}
	obj := reflect.New(c.typed.Elem()).Interface().(runtime.Object)
	if err := obj.(interface{ Unmarshal([]byte) error }).Unmarshal(unk.Raw); err != nil {
		return nil, fmt.Errorf("decoding protobuf %s: %w", c.res.Kind, err)
	}
	return obj, nil
}

func metaName(obj runtime.Object) string {
	if m, ok := obj.(metav1.Object); ok {
		return m.GetName()
	}
	return ""
}

func metaResourceVersion(obj runtime.Object) string {
	if m, ok := obj.(metav1.Object); ok {
		return m.GetResourceVersion()
	}
	return ""
}
