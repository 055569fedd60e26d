package reflector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/internal/kinds"
	"github.com/listwatch/listwatch/internal/rest"
	"github.com/listwatch/listwatch/internal/wire"
)

// Object is what the HTTP ListerWatcher decodes: a Kubernetes object, typed
// (such as *corev1.Pod), unstructured or metadata-only.
type Object interface {
	metav1.Object
	runtime.Object
}

// Target says which objects a ListerWatcher lists and watches. The zero
// value means every object of the type's own resource, in all namespaces.
// Targets are comparable, so a Factory can share one informer per Target.
type Target struct {
	// Resource is the group, version and resource (plural) to watch. It
	// may be left empty for k8s.io/api types, whose resource is known from
	// the Go type, and must then be in the type's group and version; it is
	// required for unstructured and metadata objects and for types of your
	// own.
	Resource schema.GroupVersionResource
	// Kind is the kind of the objects, such as "Widget". For unstructured
	// objects it is optional: with it, objects of another kind are
	// refused (a watch event is skipped, a list holding one fails), and
	// list items get it filled in; without it, list items that carry no
	// kind get their list's kind without "List". Either way, an object of
	// another group or version is refused the same way. For k8s.io/api types it is found
	// from the type; for types of your own it is required.
	Kind string
	// Namespace limits the watch to one namespace; "" watches all.
	Namespace string
	// LabelSelector and FieldSelector filter objects on the server, in the
	// apiserver's syntax ("app=web,tier!=db"; "metadata.name=x").
	LabelSelector, FieldSelector string
}

// ContentType chooses how objects travel on the wire.
type ContentType int

const (
	// AutoContentType asks for protobuf for built-in types and JSON for the rest. It
	// is the default.
	AutoContentType ContentType = iota
	// JSON asks for JSON always.
	JSON
	// Protobuf asks for protobuf and fails for types without a protobuf
	// form (custom resources) and for metadata-only ListerWatchers, which
	// read JSON.
	Protobuf
)

const (
	mediaJSON     = "application/json"
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
)

// HTTPListerWatcher lists and watches one Target over HTTP, decoding objects
// as the bytes stream in: list items one at a time, watch events one per
// frame, each in one typed pass. Create it with NewListerWatcher; it is safe
// for concurrent use.
type HTTPListerWatcher[T Object] struct {
	client     *Client
	codec      *wire.Codec[T]
	gvr        schema.GroupVersionResource
	path       string     // /api/v1/namespaces/ns/pods
	query      url.Values // the selectors
	acceptList string
	acceptWait string
	opt        httpOptions
	target     Target
}

// NewListerWatcher returns a ListerWatcher for the objects of target, of Go
// type T, through c.
func NewListerWatcher[T Object](c *Client, target Target, opts ...HTTPOption) (*HTTPListerWatcher[T], error) {
	if c == nil {
		return nil, errors.New("reflector: NewListerWatcher: the Client is nil")
	}
	if c.rest == nil {
		return nil, errors.New("reflector: NewListerWatcher: the Client was not made by NewClient")
	}
	o := httpOptions{
		listTimeout: time.Minute,
		idleTimeout: 90 * time.Second,
	}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	switch o.contentType {
	case AutoContentType, JSON, Protobuf:
	default:
		return nil, fmt.Errorf("reflector: NewListerWatcher: unknown ContentType %d", o.contentType)
	}
	if err := checkSelectors(target); err != nil {
		return nil, err
	}
	lw := &HTTPListerWatcher[T]{client: c, opt: o, query: url.Values{}, target: target}
	if err := lw.resolve(target); err != nil {
		return nil, err
	}
	if err := checkPathSegments(lw.gvr, target.Namespace); err != nil {
		return nil, err
	}
	if gvk, _, err := kinds.Of[T](); err == nil && lw.gvr.GroupVersion() != gvk.GroupVersion() {
		// Every object it serves would be refused, being of another
		// group or version than T: a cache that never syncs.
		return nil, fmt.Errorf("Target.Resource %s is not in the group and version of %v, %s", describeGVR(lw.gvr), reflect.TypeFor[T](), gvk.GroupVersion())
	}
	if target.LabelSelector != "" {
		lw.query.Set("labelSelector", target.LabelSelector)
	}
	if target.FieldSelector != "" {
		lw.query.Set("fieldSelector", target.FieldSelector)
	}
	lw.path = resourcePath(lw.gvr, target.Namespace)
	return lw, nil
}

// resolve picks the resource, the codec and the Accept headers for T.
func (lw *HTTPListerWatcher[T]) resolve(t Target) error {
	codecOpts := []wire.CodecOption{wire.WithStrings(lw.client.strings)}
	if lw.opt.dropManagedFields {
		codecOpts = append(codecOpts, wire.WithoutManagedFields())
	}
	if lw.opt.internProtobuf {
		codecOpts = append(codecOpts, wire.WithProtobufInterning())
	}
	if lw.opt.sharedParts {
		codecOpts = append(codecOpts, wire.WithSharedParts())
	}
	var codec any
	protobuf := false
	switch any(*new(T)).(type) {
	case *unstructured.Unstructured:
		if t.Resource.Resource == "" || t.Resource.Version == "" {
			return errors.New("an unstructured ListerWatcher needs Target.Resource, with its version")
		}
		lw.gvr = t.Resource
		codec = wire.UnstructuredCodec(t.Resource.GroupVersion().WithKind(t.Kind), codecOpts...)
	case *metav1.PartialObjectMetadata:
		if t.Resource.Resource == "" || t.Resource.Version == "" {
			return errors.New("a metadata ListerWatcher needs Target.Resource, with its version")
		}
		if lw.opt.contentType == Protobuf {
			return errors.New("a metadata ListerWatcher reads JSON; use AutoContentType (the default: protobuf where a type has it) or JSON")
		}
		lw.gvr = t.Resource
		codec = wire.MetadataCodec(t.Resource.GroupVersion().WithKind(t.Kind), codecOpts...)
		const as = ";as=PartialObjectMetadata%s;g=meta.k8s.io;v=v1"
		lw.acceptList = mediaJSON + fmt.Sprintf(as, "List") + ", " + mediaJSON
		lw.acceptWait = mediaJSON + fmt.Sprintf(as, "") + ", " + mediaJSON
		lw.codec = codec.(*wire.Codec[T])
		return nil
	default:
		gvk, gvr, err := kinds.Of[T]()
		if err == nil && t.Kind != "" && t.Kind != gvk.Kind {
			return fmt.Errorf("Target.Kind %q is not the kind of %v, %s", t.Kind, reflect.TypeFor[T](), gvk.Kind)
		}
		if t.Resource.Resource == "" && t.Resource != (schema.GroupVersionResource{}) {
			return fmt.Errorf("Target.Resource %s has a group or version but no resource: give all three, or none (%v's own)", t.Resource.GroupVersion(), reflect.TypeFor[T]())
		}
		if t.Resource.Resource != "" {
			if t.Resource.Version == "" {
				return errors.New("Target.Resource needs its version")
			}
			unknown := err != nil // T is not a k8s.io/api type
			gvr, err = t.Resource, nil
			switch {
			case t.Kind != "":
				gvk = gvr.GroupVersion().WithKind(t.Kind)
				if unknown { // a CRD names its list kind as it likes
					codecOpts = append(codecOpts, wire.WithAnyListKind())
				}
			case unknown:
				return fmt.Errorf("Target.Kind is needed: %v is not a k8s.io/api type, whose kind is known", reflect.TypeFor[T]())
			}
		}
		if err != nil {
			return err
		}
		lw.gvr = gvr
		c, err := wire.TypedCodec[T](gvk, codecOpts...)
		if err != nil {
			return err
		}
		codec, protobuf = c, c.SupportsProtobuf()
	}
	lw.codec = codec.(*wire.Codec[T])
	switch lw.opt.contentType {
	case JSON:
		protobuf = false
	case Protobuf:
		if !protobuf {
			return fmt.Errorf("%s cannot be decoded from protobuf; use AutoContentType (the default: protobuf where a type has it) or JSON", lw.gvr.Resource)
		}
	}
	if protobuf {
		lw.acceptList = mediaProtobuf + ", " + mediaJSON
		lw.acceptWait = mediaProtobuf + ", " + mediaJSON
	} else {
		lw.acceptList, lw.acceptWait = mediaJSON, mediaJSON
	}
	return nil
}

// sharingParts returns a copy of lw whose objects share their identical
// parts as they are decoded (WithSharing without a transform).
func (lw *HTTPListerWatcher[T]) sharingParts() (ListerWatcher[T], error) {
	c := *lw
	c.opt.sharedParts = true
	if err := c.resolve(c.target); err != nil {
		return nil, err
	}
	return &c, nil
}

// forgetSharedParts empties the table of the parts its objects share as
// they are decoded; the Reflector calls it before every list.
func (lw *HTTPListerWatcher[T]) forgetSharedParts() { lw.codec.ForgetSharedParts() }

// checkPathSegments refuses a group, version, resource or namespace that
// would not stay one segment of the request's path, as client-go does: a
// namespace ".." would be cleaned away, and the informer would list every
// namespace.
func checkPathSegments(gvr schema.GroupVersionResource, namespace string) error {
	for _, seg := range []struct{ what, value string }{
		{"group", gvr.Group}, {"version", gvr.Version}, {"resource", gvr.Resource}, {"namespace", namespace},
	} {
		if seg.value == "" {
			continue
		}
		if msgs := content.IsPathSegmentName(seg.value); len(msgs) > 0 {
			return fmt.Errorf("invalid %s %q: %s", seg.what, seg.value, strings.Join(msgs, "; "))
		}
	}
	return nil
}

// checkSelectors parses the Target's selectors as kube-apiserver does, so
// that one that cannot parse fails here, once, rather than as a 400 Bad
// Request on every list and watch the Reflector retries. (A field the
// resource cannot be selected by is still the server's to refuse.)
func checkSelectors(t Target) error {
	if _, err := labels.Parse(t.LabelSelector); err != nil {
		return fmt.Errorf("invalid Target.LabelSelector %q: %w", t.LabelSelector, err)
	}
	if _, err := fields.ParseSelector(t.FieldSelector); err != nil {
		return fmt.Errorf("invalid Target.FieldSelector %q: %w", t.FieldSelector, err)
	}
	return nil
}

// resourcePath is the REST path of a resource's collection.
func resourcePath(gvr schema.GroupVersionResource, namespace string) string {
	var b strings.Builder
	if gvr.Group == "" {
		b.WriteString("/api/" + gvr.Version)
	} else {
		b.WriteString("/apis/" + gvr.Group + "/" + gvr.Version)
	}
	if namespace != "" {
		b.WriteString("/namespaces/" + url.PathEscape(namespace))
	}
	b.WriteString("/" + gvr.Resource)
	return b.String()
}

// Resource returns the group, version and resource being watched.
func (lw *HTTPListerWatcher[T]) Resource() schema.GroupVersionResource { return lw.gvr }

// Target returns the Target the ListerWatcher was made for.
func (lw *HTTPListerWatcher[T]) Target() Target { return lw.target }

// List fetches one page, handing each item to add as it is decoded. The
// request is bounded by the list timeout (WithListTimeout), so a server that
// trickles its answer cannot hold the caller forever. A 2xx body is read as
// protobuf when its Content-Type says so, else as JSON whatever the
// Content-Type says. A 2xx body that is a Status or an object of another
// kind is an error (client-go reads a Success Status, or an object of
// another kind, as an empty list), and so is a JSON body without "items"
// (client-go reads {} as an empty list: its cache empties, its handlers are
// told every object was deleted), an item of a namespace other than the
// Target's, and a page that counts items left (remainingItemCount) but has
// no continue token to fetch them: kube-apiserver sends none of these. The list's kind is checked, not its
// apiVersion: a PodList is read as pods whatever apiVersion it names
// (client-go's scheme refuses a kind at a version it has not registered).
func (lw *HTTPListerWatcher[T]) List(ctx context.Context, opts ListOptions, add func(T) error) (ListMeta, error) {
	q := lw.values()
	if opts.Limit > 0 {
		q.Set("limit", strconv.FormatInt(opts.Limit, 10))
	}
	if opts.Continue != "" {
		q.Set("continue", opts.Continue)
	}
	if opts.ResourceVersion != "" {
		q.Set("resourceVersion", opts.ResourceVersion)
	}
	if opts.ResourceVersionMatch != "" {
		q.Set("resourceVersionMatch", string(opts.ResourceVersionMatch))
	}
	bound := lw.opt.listTimeout
	if t := lw.client.timeout; t > 0 && t < bound {
		bound = t // Config.Timeout
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	// Said the same whether the bound passed before the answer or in its
	// body.
	timedOut := func(err error) error {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && parent.Err() == nil {
			return fmt.Errorf("list did not complete within %s (%w): %w", bound, context.DeadlineExceeded, err)
		}
		return err
	}
	resp, err := lw.client.get(ctx, lw.path, q, lw.acceptList)
	if err != nil {
		return ListMeta{}, timedOut(lw.hint(err))
	}
	defer resp.Body.Close()

	if ns := lw.target.Namespace; ns != "" {
		// An item of another namespace is no item of this list (a proxy
		// that mixed up its answers): taken, it would stay cached. One
		// without a namespace is taken as it comes (a server that leaves
		// it out of its items).
		next := add
		add = func(obj T) error {
			if got := obj.GetNamespace(); got != ns && got != "" {
				return fmt.Errorf("%w: list item %s in namespace %q, not the namespace listed, %q", wire.ErrMalformed, obj.GetName(), got, ns)
			}
			return next(obj)
		}
	}
	var meta wire.ListMeta
	if isProtobuf(resp.Header.Get("Content-Type")) {
		meta, err = wire.DecodeProtobufList(resp.Body, lw.codec, lw.opt.maxItemBytes, add)
	} else {
		meta, err = wire.DecodeJSONList(resp.Body, lw.codec, lw.opt.maxItemBytes, add)
	}
	if err != nil {
		var st *wire.StatusError
		if errors.As(err, &st) {
			return ListMeta{}, rest.FromStatus(&st.Status)
		}
		return ListMeta{}, timedOut(err)
	}
	if n := meta.RemainingItemCount; meta.Continue == "" && n != nil && *n > 0 {
		// kube-apiserver counts the items left only on a page with a
		// continue token: this page lost its token on the way (a
		// proxy), and taken as the last it would drop the rest.
		return ListMeta{}, fmt.Errorf("%w: list page says %d items remain but has no continue token", wire.ErrMalformed, *n)
	}
	// Read the end of the body (a chunked body's last chunk may come after
	// the list's closing byte), so that an HTTP/1.1 connection goes back
	// to the pool rather than being closed.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	return ListMeta{ResourceVersion: meta.ResourceVersion, Continue: meta.Continue}, nil
}

// Watch opens a watch stream. The answer must come within the idle timeout
// (WithWatchIdleTimeout), and its body is then read through a watchdog: if
// no byte arrives for that long, the stream is closed and Next fails, so a
// stalled stream is reopened rather than trusted. Any 2xx answer opens the
// stream (client-go's wants 200); the stream then ends or fails as its body
// says.
func (lw *HTTPListerWatcher[T]) Watch(ctx context.Context, opts WatchOptions) (Watcher[T], error) {
	q := lw.values()
	q.Set("watch", "1")
	if opts.ResourceVersion != "" {
		q.Set("resourceVersion", opts.ResourceVersion)
	}
	if opts.ResourceVersionMatch != "" {
		q.Set("resourceVersionMatch", string(opts.ResourceVersionMatch))
	}
	if opts.AllowBookmarks {
		q.Set("allowWatchBookmarks", "true")
	}
	if opts.SendInitialEvents {
		q.Set("sendInitialEvents", "true")
	}
	if opts.TimeoutSeconds > 0 {
		q.Set("timeoutSeconds", strconv.FormatInt(opts.TimeoutSeconds, 10))
	}
	ctx, cancel := context.WithCancel(ctx)
	var answer *time.Timer
	if lw.opt.idleTimeout > 0 {
		// A request sent on a connection that stopped forwarding (a
		// pooled HTTP/1.1 connection gone half-open) gets no answer and
		// no error: give up on it as on a silent stream.
		answer = time.AfterFunc(lw.opt.idleTimeout, cancel)
	}
	resp, err := lw.client.get(ctx, lw.path, q, lw.acceptWait)
	if answer != nil && !answer.Stop() {
		if err == nil {
			resp.Body.Close()
		}
		cancel()
		return nil, fmt.Errorf("%w for %s", ErrNoAnswer, lw.opt.idleTimeout)
	}
	if err != nil {
		cancel()
		return nil, lw.hint(err)
	}
	body := newWatchdog(resp.Body, lw.opt.idleTimeout, cancel)
	w := &httpWatcher[T]{body: body, cancel: cancel, namespace: lw.target.Namespace}
	workers, maxFrame := lw.opt.workers(), lw.opt.maxFrameBytes
	switch proto := isProtobuf(resp.Header.Get("Content-Type")); {
	case workers > 1 && proto:
		d := wire.NewParallelProtobufWatchDecoder(body, lw.codec, maxFrame, workers)
		w.next, w.stop = d.Next, d.Close
	case workers > 1:
		d := wire.NewParallelJSONWatchDecoder(body, lw.codec, maxFrame, workers)
		w.next, w.stop = d.Next, d.Close
	case proto:
		w.next = wire.NewProtobufWatchDecoder(body, lw.codec, maxFrame).Next
	default:
		w.next = wire.NewJSONWatchDecoder(body, lw.codec, maxFrame).Next
	}
	return w, nil
}

func (lw *HTTPListerWatcher[T]) values() url.Values {
	q := make(url.Values, len(lw.query)+6)
	for k, v := range lw.query {
		q[k] = v
	}
	return q
}

func isProtobuf(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == mediaProtobuf
}

// hint adds to a 404 what usually causes it: a resource that is not
// installed (a CustomResourceDefinition missing) or, when a namespace was
// asked for, a cluster-scoped resource, which has no namespaced path.
func (lw *HTTPListerWatcher[T]) hint(err error) error {
	s, ok := statusOf(err)
	if !ok || s.Code != http.StatusNotFound {
		return err
	}
	what := lw.gvr.Resource
	if lw.gvr.Group != "" {
		what += "." + lw.gvr.Group
	}
	served := fmt.Sprintf("is %s served in version %s? A CRD missing, deleted, or not serving that version answers 404", what, lw.gvr.Version)
	if lw.target.Namespace != "" {
		return fmt.Errorf("%w (is %s cluster-scoped? Target.Namespace must then be empty. Or %s)", err, what, served)
	}
	return fmt.Errorf("%w (%s)", err, served)
}

// describeGVR spells gvr as "deployments.v1.apps" does, the core group's as
// "pods.v1".
func describeGVR(gvr schema.GroupVersionResource) string {
	return strings.TrimSuffix(gvr.Resource+"."+gvr.Version+"."+gvr.Group, ".")
}
