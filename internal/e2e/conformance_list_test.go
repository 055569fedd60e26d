package e2e

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// continueOf returns a list body's metadata.continue.
func continueOf(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	s, _ := meta["continue"].(string)
	return s
}

// decodeContinue decodes kube-apiserver's continue token (unpadded
// base64url JSON) and reports its fields with the resource version
// replaced by whether it equals listRV.
func decodeContinue(t *testing.T, token, listRV string) map[string]any {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(token)
	require.NoError(t, err, "continue token %q is not unpadded base64url", token)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m), "continue token decodes to %q", b)
	out := map[string]any{}
	for k, v := range m {
		if k == "rv" {
			out["rv (type)"] = typeName(v)
			out["rv == list resourceVersion"] = jsonNumberString(v) == listRV
			if f, ok := v.(float64); ok && f <= 0 {
				out["rv"] = v // a marker, not a real version
			}
			continue
		}
		out[k] = v
	}
	return out
}

func typeName(v any) string {
	switch v.(type) {
	case float64:
		return "number"
	case string:
		return "string"
	default:
		return "other"
	}
}

func jsonNumberString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestConformancePagedList(t *testing.T) {
	const ns = "conf-paged-list"
	a := adminAPI(t, shared)
	rec := newRecorder(t, "paged-list", "A LIST of 5 pods with limit=2, followed through its continue tokens; then limit with resourceVersion=0 and with an exact resourceVersion.")
	a.createNamespace(ns)
	var lastRV string
	for _, name := range []string{"alpha", "bravo", "charlie", "delta", "echo"} {
		lastRV = a.createPod(ns, name, map[string]string{"app": "paged"})
	}

	path := "/api/v1/namespaces/" + ns + "/pods?limit=2"
	first := a.do("GET", path, "", nil)
	require.Equal(t, http.StatusOK, first.status, "%s", first.body)
	rec.plain("first page", "GET", path, "", first)
	page1 := first.json(t)
	listRV := resourceVersion(page1)
	rec.fact("list resourceVersion >= last created pod's", parseRV(t, listRV) >= parseRV(t, lastRV))
	token := continueOf(page1)
	require.NotEmpty(t, token)
	rec.fact("continue token 1 decoded", decodeContinue(t, token, listRV))

	for i, step := range []string{"second page", "last page"} {
		path := "/api/v1/namespaces/" + ns + "/pods?limit=2&continue=" + url.QueryEscape(token)
		res := a.do("GET", path, "", nil)
		require.Equal(t, http.StatusOK, res.status, "%s", res.body)
		rec.plain(step, "GET", path, "", res)
		page := res.json(t)
		rec.fact(step+": resourceVersion == first page's", resourceVersion(page) == listRV)
		token = continueOf(page)
		if i == 0 {
			require.NotEmpty(t, token)
			rec.fact("continue token 2 decoded", decodeContinue(t, token, listRV))
		}
	}
	require.Empty(t, token, "the last page has no continue token")

	path = "/api/v1/namespaces/" + ns + "/pods?limit=2&resourceVersion=0"
	res := a.do("GET", path, "", nil)
	rec.plain("limit=2 with resourceVersion=0 (any version, from the watch cache)", "GET", path, "", res)

	path = "/api/v1/namespaces/" + ns + "/pods?limit=2&resourceVersion=" + listRV + "&resourceVersionMatch=Exact"
	res = a.do("GET", path, "", nil)
	rec.plain("limit=2 at the first page's resourceVersion, Exact", "GET", path, "", res)
	if res.status == http.StatusOK {
		rec.fact("Exact list: resourceVersion == requested", resourceVersion(res.json(t)) == listRV)
	}

	path = "/api/v1/namespaces/" + ns + "/pods?limit=2&resourceVersion=" + listRV + "&resourceVersionMatch=NotOlderThan"
	res = a.do("GET", path, "", nil)
	rec.plain("limit=2 at the first page's resourceVersion, NotOlderThan", "GET", path, "", res)
}

func TestConformanceInvalidListParameters(t *testing.T) {
	const ns = "conf-invalid-params"
	a := adminAPI(t, shared)
	rec := newRecorder(t, "invalid-parameters", "LIST and WATCH parameter combinations the apiserver refuses (or accepts), with the Status it returns.")
	a.createNamespace(ns)
	for _, name := range []string{"alpha", "bravo", "charlie"} {
		a.createPod(ns, name, nil)
	}
	page := a.must("GET", "/api/v1/namespaces/"+ns+"/pods?limit=1", nil, http.StatusOK)
	token, listRV := continueOf(page), resourceVersion(page)
	require.NotEmpty(t, token)

	base := "/api/v1/namespaces/" + ns + "/pods?"
	cases := []struct{ step, query string }{
		{"resourceVersionMatch without resourceVersion", "resourceVersionMatch=NotOlderThan"},
		{"resourceVersionMatch=Exact without resourceVersion", "resourceVersionMatch=Exact"},
		{"resourceVersionMatch=Exact with resourceVersion=0", "resourceVersion=0&resourceVersionMatch=Exact"},
		{"unknown resourceVersionMatch", "resourceVersion=" + listRV + "&resourceVersionMatch=Newest"},
		{"continue with resourceVersion", "limit=1&continue=" + url.QueryEscape(token) + "&resourceVersion=" + listRV},
		{"continue with resourceVersionMatch", "limit=1&continue=" + url.QueryEscape(token) + "&resourceVersionMatch=NotOlderThan"},
		{"continue that is not a token", "limit=1&continue=garbage"},
		{"resourceVersion that is not a number", "resourceVersion=abc"},
		{"watch from a resourceVersion that is not a number", "watch=true&resourceVersion=abc&timeoutSeconds=1"},
		{"streaming list at least as new as a resourceVersion that is not a number", "watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersion=abc&resourceVersionMatch=NotOlderThan&timeoutSeconds=1"},
		{"negative limit", "limit=-1"},
		{"watch with resourceVersionMatch=Exact", "watch=true&resourceVersion=" + listRV + "&resourceVersionMatch=Exact"},
		{"watch with resourceVersionMatch=NotOlderThan without sendInitialEvents", "watch=true&resourceVersion=" + listRV + "&resourceVersionMatch=NotOlderThan&timeoutSeconds=1"},
		{"watch with a continue token", "watch=true&continue=" + url.QueryEscape(token) + "&timeoutSeconds=1"},
		{"watch with limit", "watch=true&limit=1&resourceVersion=" + listRV + "&timeoutSeconds=1"},
	}
	for _, c := range cases {
		res := a.do("GET", base+c.query, "", nil)
		rec.plain(c.step, "GET", base+c.query, "", res)
	}
}

func TestConformanceErrors(t *testing.T) {
	const ns = "conf-errors"
	a := adminAPI(t, shared)
	rec := newRecorder(t, "errors", "404, 409, 401 and 403 answers: the Status objects (or not) behind them.")
	a.createNamespace(ns)
	pod := a.must("POST", "/api/v1/namespaces/"+ns+"/pods", podManifest("alpha", nil), http.StatusCreated)
	staleRV := resourceVersion(pod)
	a.labelPod(ns, "alpha", map[string]any{"touched": "yes"})

	get := func(step, path string) {
		rec.plain(step, "GET", path, "", a.do("GET", path, "", nil))
	}
	get("get a pod that does not exist", "/api/v1/namespaces/"+ns+"/pods/missing")
	get("list pods in a namespace that does not exist", "/api/v1/namespaces/conf-no-such-namespace/pods")
	get("get a pod in a namespace that does not exist", "/api/v1/namespaces/conf-no-such-namespace/pods/alpha")
	get("an unknown resource of the core group", "/api/v1/widgets")
	get("an unknown group", "/apis/widgets.example.com/v1/widgets")
	get("watch an unknown resource", "/api/v1/widgets?watch=true")

	path := "/api/v1/namespaces/conf-no-such-namespace/pods"
	rec.plain("create a pod in a namespace that does not exist", "POST", path, "", a.do("POST", path, "", podManifest("alpha", nil)))
	path = "/api/v1/namespaces/" + ns + "/pods"
	rec.plain("create a pod that exists", "POST", path, "", a.do("POST", path, "", podManifest("alpha", nil)))

	stale := podManifest("alpha", nil)
	stale["metadata"].(map[string]any)["resourceVersion"] = staleRV
	path = "/api/v1/namespaces/" + ns + "/pods/alpha"
	rec.plain("update with a stale resourceVersion", "PUT", path, "", a.do("PUT", path, "", stale))
	rec.plain("delete with a wrong uid precondition", "DELETE", path, "", a.do("DELETE", path, "", map[string]any{
		"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": map[string]any{"uid": "00000000-0000-0000-0000-000000000000"},
	}))

	nobody := &api{t: t, base: shared.URL(), client: shared.HTTPClient(shared.UnprivilegedToken())}
	path = "/api/v1/namespaces/" + ns + "/pods"
	rec.plain("list as a user without any role", "GET", path, "", nobody.do("GET", path, "", nil))
	path = "/api/v1/namespaces/" + ns + "/pods?watch=true"
	rec.plain("watch as a user without any role", "GET", path, "", nobody.do("GET", path, "", nil))
	bad := &api{t: t, base: shared.URL(), client: shared.HTTPClient("not-a-token")}
	path = "/api/v1/namespaces/" + ns + "/pods"
	rec.plain("list with an unknown bearer token", "GET", path, "", bad.do("GET", path, "", nil))
	path = "/api/v1/namespaces/" + ns + "/pods/missing"
	res := a.do("GET", path, "application/vnd.kubernetes.protobuf", nil)
	rec.custom("a 404 asked for in protobuf", "GET", path, "application/vnd.kubernetes.protobuf", response{
		Status: res.status, Headers: pickHeaders(res.header), Body: describeProtobuf(res.body),
	})
}

func TestConformanceTooLargeResourceVersionList(t *testing.T) {
	t.Parallel() // each request waits for the server's timeout
	const ns = "conf-too-large-list"
	a := adminAPI(t, shared)
	rec := newRecorder(t, "too-large-rv-list", "LIST with a resourceVersion far beyond the current one; the time each took is in timings.json.")
	a.createNamespace(ns)
	a.createPod(ns, "alpha", nil)
	base := "/api/v1/namespaces/" + ns + "/pods?resourceVersion=" + tooLargeRV
	cases := []struct{ step, query string }{
		{"NotOlderThan", "&resourceVersionMatch=NotOlderThan"},
		{"no resourceVersionMatch", ""},
		{"no resourceVersionMatch, limit=1", "&limit=1"},
		{"Exact", "&resourceVersionMatch=Exact"},
		{"Exact, limit=1", "&resourceVersionMatch=Exact&limit=1"},
	}
	for _, c := range cases {
		res := a.do("GET", base+c.query, "", nil)
		rec.plain(c.step, "GET", base+c.query, "", res)
		if res.status != http.StatusOK {
			msg, _ := res.json(t)["message"].(string)
			rec.fact(c.step+": message names the requested resourceVersion", strings.Contains(msg, tooLargeRV))
		}
		recordTiming(t, "too-large resourceVersion list, "+c.step, res.elapsed)
		assert.Less(t, res.elapsed, 20*time.Second)
	}
}

func TestConformanceProtobufList(t *testing.T) {
	const ns = "conf-protobuf-list"
	a := adminAPI(t, shared)
	rec := newRecorder(t, "protobuf-list", "LIST and GET in protobuf: Content-Type, the k8s\\x00 magic, the runtime.Unknown envelope; the objects decoded and shown as JSON.")
	a.createNamespace(ns)
	a.createPod(ns, "alpha", map[string]string{"app": "proto"})
	a.createPod(ns, "bravo", map[string]string{"app": "proto"})
	for _, c := range []struct{ step, path, accept string }{
		{"list in protobuf", "/api/v1/namespaces/" + ns + "/pods?limit=1", "application/vnd.kubernetes.protobuf"},
		{"list, client-go's protobuf Accept", "/api/v1/namespaces/" + ns + "/pods", "application/vnd.kubernetes.protobuf,application/json"},
		{"get in protobuf", "/api/v1/namespaces/" + ns + "/pods/alpha", "application/vnd.kubernetes.protobuf"},
		{"list asking for the watch stream type", "/api/v1/namespaces/" + ns + "/pods", "application/vnd.kubernetes.protobuf;stream=watch"},
		{"list in protobuf as PartialObjectMetadataList", "/api/v1/namespaces/" + ns + "/pods", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"},
	} {
		res := a.do("GET", c.path, c.accept, nil)
		rec.custom(c.step, "GET", c.path, c.accept, response{
			Status: res.status, Headers: pickHeaders(res.header), Body: describeProtobuf(res.body),
		})
	}
}

func TestConformancePartialObjectMetadataList(t *testing.T) {
	const ns = "conf-partial-list"
	a := adminAPI(t, shared)
	rec := newRecorder(t, "partial-metadata-list", "LIST and GET asking for PartialObjectMetadata(List) in JSON: the metadata-only form informers of metadata use.")
	a.createNamespace(ns)
	a.createPod(ns, "alpha", map[string]string{"app": "meta"})
	a.createPod(ns, "bravo", map[string]string{"app": "meta"})
	for _, c := range []struct{ step, path, accept string }{
		{"list as PartialObjectMetadataList v1", "/api/v1/namespaces/" + ns + "/pods?limit=1", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"},
		{"list as PartialObjectMetadataList v1beta1", "/api/v1/namespaces/" + ns + "/pods", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1"},
		{"list, with a JSON fallback", "/api/v1/namespaces/" + ns + "/pods", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"},
		{"list asking for the single-object form", "/api/v1/namespaces/" + ns + "/pods", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"},
		{"get as PartialObjectMetadata", "/api/v1/namespaces/" + ns + "/pods/alpha", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"},
		{"get asking for the list form", "/api/v1/namespaces/" + ns + "/pods/alpha", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"},
		{"get of a missing pod as PartialObjectMetadata", "/api/v1/namespaces/" + ns + "/pods/missing", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"},
	} {
		rec.plain(c.step, "GET", c.path, c.accept, a.do("GET", c.path, c.accept, nil))
	}
}

// TestEmptyListsHaveItems: kube-apiserver writes "items" in a JSON list of
// nothing, from etcd and from its watch cache, paged or not, typed or as
// metadata. wire.DecodeJSONList refuses a body without it ({} from a
// proxy), which would otherwise empty a cache. Asserted, not recorded.
func TestEmptyListsHaveItems(t *testing.T) {
	const ns = "conf-empty-list"
	a := adminAPI(t, shared)
	a.createNamespace(ns)
	rv := resourceVersion(a.must("POST", "/api/v1/namespaces/"+ns+"/configmaps", map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "only"},
	}, http.StatusCreated))
	for _, resource := range []string{"pods", "secrets"} {
		for _, query := range []string{"", "?limit=5", "?resourceVersion=0", "?resourceVersion=" + rv + "&resourceVersionMatch=NotOlderThan", "?labelSelector=none%3Dhere"} {
			for _, accept := range []string{"application/json", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"} {
				path := "/api/v1/namespaces/" + ns + "/" + resource + query
				res := a.do("GET", path, accept, nil)
				if res.status != http.StatusOK {
					t.Errorf("GET %s (%s): %d %s", path, accept, res.status, res.body)
					continue
				}
				items, ok := res.json(t)["items"]
				if !ok {
					t.Errorf("GET %s (%s): no \"items\" in %s", path, accept, res.body)
				} else if list, _ := items.([]any); len(list) != 0 {
					t.Errorf("GET %s (%s): %d items, want none", path, accept, len(list))
				}
			}
		}
	}
	// The configmaps list is not empty: the same request shows items.
	if items, _ := a.do("GET", "/api/v1/namespaces/"+ns+"/configmaps", "application/json", nil).json(t)["items"].([]any); len(items) != 1 {
		t.Errorf("configmaps: %d items, want 1", len(items))
	}
}
