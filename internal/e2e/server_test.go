package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/listwatch/listwatch/internal/apisim"
	"github.com/listwatch/listwatch/internal/e2e/cluster"
	"github.com/listwatch/listwatch/reflector"
)

// server is what a scenario needs of an apiserver. Every scenario is
// written once against it and runs against both implementations: a real
// kube-apiserver (realServer) and the simulator (simServer), so that the
// simulator is checked against the truth.
type server interface {
	// config returns the client configuration of the admin (or of a user
	// bound to no role, if unprivileged) for an apiserver at host:port
	// addr: the server's own addr(), or a tcpproxy's in front of it.
	config(addr string, unprivileged bool) *reflector.Config
	// addr returns the server's host:port.
	addr() string
	// install makes the server serve k (a CustomResourceDefinition must be
	// created and established first on a real one).
	install(t testing.TB, k kind)
	createNamespace(t testing.TB, ns string)
	create(t testing.TB, k kind, obj *unstructured.Unstructured) *unstructured.Unstructured
	// update writes obj, which carries the resourceVersion it was read at.
	update(t testing.TB, k kind, obj *unstructured.Unstructured) *unstructured.Unstructured
	remove(t testing.TB, k kind, ns, name string)
	// list returns the objects of k in ns ("" for all namespaces) that
	// selector selects, from a fresh consistent read.
	list(t testing.TB, k kind, ns, selector string) []*unstructured.Unstructured
	// restart restarts the apiserver in front of the same storage: every
	// watch ends and the watch cache forgets its history.
	restart(t testing.TB)
	// compact makes every resourceVersion older than the current one
	// unreadable in storage.
	compact(t testing.TB)
	// requests returns the LIST and WATCH requests that listwatch clients
	// sent so far, in the order the server received them.
	requests(t testing.TB) []apiRequest
}

// apiRequest is one LIST or WATCH request a server received.
type apiRequest struct {
	verb  string // "list" or "watch"
	path  string
	query url.Values
	at    time.Time
}

// fill reports whether r fills a cache: a LIST, or a streaming list (a
// watch with sendInitialEvents); not the Reflector's probe.
func (r apiRequest) fill() bool {
	return (r.verb == "list" && !r.probe()) || r.query.Get("sendInitialEvents") == "true"
}

// probe reports whether r is the Reflector's probe after the server was
// out of reach: a LIST of one object at the newest state (limit=1, no
// resourceVersion), whose resourceVersion says whether the server came
// back behind the cache. It fills nothing.
func (r apiRequest) probe() bool {
	return r.verb == "list" && r.query.Get("limit") == "1" && !r.query.Has("resourceVersion") && !r.query.Has("continue")
}

func (r apiRequest) String() string {
	return fmt.Sprintf("%s %s %s?%s", r.at.Format("15:04:05.000"), strings.ToUpper(r.verb), r.path, r.query.Encode())
}

// requestsFor returns the requests of reqs for k in ns ("" for all
// namespaces) with the given label selector, made at or after since.
func requestsFor(reqs []apiRequest, k kind, ns, selector string, since time.Time) []apiRequest {
	path := k.sim.Path(ns)
	var out []apiRequest
	for _, r := range reqs {
		if r.path == path && r.query.Get("labelSelector") == selector && !r.at.Before(since) {
			out = append(out, r)
		}
	}
	return out
}

// realServer is a kube-apiserver started by package cluster, written to
// through client-go's dynamic client, its requests counted from its audit
// log.
type realServer struct {
	c           *cluster.Cluster
	dyn         dynamic.Interface
	restartable bool

	mu        sync.Mutex
	installed map[string]bool
}

func newRealServer(c *cluster.Cluster, restartable bool) (*realServer, error) {
	dyn, err := dynamic.NewForConfig(&rest.Config{
		Host:            c.URL(),
		BearerToken:     c.AdminToken(),
		TLSClientConfig: rest.TLSClientConfig{CAData: c.CAPEM()},
		QPS:             1000,
		Burst:           2000,
	})
	if err != nil {
		return nil, err
	}
	return &realServer{c: c, dyn: dyn, restartable: restartable, installed: map[string]bool{}}, nil
}

// startReal starts a cluster of the test's own, with the audit log on; if
// restartable, the scenarios may restart its apiserver.
func startReal(t *testing.T, restartable bool) *realServer {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := cluster.Start(ctx, cluster.Options{Binaries: kubeBin, Audit: true})
	if err != nil {
		t.Fatalf("starting a cluster: %v", err)
	}
	t.Logf("cluster ready in %v", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cluster logs:\n%s", c.LogTail(40))
		}
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the cluster: %v", err)
		}
	})
	s, err := newRealServer(c, restartable)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *realServer) config(addr string, unprivileged bool) *reflector.Config {
	token := s.c.AdminToken()
	if unprivileged {
		token = s.c.UnprivilegedToken()
	}
	return &reflector.Config{Host: "https://" + addr, BearerToken: token, TLS: reflector.TLSConfig{CAData: s.c.CAPEM()}}
}

func (s *realServer) addr() string { return s.c.Host() }

func (s *realServer) resource(k kind, ns string) dynamic.ResourceInterface {
	if ns == "" {
		return s.dyn.Resource(k.gvr)
	}
	return s.dyn.Resource(k.gvr).Namespace(ns)
}

var crds = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// install creates the CustomResourceDefinition of a custom kind, once per
// cluster, and waits until its objects can be listed.
func (s *realServer) install(t testing.TB, k kind) {
	t.Helper()
	if k.protobuf {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.installed[k.name] {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	gvk := k.sim.GroupVersionKind()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": k.gvr.Resource + "." + k.gvr.Group},
		"spec": map[string]any{
			"group": k.gvr.Group,
			"scope": "Namespaced",
			"names": map[string]any{
				"plural": k.gvr.Resource, "singular": strings.ToLower(gvk.Kind),
				"kind": gvk.Kind, "listKind": gvk.Kind + "List",
			},
			"versions": []any{map[string]any{
				"name": k.gvr.Version, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
	if _, err := s.dyn.Resource(crds).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the CustomResourceDefinition of %s: %v", k.name, err)
	}
	start := time.Now()
	for {
		got, err := s.dyn.Resource(crds).Get(ctx, crd.GetName(), metav1.GetOptions{})
		established := false
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					established = true
				}
			}
		}
		if established {
			if _, err := s.dyn.Resource(k.gvr).List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
				break
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("the CustomResourceDefinition of %s was not served within a minute (last error: %v)", k.name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("CustomResourceDefinition %s established and served after %s", crd.GetName(), time.Since(start).Round(time.Millisecond))
	s.installed[k.name] = true
}

func (s *realServer) createNamespace(t testing.TB, ns string) {
	t.Helper()
	obj := newObject("v1", "Namespace", "", ns, nil, nil)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	if _, err := s.dyn.Resource(gvr).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
}

func (s *realServer) create(t testing.TB, k kind, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	out, err := s.resource(k, obj.GetNamespace()).Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating %s %s/%s: %v", k.name, obj.GetNamespace(), obj.GetName(), err)
	}
	return out
}

func (s *realServer) update(t testing.TB, k kind, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	out, err := s.resource(k, obj.GetNamespace()).Update(context.Background(), obj, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating %s %s/%s: %v", k.name, obj.GetNamespace(), obj.GetName(), err)
	}
	return out
}

func (s *realServer) remove(t testing.TB, k kind, ns, name string) {
	t.Helper()
	if err := s.resource(k, ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting %s %s/%s: %v", k.name, ns, name, err)
	}
}

func (s *realServer) list(t testing.TB, k kind, ns, selector string) []*unstructured.Unstructured {
	t.Helper()
	l, err := s.resource(k, ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatalf("listing %s in %q (%s): %v", k.name, ns, selector, err)
	}
	out := make([]*unstructured.Unstructured, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out
}

func (s *realServer) restart(t testing.TB) {
	t.Helper()
	if !s.restartable {
		t.Fatal("restart on a cluster other scenarios share: the scenario must ask for a dedicated one")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	if err := s.c.StopAPIServer(); err != nil {
		t.Fatalf("stopping the apiserver: %v", err)
	}
	stopped := time.Now()
	if err := s.c.StartAPIServer(ctx); err != nil {
		t.Fatalf("starting the apiserver again: %v", err)
	}
	t.Logf("apiserver restarted: stopped in %s (SIGTERM, SIGKILL after 15 s), ready again %s later",
		stopped.Sub(start).Round(time.Millisecond), time.Since(stopped).Round(time.Millisecond))
}

func (s *realServer) compact(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rev, err := s.c.EtcdRevision(ctx)
	if err == nil {
		err = s.c.CompactEtcd(ctx, rev)
	}
	if err != nil {
		t.Fatalf("compacting etcd: %v", err)
	}
	t.Logf("etcd compacted at revision %d", rev)
}

func (s *realServer) requests(t testing.TB) []apiRequest {
	t.Helper()
	evs, err := s.c.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	var out []apiRequest
	for _, ev := range evs {
		if !strings.HasPrefix(ev.UserAgent, "listwatch/") {
			continue
		}
		u, err := url.Parse(ev.RequestURI)
		if err != nil {
			t.Fatalf("audit log: request URI %q: %v", ev.RequestURI, err)
		}
		out = append(out, apiRequest{verb: ev.Verb, path: u.Path, query: u.Query(), at: ev.Received})
	}
	return out
}

// simServer is the apiserver simulator over TLS with HTTP/2, as
// kube-apiserver serves. The unprivileged user is refused with 403, as
// RBAC refuses it (the simulator has no authorization of its own).
type simServer struct {
	s *apisim.Server

	mu   sync.Mutex
	reqs []apiRequest
}

const (
	simAdminToken  = "sim-admin"
	simNobodyToken = "sim-nobody"
)

func newSimServer(t *testing.T) *simServer {
	t.Helper()
	var res []apisim.Resource
	for _, k := range allKinds {
		res = append(res, k.sim)
	}
	// Bookmarks as rarely as kube-apiserver sends them: they move an idle
	// informer's resourceVersion, which decides whether it can resume
	// after a restart.
	s := &simServer{s: apisim.New(apisim.WithResources(res...), apisim.WithBookmarkInterval(time.Minute))}
	// Injections that match nothing record the requests; they come first,
	// since a request stops at the first injection that matches.
	for _, v := range []apisim.Verb{apisim.VerbList, apisim.VerbWatch} {
		s.s.Inject(apisim.Match{Verb: v, Request: func(r *http.Request) bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.reqs = append(s.reqs, apiRequest{verb: string(v), path: r.URL.Path, query: r.URL.Query(), at: time.Now()})
			return false
		}}, apisim.Fault{}, 0)
	}
	for _, k := range allKinds {
		gr := k.sim.GroupResource()
		for _, v := range []apisim.Verb{apisim.VerbList, apisim.VerbWatch} {
			s.s.Inject(apisim.Match{Verb: v, Resource: k.name, Request: func(r *http.Request) bool {
				return r.Header.Get("Authorization") == "Bearer "+simNobodyToken
			}}, apisim.StatusResponse(metav1.Status{
				Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
				Message: fmt.Sprintf("%s is forbidden: User %q cannot %s resource %q in API group %q", gr, "sim-nobody", v, gr.Resource, gr.Group),
				Details: &metav1.StatusDetails{Group: gr.Group, Kind: gr.Resource},
			}), 0)
		}
	}
	if err := s.s.StartTLS(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.s.Close)
	return s
}

func (s *simServer) config(addr string, unprivileged bool) *reflector.Config {
	token := simAdminToken
	if unprivileged {
		token = simNobodyToken
	}
	return &reflector.Config{Host: "https://" + addr, BearerToken: token, TLS: reflector.TLSConfig{CAData: s.s.CAPEM()}}
}

func (s *simServer) addr() string { return strings.TrimPrefix(s.s.URL(), "https://") }

func (s *simServer) install(testing.TB, kind) {}

func (s *simServer) createNamespace(testing.TB, string) {} // namespaces are not simulated

func (s *simServer) objects(k kind) apisim.Objects[*unstructured.Unstructured] {
	return apisim.Of[*unstructured.Unstructured](s.s, k.sim)
}

func (s *simServer) create(t testing.TB, k kind, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	out, err := s.objects(k).Create(obj)
	if err != nil {
		t.Fatalf("creating %s %s/%s: %v", k.name, obj.GetNamespace(), obj.GetName(), err)
	}
	return out
}

func (s *simServer) update(t testing.TB, k kind, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	out, err := s.objects(k).Update(obj)
	if err != nil {
		t.Fatalf("updating %s %s/%s: %v", k.name, obj.GetNamespace(), obj.GetName(), err)
	}
	return out
}

func (s *simServer) remove(t testing.TB, k kind, ns, name string) {
	t.Helper()
	if _, err := s.objects(k).Delete(ns, name); err != nil {
		t.Fatalf("deleting %s %s/%s: %v", k.name, ns, name, err)
	}
}

func (s *simServer) list(t testing.TB, k kind, ns, selector string) []*unstructured.Unstructured {
	t.Helper()
	all, _, err := s.objects(k).List(ns)
	if err != nil {
		t.Fatalf("listing %s in %q: %v", k.name, ns, err)
	}
	sel, err := labels.Parse(selector)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, o := range all {
		if sel.Matches(labels.Set(o.GetLabels())) {
			out = append(out, o)
		}
	}
	return out
}

func (s *simServer) restart(testing.TB) { s.s.Restart() }

func (s *simServer) compact(testing.TB) { s.s.Compact() }

func (s *simServer) requests(testing.TB) []apiRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]apiRequest, len(s.reqs))
	copy(out, s.reqs)
	return out
}

// isExpired reports whether err is the apiserver's 410: the
// resourceVersion is too old.
func isExpired(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}
