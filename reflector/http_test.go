package reflector_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/reflector"
)

// TestProtobufIsRefusedWhereItCannotBeRead: asking for protobuf is an error
// for what is read as JSON (custom resources, metadata), never a silent
// JSON.
func TestProtobufIsRefusedWhereItCannotBeRead(t *testing.T) {
	client, err := reflector.NewClient(&reflector.Config{Host: "http://127.0.0.1:1"})
	require.NoError(t, err)
	pb := reflector.WithContentType(reflector.Protobuf)

	_, err = reflector.NewListerWatcher[*corev1.Pod](client, reflector.Target{}, pb)
	assert.NoError(t, err, "pods have a protobuf form")

	crd := reflector.Target{Resource: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, Kind: "Widget"}
	_, err = reflector.NewListerWatcher[*unstructured.Unstructured](client, crd, pb)
	assert.ErrorContains(t, err, "protobuf")

	pods := reflector.Target{Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod"}
	_, err = reflector.NewListerWatcher[*metav1.PartialObjectMetadata](client, pods, pb)
	assert.ErrorContains(t, err, "reads JSON")
	_, err = reflector.NewListerWatcher[*metav1.PartialObjectMetadata](client, pods)
	assert.NoError(t, err)
}

// widget is a custom resource's type of one's own, as kubebuilder makes
// them.
type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Size int32 `json:"size"`
	} `json:"spec"`
}

func (w *widget) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// A type of one's own needs Target.Kind as well as Target.Resource: the
// error says so. Before, it was the codec's "the GroupVersionKind "/,
// Kind=" needs a version and a kind", though the Resource had a version.
func TestTypeOfOnesOwnNeedsAKind(t *testing.T) {
	client, err := reflector.NewClient(&reflector.Config{Host: "http://127.0.0.1:1"})
	require.NoError(t, err)
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	_, err = reflector.NewListerWatcher[*widget](client, reflector.Target{Resource: widgets})
	assert.ErrorContains(t, err, "Target.Kind is needed: *reflector_test.widget is not a k8s.io/api type")
	_, err = reflector.NewListerWatcher[*widget](client, reflector.Target{Resource: widgets, Kind: "Widget"})
	assert.NoError(t, err)
}

// A custom resource's list kind is its CRD's spec.names.listKind, which
// need not be Kind+"List" (and may be renamed while the kind cannot): a
// type of one's own lists it whatever it is. Every LIST failed with "object
// of the wrong kind", for ever (found by a review helper against
// kube-apiserver); the items are still checked.
func TestTypeOfOnesOwnTakesTheCRDsListKind(t *testing.T) {
	item := `{"kind":"Widget","apiVersion":"example.com/v1","metadata":{"name":"w","resourceVersion":"7"},"spec":{"size":3}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"WidgetCollection","apiVersion":"example.com/v1","metadata":{"resourceVersion":"7"},"items":[` + item + `]}`))
	}))
	defer srv.Close()
	client, err := reflector.NewClient(&reflector.Config{Host: srv.URL})
	require.NoError(t, err)
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	lw, err := reflector.NewListerWatcher[*widget](client, reflector.Target{Resource: widgets, Kind: "Widget"})
	require.NoError(t, err)
	var got []*widget
	meta, err := lw.List(t.Context(), reflector.ListOptions{}, func(w *widget) error { got = append(got, w); return nil })
	require.NoError(t, err)
	assert.Equal(t, "7", meta.ResourceVersion)
	require.Len(t, got, 1)
	assert.Equal(t, int32(3), got[0].Spec.Size)

	gadgets, err := reflector.NewListerWatcher[*widget](client, reflector.Target{Resource: widgets, Kind: "Gadget"})
	require.NoError(t, err)
	_, err = gadgets.List(t.Context(), reflector.ListOptions{}, func(*widget) error { return nil })
	assert.ErrorContains(t, err, "wrong kind", "an item of another kind")
}

// TestClientLoggerGetsTheClientsOwnReports: what the HTTP client does on its
// own (here: a token file it cannot read, with a static token standing in)
// reaches WithClientLogger, without the credential.
func TestClientLoggerGetsTheClientsOwnReports(t *testing.T) {
	var buf bytes.Buffer
	cfg := &reflector.Config{Host: "https://127.0.0.1:1", BearerToken: "s3cr3t", BearerTokenFile: filepath.Join(t.TempDir(), "missing")}
	_, err := reflector.NewClient(cfg, reflector.WithClientLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	require.NoError(t, err)
	assert.Contains(t, buf.String(), "bearer token file")
	assert.NotContains(t, buf.String(), "s3cr3t")
}

// TestPanickingTransformOverHTTP: over HTTP the transform runs inside the
// list decoder; its panic is still the transform's (skipped, reported),
// not malformed data from the server, and the LIST is not retried for it.
func TestPanickingTransformOverHTTP(t *testing.T) {
	for _, ct := range []reflector.ContentType{reflector.JSON, reflector.Protobuf} {
		server, _ := startServer("good", "bad")
		client, err := reflector.NewClient(&reflector.Config{Host: server.URL()})
		require.NoError(t, err)
		lw, err := reflector.NewListerWatcher[*corev1.Pod](client, reflector.Target{Namespace: "default"}, reflector.WithContentType(ct))
		require.NoError(t, err)
		errs := make(chan error, 10)
		store := chanStore{objs: make(chan *corev1.Pod, 10)}
		r := reflector.New(lw, reflector.Store[*corev1.Pod](store),
			reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithErrorHandler[*corev1.Pod](func(err error) { errs <- err }),
			reflector.WithTransform(func(p *corev1.Pod) (*corev1.Pod, error) {
				if p.Name == "bad" {
					panic("transform bug")
				}
				return p, nil
			}))
		stop := run(t, r)
		err = <-errs
		assert.ErrorIs(t, err, reflector.ErrSkipped, ct)
		assert.ErrorContains(t, err, "transform bug")
		assert.Equal(t, "good", (<-store.objs).Name)
		stop()
		server.Close()
		assert.Empty(t, errs, "one error only: the list was not retried")
	}
}

func protobufPodList(t *testing.T) []byte {
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}, Items: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default", ResourceVersion: "7"}}}}
	raw, err := list.Marshal()
	require.NoError(t, err)
	u := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "PodList"}, Raw: raw}
	b, err := u.Marshal()
	require.NoError(t, err)
	return append([]byte("k8s\x00"), b...)
}

// LIST pages read to their end must leave the HTTP/1.1 connection reusable:
// kube-apiserver streams list bodies chunked, and every page here costs a
// new TCP (and TLS) connection.
// A LIST page reads its body to the end, so that an HTTP/1.1 connection
// goes back to the pool: a JSON page closed its body at the list's closing
// byte, before the chunked body's last chunk, and the transport closed the
// connection (a new TCP and TLS handshake for every page).
func TestListPagesReuseTheHTTP1Connection(t *testing.T) {
	jsonBody := []byte(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[{"metadata":{"name":"a","namespace":"default","resourceVersion":"7"}}]}`)
	for _, ct := range []reflector.ContentType{reflector.JSON, reflector.Protobuf} {
		body, mediaType := jsonBody, "application/json"
		if ct == reflector.Protobuf {
			body, mediaType = protobufPodList(t), "application/vnd.kubernetes.protobuf"
		}
		var conns atomic.Int32
		added := make(chan struct{}, 1)
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", mediaType)
			_, _ = w.Write(body)
			w.(http.Flusher).Flush() // chunked, as kube-apiserver's streamed lists
			// The last chunk follows once the client has the items, as it does
			// over a real network when the last bytes and the end of the
			// body arrive in different segments.
			select {
			case <-added:
			case <-r.Context().Done():
			}
		}))
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
		srv.Start()
		client, err := reflector.NewClient(&reflector.Config{Host: srv.URL})
		require.NoError(t, err)
		lw, err := reflector.NewListerWatcher[*corev1.Pod](client, reflector.Target{Namespace: "default"}, reflector.WithContentType(ct))
		require.NoError(t, err)
		for range 5 {
			n := 0
			_, err := lw.List(context.Background(), reflector.ListOptions{}, func(*corev1.Pod) error { n++; added <- struct{}{}; return nil })
			require.NoError(t, err)
			require.Equal(t, 1, n)
		}
		srv.Close()
		require.EqualValues(t, 1, conns.Load(), "content type %v: 5 LIST pages opened %d connections", ct, conns.Load())
	}
}

// Config.Timeout "bounds a whole short request" and rest's doc says LIST
// pages are bounded by it; the HTTP ListerWatcher ignores it.
// Config.Timeout bounds a LIST page, as it says (only WithListTimeout,
// a minute by default, did).
func TestListHonoursConfigTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","items":[`))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // a server that trickles its answer
	}))
	defer srv.Close()
	client, err := reflector.NewClient(&reflector.Config{Host: srv.URL, Timeout: 100 * time.Millisecond})
	require.NoError(t, err)
	lw, err := reflector.NewListerWatcher[*corev1.Pod](client, reflector.Target{}, reflector.WithContentType(reflector.JSON), reflector.WithListTimeout(5*time.Second))
	require.NoError(t, err)
	start := time.Now()
	_, err = lw.List(context.Background(), reflector.ListOptions{}, func(*corev1.Pod) error { return nil })
	require.Error(t, err)
	require.Less(t, time.Since(start), 2*time.Second, "Config.Timeout (100ms) ignored: %v", err)
}

// A watch whose answer does not come is given up after the idle timeout,
// and not before (timed at the client: a timer never fires early, so a
// loaded machine cannot make this fail, where timing it at the server
// could).
func TestUnansweredWatchIsGivenUpAfterTheIdleTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // no answer
	}))
	defer srv.Close()
	client, err := reflector.NewClient(&reflector.Config{Host: srv.URL})
	require.NoError(t, err)
	for _, c := range []struct{ given, idle time.Duration }{
		{reflector.MinWatchIdleTimeout, reflector.MinWatchIdleTimeout},
		// 90 meant as seconds: a watchdog under a round trip would give
		// up every watch before its answer.
		{90, reflector.MinWatchIdleTimeout},
	} {
		lw, err := reflector.NewListerWatcher[*corev1.Pod](client, reflector.Target{}, reflector.WithWatchIdleTimeout(c.given))
		require.NoError(t, err)
		start := time.Now()
		_, err = lw.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: "1"})
		took := time.Since(start)
		assert.ErrorIs(t, err, reflector.ErrStalled)
		assert.ErrorIs(t, err, reflector.ErrNoAnswer, "no stream was opened")
		assert.ErrorContains(t, err, "no answer for "+c.idle.String())
		assert.GreaterOrEqual(t, took, c.idle, "given up before the idle timeout (WithWatchIdleTimeout(%s))", c.given)
	}
}

// A page that runs out of WithListTimeout says so, as a deadline, whether
// the server sent nothing or part of its body: the Reflector then starts
// the list over rather than ask for it again, as slow the next time.
func TestListTimeoutIsADeadline(t *testing.T) {
	for name, answer := range map[string]func(http.ResponseWriter){
		"in the body": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","items":[`))
			w.(http.Flusher).Flush()
		},
		"before the answer": func(http.ResponseWriter) {},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				answer(w)
				<-r.Context().Done()
			}))
			defer srv.Close()
			client, err := reflector.NewClient(&reflector.Config{Host: srv.URL})
			require.NoError(t, err)
			lw, err := reflector.NewListerWatcher[*corev1.Pod](client, reflector.Target{}, reflector.WithContentType(reflector.JSON), reflector.WithListTimeout(100*time.Millisecond))
			require.NoError(t, err)
			_, err = lw.List(t.Context(), reflector.ListOptions{}, func(*corev1.Pod) error { return nil })
			assert.ErrorContains(t, err, "did not complete within 100ms")
			assert.ErrorIs(t, err, context.DeadlineExceeded)
		})
	}
}

// TestEventServedBadlyEveryTimeIsListedPast: a server that sends, on every
// watch from where the cache is, an event of a type the client does not
// know. Resuming once is right (an event spoiled on its way comes back
// whole); resuming for ever stopped the cache for good. After the second
// failure at the same resourceVersion the Reflector lists, and the list
// moves it past the event.
func TestEventServedBadlyEveryTimeIsListedPast(t *testing.T) {
	var lists, watches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		a := `{"metadata":{"namespace":"ns","name":"a","resourceVersion":"1"}}`
		c := `{"metadata":{"namespace":"ns","name":"c","resourceVersion":"3"}}`
		q := r.URL.Query()
		switch {
		case q.Get("watch") == "" && lists.Add(1) == 1:
			_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[` + a + `]}`))
		case q.Get("watch") == "":
			_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"3"},"items":[` + a + `,` + c + `]}`))
		case q.Get("resourceVersion") == "1":
			watches.Add(1)
			_, _ = w.Write([]byte(`{"type":"RESTARTED","object":{"metadata":{"namespace":"ns","name":"b","resourceVersion":"2"}}}` + "\n" +
				`{"type":"ADDED","object":` + c + "}\n"))
		default:
			watches.Add(1)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	}))
	defer srv.Close()
	client, err := reflector.NewClient(&reflector.Config{Host: srv.URL})
	require.NoError(t, err)
	lw, err := reflector.NewListerWatcher[*corev1.Pod](client, reflector.Target{Namespace: "ns"}, reflector.WithContentType(reflector.JSON))
	require.NoError(t, err)
	errs := make(chan error, 10)
	store := chanStore{objs: make(chan *corev1.Pod, 10)}
	r := reflector.New(lw, reflector.Store[*corev1.Pod](store),
		reflector.WithMode[*corev1.Pod](reflector.ListWatch),
		reflector.WithBackoff[*corev1.Pod](time.Millisecond, 10*time.Millisecond),
		reflector.WithErrorHandler[*corev1.Pod](func(err error) {
			select {
			case errs <- err:
			default: // the first ones are enough
			}
		}))
	defer run(t, r)()
	var got []string
	for len(got) < 3 {
		select {
		case p := <-store.objs:
			got = append(got, p.Name)
		case <-time.After(10 * time.Second):
			t.Fatalf("stored %v; the list after the failed watches never came", got)
		}
	}
	assert.Equal(t, []string{"a", "a", "c"}, got, "the first list, then the second")
	assert.Equal(t, int32(2), lists.Load(), "LIST requests")
	for range 2 {
		assert.ErrorContains(t, <-errs, `unknown watch event type "RESTARTED"`)
	}
}

// A 404 says what usually causes it: a namespace asked of a cluster-scoped
// resource (which has no namespaced path), or a resource not installed.
func TestNotFoundSaysWhy(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"the server could not find the requested resource"}`))
	}))
	defer srv.Close()
	client, err := reflector.NewClient(&reflector.Config{Host: srv.URL})
	require.NoError(t, err)
	for target, want := range map[string]string{
		"default": "is nodes cluster-scoped? Target.Namespace must then be empty",
		"":        "is nodes served in version v1? A CRD missing, deleted, or not serving that version answers 404",
	} {
		lw, err := reflector.NewListerWatcher[*corev1.Node](client, reflector.Target{Namespace: target})
		require.NoError(t, err)
		_, err = lw.List(t.Context(), reflector.ListOptions{}, func(*corev1.Node) error { return nil })
		assert.ErrorContains(t, err, want)
		assert.True(t, apierrors.IsNotFound(err), "still a NotFound: %v", err)
		_, err = lw.Watch(t.Context(), reflector.WatchOptions{})
		assert.ErrorContains(t, err, want)
	}
}

// A resource without its version cannot be asked for (the path would lack
// it, and the server answer 404 for ever): refused when built, for every
// kind of object.
func TestTargetNeedsAVersion(t *testing.T) {
	client, err := reflector.NewClient(&reflector.Config{Host: "http://127.0.0.1:1"})
	require.NoError(t, err)
	noVersion := reflector.Target{Resource: schema.GroupVersionResource{Group: "example.com", Resource: "widgets"}, Kind: "Widget"}
	_, err = reflector.NewListerWatcher[*unstructured.Unstructured](client, noVersion)
	assert.ErrorContains(t, err, "version")
	_, err = reflector.NewListerWatcher[*metav1.PartialObjectMetadata](client, noVersion)
	assert.ErrorContains(t, err, "version")
	_, err = reflector.NewListerWatcher[*corev1.Pod](client, reflector.Target{Resource: schema.GroupVersionResource{Resource: "pods"}})
	assert.ErrorContains(t, err, "version")
}

// A namespace or resource that would not stay one segment of the path is
// refused when built: ".." would be cleaned away, and the informer would
// list every namespace.
func TestTargetPathSegmentsAreChecked(t *testing.T) {
	client, err := reflector.NewClient(&reflector.Config{Host: "http://127.0.0.1:1"})
	require.NoError(t, err)
	for _, target := range []reflector.Target{
		{Namespace: ".."},
		{Namespace: "."},
		{Namespace: "a/b"},
		{Namespace: "a%2Fb"},
		{Resource: schema.GroupVersionResource{Version: "v1", Resource: "../secrets"}},
		{Resource: schema.GroupVersionResource{Group: "..", Version: "v1", Resource: "pods"}},
	} {
		_, err = reflector.NewListerWatcher[*corev1.Pod](client, target)
		assert.ErrorContains(t, err, "invalid", "%+v", target)
	}
	_, err = reflector.NewListerWatcher[*corev1.Pod](client, reflector.Target{Namespace: "kube-system"})
	assert.NoError(t, err)
}

// A Kind that is not T's is refused, rather than ignored.
func TestTargetKindMustBeTheTypes(t *testing.T) {
	client, err := reflector.NewClient(&reflector.Config{Host: "http://127.0.0.1:1"})
	require.NoError(t, err)
	_, err = reflector.NewListerWatcher[*corev1.Pod](client, reflector.Target{Kind: "ConfigMap"})
	assert.ErrorContains(t, err, `Target.Kind "ConfigMap" is not the kind of *v1.Pod, Pod`)
	_, err = reflector.NewListerWatcher[*corev1.Pod](client, reflector.Target{Kind: "ConfigMap",
		Resource: corev1.SchemeGroupVersion.WithResource("pods")})
	assert.ErrorContains(t, err, `Target.Kind "ConfigMap"`)
	_, err = reflector.NewListerWatcher[*corev1.Pod](client, reflector.Target{Kind: "Pod"})
	assert.NoError(t, err)
}

// A Resource of another group or version than T's is refused: every object
// it serves would be refused as of the wrong kind, and the cache would
// never sync. Another resource of T's group and version is taken (the
// resource found from the type is a guess from its kind).
func TestTargetResourceMustBeInTheTypesGroupVersion(t *testing.T) {
	client, err := reflector.NewClient(&reflector.Config{Host: "http://127.0.0.1:1"})
	require.NoError(t, err)
	_, err = reflector.NewListerWatcher[*appsv1.Deployment](client, reflector.Target{Resource: corev1.SchemeGroupVersion.WithResource("pods")})
	assert.EqualError(t, err, "Target.Resource pods.v1 is not in the group and version of *v1.Deployment, apps/v1")
	_, err = reflector.NewListerWatcher[*appsv1.Deployment](client, reflector.Target{Resource: appsv1.SchemeGroupVersion.WithResource("deployments")})
	assert.NoError(t, err)
	_, err = reflector.NewListerWatcher[*appsv1.Deployment](client, reflector.Target{Resource: appsv1.SchemeGroupVersion.WithResource("deploys")})
	assert.NoError(t, err)
	// A group and version without a resource was ignored: the type's own
	// was watched.
	_, err = reflector.NewListerWatcher[*appsv1.Deployment](client, reflector.Target{Resource: schema.GroupVersionResource{Group: "apps", Version: "v1beta2"}})
	assert.EqualError(t, err, "Target.Resource apps/v1beta2 has a group or version but no resource: give all three, or none (*v1.Deployment's own)")
}

// A selector that does not parse, as kube-apiserver parses it, is refused
// when the ListerWatcher is built, rather than sent to fail with a 400 on
// every list and watch the Reflector retries. A field the resource cannot
// be selected by parses: only the server knows its field labels.
func TestTargetSelectorsAreParsed(t *testing.T) {
	client, err := reflector.NewClient(&reflector.Config{Host: "http://127.0.0.1:1"})
	require.NoError(t, err)
	for _, tc := range []struct {
		target reflector.Target
		err    string // "" if taken
	}{
		{reflector.Target{LabelSelector: "app in (web"}, `invalid Target.LabelSelector "app in (web"`},
		{reflector.Target{LabelSelector: "app=we b"}, `invalid Target.LabelSelector`},
		{reflector.Target{FieldSelector: "spec.nodeName"}, `invalid Target.FieldSelector "spec.nodeName"`},
		{reflector.Target{LabelSelector: "app in (web,db),!canary", FieldSelector: "spec.nodeName=n1,status.phase!=Failed"}, ""},
		{reflector.Target{FieldSelector: "spec.priority=1"}, ""},
	} {
		_, err := reflector.NewListerWatcher[*corev1.Pod](client, tc.target)
		if tc.err == "" {
			assert.NoError(t, err, "%+v", tc.target)
		} else {
			assert.ErrorContains(t, err, tc.err, "%+v", tc.target)
		}
	}
}

// A ContentType that is none of the three is refused, as an unknown Mode is.
func TestUnknownContentTypeIsRefused(t *testing.T) {
	client, err := reflector.NewClient(&reflector.Config{Host: "http://127.0.0.1:1"})
	require.NoError(t, err)
	for _, ct := range []reflector.ContentType{-1, 3, 99} {
		_, err := reflector.NewListerWatcher[*corev1.Pod](client, reflector.Target{}, reflector.WithContentType(ct))
		assert.ErrorContains(t, err, "unknown ContentType", "%d", ct)
	}
}
