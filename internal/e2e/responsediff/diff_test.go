package responsediff

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/listwatch/listwatch/internal/rest"
	"github.com/listwatch/listwatch/reflector"
)

// defaultSeeds is how many random responses TestErrorResponsesMatchClientGo
// tries.
const defaultSeeds = 1500

// numSeeds is defaultSeeds, or LISTWATCH_RESPDIFF_SEEDS=N for a longer run.
func numSeeds(t *testing.T) uint64 {
	s := os.Getenv("LISTWATCH_RESPDIFF_SEEDS")
	if s == "" {
		return defaultSeeds
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 {
		t.Fatalf("LISTWATCH_RESPDIFF_SEEDS=%q: want a positive number", s)
	}
	return n
}

// requestTimeout bounds one request; the server is local and answers at
// once.
const requestTimeout = 10 * time.Second

// TestErrorResponsesMatchClientGo serves written and random responses to
// a LIST and a WATCH, reads each with listwatch and with client-go, and
// compares what each library makes of it.
func TestErrorResponsesMatchClientGo(t *testing.T) {
	env := newEnv(t)
	for _, c := range written() {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) { env.check(t, c) })
	}
	for seed := range numSeeds(t) {
		r := rand.New(rand.NewPCG(seed, 0x7265737064696666))
		c := generate(r)
		if seed%4 == 3 {
			c = generateStream(r)
		}
		c.name = fmt.Sprint("seed ", seed)
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { env.check(t, c) })
	}
	env.checkDifferencesSeen(t)
}

// response is one scripted answer, and the request it answers.
type response struct {
	name   string
	watch  bool // a WATCH (?watch=...), else a LIST
	apps   bool // deployments in apps/v1, else pods in v1
	code   int
	header http.Header // Content-Type and Retry-After, when set
	payload
}

func (c *response) path() string {
	if c.apps {
		return "/apis/apps/v1/namespaces/ns/deployments"
	}
	return "/api/v1/namespaces/ns/pods"
}

// String is the response as a failure prints it.
func (c *response) String() string {
	verb := "LIST"
	if c.watch {
		verb = "WATCH"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s answered %d %s\n", verb, c.path(), c.code, http.StatusText(c.code))
	for _, k := range slices.Sorted(maps.Keys(c.header)) {
		fmt.Fprintf(&b, "%s: %q\n", k, c.header[k])
	}
	fmt.Fprintf(&b, "body (%d bytes): %q", len(c.body), c.body)
	return b.String()
}

// server answers every request with the response of the case that runs;
// cases run one at a time.
type server struct {
	mu   sync.Mutex
	cur  *response
	seen []string // the requests it got for cur: "GET path?query"
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	c := s.cur
	s.seen = append(s.seen, r.Method+" "+r.URL.RequestURI())
	s.mu.Unlock()
	if c == nil || r.URL.Path != c.path() || r.URL.Query().Has("watch") != c.watch {
		http.Error(w, "no such case", http.StatusMisdirectedRequest) // and check fails
		return
	}
	h := w.Header()
	for k, v := range c.header {
		h[k] = v
	}
	if _, ok := c.header["Content-Type"]; !ok {
		h["Content-Type"] = nil // no sniffing: no header at all
	}
	w.WriteHeader(c.code)
	_, _ = w.Write(c.body)
}

// serve makes c the answer to every request, and returns what the server
// got since the last call.
func (s *server) serve(c *response) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := s.seen
	s.cur, s.seen = c, nil
	return seen
}

// env is what every case shares: the server, both libraries' clients, and
// how often each expected difference was seen.
type env struct {
	srv    *server
	cgCore *restclient.RESTClient
	cgApps *restclient.RESTClient
	lwPods *reflector.HTTPListerWatcher[*corev1.Pod]
	lwDeps *reflector.HTTPListerWatcher[*appsv1.Deployment]
	runs   int
	seen   map[string]int // expected difference → cases that showed it
	// cgResponse is the last response client-go got, as it got it (the
	// header values trimmed, say), for checkWait.
	cgResponse *http.Response
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func newEnv(t *testing.T) *env {
	t.Helper()
	srv := &server{}
	ts := httptest.NewServer(srv) // 127.0.0.1
	t.Cleanup(ts.Close)

	e := &env{srv: srv, seen: map[string]int{}}
	for _, gv := range []struct {
		rc   **restclient.RESTClient
		api  string
		core bool
	}{{&e.cgCore, "/api", true}, {&e.cgApps, "/apis", false}} {
		cfg := &restclient.Config{
			Host:        ts.URL,
			APIPath:     gv.api,
			RateLimiter: flowcontrol.NewFakeAlwaysRateLimiter(),
			WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
				return roundTripper(func(req *http.Request) (*http.Response, error) {
					resp, err := rt.RoundTrip(req)
					if err == nil {
						e.cgResponse = resp
					}
					return resp, err
				})
			},
		}
		cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
		cfg.GroupVersion = &corev1.SchemeGroupVersion
		if !gv.core {
			cfg.GroupVersion = &appsv1.SchemeGroupVersion
		}
		rc, err := restclient.RESTClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		*gv.rc = rc
	}

	c, err := reflector.NewClient(&reflector.Config{Host: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	if e.lwPods, err = reflector.NewListerWatcher[*corev1.Pod](c, reflector.Target{Namespace: "ns"}, reflector.WithContentType(reflector.JSON)); err != nil {
		t.Fatal(err)
	}
	if e.lwDeps, err = reflector.NewListerWatcher[*appsv1.Deployment](c, reflector.Target{Namespace: "ns"}, reflector.WithContentType(reflector.JSON)); err != nil {
		t.Fatal(err)
	}
	return e
}

// runClientGo sends c's request with a client-go RESTClient, as its
// reflector's ListWatch does (without its retries, whose waits checkWait
// gives), and returns the error. A watch that opens is read as its
// reflector's watchHandler reads it, until an ERROR event, whose object
// becomes the error (apierrors.FromObject), or the stream's end; it also
// returns the types of the events before.
func (e *env) runClientGo(c *response) ([]string, error) {
	e.cgResponse = nil
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	rc, resource, list := e.cgCore, "pods", runtime.Object(&corev1.PodList{})
	if c.apps {
		rc, resource, list = e.cgApps, "deployments", &appsv1.DeploymentList{}
	}
	req := rc.Get().Namespace("ns").Resource(resource).MaxRetries(0)
	if !c.watch {
		return nil, req.Do(ctx).Into(list)
	}
	w, err := req.Param("watch", "true").Watch(ctx)
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	var events []string
	for {
		select {
		case ev, ok := <-w.ResultChan():
			switch {
			case !ok:
				return events, nil
			case ev.Type == watch.Error:
				return events, apierrors.FromObject(ev.Object)
			}
			events = append(events, string(ev.Type))
		case <-ctx.Done():
			return events, ctx.Err()
		}
	}
}

// runListwatch sends c's request with listwatch's HTTPListerWatcher, as
// the Reflector does, and returns the error and, for a watch, the types of
// the events before it.
func (e *env) runListwatch(c *response) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	if c.apps {
		return listOrWatch(ctx, e.lwDeps, c.watch)
	}
	return listOrWatch(ctx, e.lwPods, c.watch)
}

// listOrWatch lists with lw, or watches with it, and returns the error.
// A watch that opens is read as the Reflector follows it: an ERROR event's
// Status becomes the error (rest.FromStatus, the Reflector's
// statusError), an event skipped (ErrSkipped) is passed over, and a clean
// end (io.EOF) is no error; it also returns the types of the events
// before.
func listOrWatch[T reflector.Object](ctx context.Context, lw *reflector.HTTPListerWatcher[T], watching bool) ([]string, error) {
	if !watching {
		_, err := lw.List(ctx, reflector.ListOptions{}, func(T) error { return nil })
		return nil, err
	}
	w, err := lw.Watch(ctx, reflector.WatchOptions{})
	if err != nil {
		return nil, err
	}
	defer w.Close()
	var events []string
	for {
		ev, err := w.Next()
		switch {
		case errors.Is(err, reflector.ErrSkipped):
			continue
		case errors.Is(err, io.EOF):
			return events, nil
		case err != nil:
			return events, err
		case ev.Type == reflector.Error:
			return events, rest.FromStatus(ev.Status)
		}
		events = append(events, string(ev.Type))
	}
}

// outcome is what one library made of a response: its error, what
// apimachinery's helpers say of it, and the library's own decisions.
type outcome struct {
	err        error
	events     []string       // a watch's events before the error or the end
	status     *metav1.Status // the error's Status, if it has one
	is         []string       // the apierrors.IsX helpers that hold
	cause      bool           // apierrors.HasStatusCause(err, ResourceVersionTooLarge)
	delay      string         // apierrors.SuggestsClientDelay: "<seconds>", or "no"
	relist     bool           // client-go: isExpiredError; listwatch: rest.IsGone
	tooLarge   bool           // client-go: isTooLargeResourceVersionError; listwatch: rest.IsTooLargeResourceVersion
	wait       int64          // whole seconds: client-go: checkWait; listwatch: rest.RetryAfter, rounded up
	retryable  bool           // client-go: apierrors.IsTooManyRequests (its reflector retries); listwatch: rest.IsRetryable
	unexpected bool           // apierrors.IsUnexpectedServerError: a Status made up, not the server's
}

// written reports whether the error carries a Status the server wrote.
func (o outcome) written() bool { return o.status != nil && !o.unexpected }

func (o outcome) code() int32 {
	if o.status == nil {
		return 0
	}
	return o.status.Code
}

func (o outcome) reason() metav1.StatusReason {
	if o.status == nil {
		return ""
	}
	return o.status.Reason
}

// helpers are apimachinery's predicates, applied to both libraries'
// errors.
var helpers = []struct {
	name string
	is   func(error) bool
}{
	{"NotFound", apierrors.IsNotFound},
	{"AlreadyExists", apierrors.IsAlreadyExists},
	{"Conflict", apierrors.IsConflict},
	{"Invalid", apierrors.IsInvalid},
	{"Gone", apierrors.IsGone},
	{"ResourceExpired", apierrors.IsResourceExpired},
	{"NotAcceptable", apierrors.IsNotAcceptable},
	{"UnsupportedMediaType", apierrors.IsUnsupportedMediaType},
	{"MethodNotSupported", apierrors.IsMethodNotSupported},
	{"ServiceUnavailable", apierrors.IsServiceUnavailable},
	{"BadRequest", apierrors.IsBadRequest},
	{"Unauthorized", apierrors.IsUnauthorized},
	{"Forbidden", apierrors.IsForbidden},
	{"Timeout", apierrors.IsTimeout},
	{"ServerTimeout", apierrors.IsServerTimeout},
	{"InternalError", apierrors.IsInternalError},
	{"TooManyRequests", apierrors.IsTooManyRequests},
	{"RequestEntityTooLarge", apierrors.IsRequestEntityTooLargeError},
	{"UnexpectedServerError", apierrors.IsUnexpectedServerError},
}

// observe applies what both libraries share: the Status and
// apimachinery's helpers.
func observe(err error) outcome {
	o := outcome{err: err, delay: "no"}
	if err == nil {
		return o
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		o.status = &s
	}
	for _, h := range helpers {
		if h.is(err) {
			o.is = append(o.is, h.name)
		}
	}
	o.cause = apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge)
	if secs, ok := apierrors.SuggestsClientDelay(err); ok {
		o.delay = fmt.Sprint(secs)
	}
	o.unexpected = apierrors.IsUnexpectedServerError(err)
	return o
}

// observeClientGo reads client-go's error, and resp, the response as it
// got it.
func observeClientGo(resp *http.Response, err error) outcome {
	o := observe(err)
	o.relist = isExpiredError(err)
	o.tooLarge = isTooLargeResourceVersionError(err)
	o.retryable = apierrors.IsTooManyRequests(err)
	if err != nil && resp != nil {
		if secs, ok := checkWait(resp); ok {
			o.wait = max(int64(secs), 0)
		}
	}
	return o
}

func observeListwatch(err error) outcome {
	o := observe(err)
	o.relist = rest.IsGone(err)
	o.tooLarge = rest.IsTooLargeResourceVersion(err)
	o.retryable = rest.IsRetryable(err)
	d := rest.RetryAfter(err)
	o.wait = int64((d + time.Second - 1) / time.Second)
	return o
}

// field is one thing compared, as each library has it.
type field struct{ name, clientGo, listwatch string }

// compare lists what differs between cg and lw.
func compare(cg, lw outcome) []field {
	var out []field
	add := func(name string, a, b any) {
		if fmt.Sprint(a) != fmt.Sprint(b) {
			out = append(out, field{name, fmt.Sprint(a), fmt.Sprint(b)})
		}
	}
	add("events", cg.events, lw.events)
	add("error", cg.err != nil, lw.err != nil)
	if cg.err == nil || lw.err == nil {
		return out
	}
	add("code", cg.code(), lw.code())
	if lw.status != nil {
		// rest.APIError.ErrStatus: `Status.Code is always set`, even
		// where client-go's is 0.
		add("listwatch's code set", true, lw.code() != 0)
	}
	add("reason", cg.reason(), lw.reason())
	add("helpers", cg.is, lw.is)
	add("cause ResourceVersionTooLarge", cg.cause, lw.cause)
	add("SuggestsClientDelay", cg.delay, lw.delay)
	add("relist", cg.relist, lw.relist)
	add("too large", cg.tooLarge, lw.tooLarge)
	add("wait", cg.wait, lw.wait)
	if cg.retryable && !lw.retryable { // client-go's reflector retries it; listwatch must too
		add("429 retryable", cg.retryable, lw.retryable)
	}
	if cg.written() && !strings.Contains(lw.err.Error(), cg.status.Message) {
		// A message the server wrote reaches listwatch's error.
		add("message", fmt.Sprintf("%q", cg.status.Message), "missing")
	}
	return out
}

// checkRequests stops serving c and checks that the server got n
// requests for it, each a GET of its path (with ?watch for a watch).
func (e *env) checkRequests(t *testing.T, c *response, n int) {
	t.Helper()
	seen := e.srv.serve(nil)
	ok := len(seen) == n
	for _, r := range seen {
		ok = ok && strings.HasPrefix(r, "GET "+c.path()) && strings.Contains(r, "watch=") == c.watch
	}
	if !ok {
		t.Fatalf("%s: the server got %q, want %d GET of %s\n%s", c.name, seen, n, c.path(), c)
	}
}

// check runs c through both libraries and compares them. When listwatch
// reads the response in a way of its own that a reading names, client-go
// runs again on the response rewritten to that reading (in rounds), and
// the two are compared as for any other case; then what still differs
// must be an expected difference.
func (e *env) check(t *testing.T, c *response) {
	t.Helper()
	e.runs++
	e.srv.serve(c)
	cgEvents, cgErr := e.runClientGo(c)
	lwEvents, lwErr := e.runListwatch(c)
	e.checkRequests(t, c, 2)
	cg, lw := observeClientGo(e.cgResponse, cgErr), observeListwatch(lwErr)
	cg.events, lw.events = cgEvents, lwEvents
	cur, note := c, ""
	for round := 0; round < len(readings) && len(compare(cg, lw)) > 0; round++ {
		rewritten, names := rewrite(cur, cg, lw)
		if rewritten == nil {
			break
		}
		for _, n := range names {
			e.seen[n]++
			note += "; " + n
		}
		cur = rewritten
		e.srv.serve(cur)
		cgEvents, cgErr = e.runClientGo(cur)
		e.checkRequests(t, cur, 1)
		cg = observeClientGo(e.cgResponse, cgErr)
		cg.events = cgEvents
	}
	var unexplained []string
	for _, d := range compare(cg, lw) {
		if exp := explain(cur, cg, lw, d.name); exp != nil {
			e.seen[exp.name]++
			continue
		}
		unexplained = append(unexplained, fmt.Sprintf("%s: client-go %s, listwatch %s", d.name, d.clientGo, d.listwatch))
	}
	if len(unexplained) > 0 {
		desc := c.String()
		if cur != c {
			desc += fmt.Sprintf("\nclient-go read it rewritten as listwatch reads it (%s):\n%s", strings.TrimPrefix(note, "; "), cur)
		}
		t.Errorf("%s: listwatch and client-go differ:\n  %s\nclient-go: %v\nlistwatch: %v\n%s",
			c.name, strings.Join(unexplained, "\n  "), cgErr, lwErr, desc)
	}
}
