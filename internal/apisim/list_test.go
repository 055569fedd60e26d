package apisim_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/internal/apisim"
)

// kube-apiserver over etcd never answers at resourceVersion "0": etcd's
// first revision is 1. An empty server lists (and ends a watch's initial
// events) at "1", and its first write comes after; apisim answered "0",
// which clients treat as "any resourceVersion", not as a state.
func TestEmptyServerIsAtResourceVersionOne(t *testing.T) {
	s := start(t, apisim.WithBookmarkInterval(0))
	assert.Equal(t, "1", s.ResourceVersion())
	assert.Equal(t, "1", getList(t, s, "/api/v1/pods").Metadata.ResourceVersion)
	w := watch(t, s, "/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
	e := w.next(t)
	require.Equal(t, "BOOKMARK", e.Type)
	assert.Equal(t, "1", e.rv(t))

	assert.Equal(t, "2", createPods(t, s, "default", 1))
	assert.Equal(t, "2", getList(t, s, "/api/v1/pods").Metadata.ResourceVersion)
}

func TestListPagesServeTheFirstPageSnapshot(t *testing.T) {
	s := start(t)
	createPods(t, s, "default", 10)
	createPods(t, s, "other", 5)
	pods := apisim.Of[*corev1.Pod](s, apisim.Pods())

	first := getList(t, s, "/api/v1/pods?limit=4")
	assert.Equal(t, []string{"p0", "p1", "p2", "p3"}, first.names())
	require.NotEmpty(t, first.Metadata.Continue)
	require.NotNil(t, first.Metadata.RemainingItemCount)
	assert.Equal(t, int64(11), *first.Metadata.RemainingItemCount)
	token, err := base64.RawURLEncoding.DecodeString(first.Metadata.Continue)
	require.NoError(t, err)
	assert.JSONEq(t, `{"v":"meta.k8s.io/v1","rv":`+first.Metadata.ResourceVersion+`,"start":"/default/p3\u0000"}`, string(token))

	// Changes after the first page must not show in the next pages.
	_, err = pods.Create(apisim.MakePod("default", "p10"))
	require.NoError(t, err)
	_, err = pods.Delete("default", "p6")
	require.NoError(t, err)
	p5, err := pods.Get("default", "p5")
	require.NoError(t, err)
	oldRV := p5.ResourceVersion
	p5.Labels["changed"] = "yes"
	_, err = pods.Update(p5)
	require.NoError(t, err)

	var names, rvs []string
	next := first
	for next.Metadata.Continue != "" {
		next = getList(t, s, "/api/v1/pods?limit=4&continue="+next.Metadata.Continue)
		assert.Equal(t, first.Metadata.ResourceVersion, next.Metadata.ResourceVersion)
		for _, it := range next.Items {
			names = append(names, it.GetNamespace()+"/"+it.GetName())
			if it.GetName() == "p5" {
				rvs = append(rvs, it.GetResourceVersion())
			}
		}
	}
	assert.Equal(t, []string{"default/p4", "default/p5", "default/p6", "default/p7", "default/p8", "default/p9",
		"other/p0", "other/p1", "other/p2", "other/p3", "other/p4"}, names)
	assert.Equal(t, []string{oldRV}, rvs)
	assert.Nil(t, next.Metadata.RemainingItemCount)
}

func TestListPagesWithSelectorOmitRemainingCount(t *testing.T) {
	s := start(t)
	cms := apisim.Of[*corev1.ConfigMap](s, apisim.ConfigMaps())
	for i := range 6 {
		cm := apisim.MakeConfigMap("default", "cm-"+strconv.Itoa(i), 1)
		cm.Labels["parity"] = []string{"even", "odd"}[i%2]
		_, err := cms.Create(cm)
		require.NoError(t, err)
	}
	l := getList(t, s, "/api/v1/namespaces/default/configmaps?limit=2&labelSelector=parity%3Deven")
	assert.Equal(t, []string{"cm-0", "cm-2"}, l.names())
	assert.Nil(t, l.Metadata.RemainingItemCount)
	require.NotEmpty(t, l.Metadata.Continue)
	l = getList(t, s, "/api/v1/namespaces/default/configmaps?limit=2&labelSelector=parity%3Deven&continue="+l.Metadata.Continue)
	assert.Equal(t, []string{"cm-4"}, l.names())
	assert.Empty(t, l.Metadata.Continue)

	l = getList(t, s, "/api/v1/namespaces/default/configmaps?limit=2&fieldSelector=metadata.namespace%3Ddefault")
	assert.Equal(t, []string{"cm-0", "cm-1"}, l.names())
	assert.Nil(t, l.Metadata.RemainingItemCount, "a field selector omits it too")
	require.NotEmpty(t, l.Metadata.Continue)
}

func TestContinueExpiresWithCompaction(t *testing.T) {
	s := start(t)
	createPods(t, s, "default", 5)
	first := getList(t, s, "/api/v1/namespaces/default/pods?limit=2")
	createPods(t, s, "other", 1) // moves the RV past the snapshot
	s.Compact()

	resp, body := get(t, s, "/api/v1/namespaces/default/pods?limit=2&continue="+first.Metadata.Continue)
	st := status(t, resp, body, http.StatusGone)
	assert.Equal(t, metav1.StatusReasonExpired, st.Reason)
	assert.Contains(t, st.Message, "The provided continue parameter is too old to display a consistent list result.")
	require.NotEmpty(t, st.Continue, "the 410 carries a token that goes on from the newest state")

	rest := getList(t, s, "/api/v1/namespaces/default/pods?limit=10&continue="+st.Continue)
	assert.Equal(t, []string{"p2", "p3", "p4"}, rest.names())
	assert.Equal(t, s.ResourceVersion(), rest.Metadata.ResourceVersion)
}

func TestContinueExpiresAfterTTL(t *testing.T) {
	s := start(t, apisim.WithContinueTTL(20*time.Millisecond))
	createPods(t, s, "default", 5)
	first := getList(t, s, "/api/v1/namespaces/default/pods?limit=2")
	// Time must pass for a TTL; poll instead of guessing a sleep.
	require.Eventually(t, func() bool {
		resp, _ := get(t, s, "/api/v1/namespaces/default/pods?limit=2&continue="+first.Metadata.Continue)
		return resp.StatusCode == http.StatusGone
	}, 5*time.Second, 10*time.Millisecond)
}

func TestListResourceVersionSemantics(t *testing.T) {
	s := start(t)
	rv2 := createPods(t, s, "default", 2)
	rv4 := createPods(t, s, "other", 2)

	l := getList(t, s, "/api/v1/pods")
	assert.Equal(t, rv4, l.Metadata.ResourceVersion, "unset: the newest state")
	assert.Len(t, l.Items, 4)

	l = getList(t, s, "/api/v1/pods?resourceVersion=0&limit=1")
	assert.Len(t, l.Items, 4, "rv=0: limit ignored, as by the watch cache")
	assert.Empty(t, l.Metadata.Continue)

	l = getList(t, s, "/api/v1/pods?resourceVersion="+rv2+"&resourceVersionMatch=Exact")
	assert.Equal(t, rv2, l.Metadata.ResourceVersion)
	assert.Len(t, l.Items, 2, "Exact: the state at that RV")

	l = getList(t, s, "/api/v1/pods?resourceVersion="+rv2+"&limit=500")
	assert.Equal(t, rv2, l.Metadata.ResourceVersion, "rv with limit and no match: exact (legacy)")

	l = getList(t, s, "/api/v1/pods?resourceVersion="+rv2+"&resourceVersionMatch=NotOlderThan")
	assert.Equal(t, rv4, l.Metadata.ResourceVersion, "NotOlderThan: the newest state")

	l = getList(t, s, "/api/v1/pods?resourceVersion="+rv2)
	assert.Equal(t, rv4, l.Metadata.ResourceVersion, "rv without limit or match: not older than")

	createPods(t, s, "third", 1)
	s.Compact()
	resp, body := get(t, s, "/api/v1/pods?resourceVersion="+rv2+"&resourceVersionMatch=Exact")
	st := status(t, resp, body, http.StatusGone)
	assert.Equal(t, metav1.StatusReasonExpired, st.Reason)
	assert.Equal(t, "The resourceVersion for the provided list is too old.", st.Message)
}

func TestListInvalidOptions(t *testing.T) {
	s := start(t)
	createPods(t, s, "default", 3)
	first := getList(t, s, "/api/v1/pods?limit=1")
	for _, tc := range []struct {
		query   string
		code    int
		reason  metav1.StatusReason
		message string
	}{
		{"resourceVersionMatch=Exact", 422, metav1.StatusReasonInvalid,
			`ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided`},
		{"resourceVersion=0&resourceVersionMatch=Exact", 422, metav1.StatusReasonInvalid,
			`resourceVersionMatch "exact" is forbidden for resourceVersion "0"`},
		{"resourceVersion=1&resourceVersionMatch=Newest", 422, metav1.StatusReasonInvalid,
			`resourceVersionMatch: Unsupported value: "Newest"`},
		{"resourceVersion=1&resourceVersionMatch=Exact&continue=" + first.Metadata.Continue, 422, metav1.StatusReasonInvalid,
			"resourceVersionMatch is forbidden when continue is provided"},
		{"sendInitialEvents=true", 422, metav1.StatusReasonInvalid, "sendInitialEvents is forbidden for list"},
		{"resourceVersion=1&continue=" + first.Metadata.Continue, 400, metav1.StatusReasonBadRequest,
			"specifying resource version is not allowed when using continue"},
		{"continue=bm90LWpzb24", 400, metav1.StatusReasonBadRequest, "invalid continue token"},
		// The token first, then the resourceVersion beside it, then the
		// resourceVersion itself, as storage.ValidateListOptions checks.
		{"resourceVersion=abc&continue=" + first.Metadata.Continue, 400, metav1.StatusReasonBadRequest,
			"specifying resource version is not allowed when using continue"},
		{"resourceVersion=00&continue=" + first.Metadata.Continue, 400, metav1.StatusReasonBadRequest,
			"specifying resource version is not allowed when using continue"},
		{"resourceVersion=1&continue=bm90LWpzb24", 400, metav1.StatusReasonBadRequest, "invalid continue token"},
		{"resourceVersion=abc&continue=bm90LWpzb24", 400, metav1.StatusReasonBadRequest, "invalid continue token"},
		{"labelSelector=" + url.QueryEscape("a b c"), 400, metav1.StatusReasonBadRequest, ""},
		{"fieldSelector=spec.foo%3Dbar", 400, metav1.StatusReasonBadRequest, "field label not supported: spec.foo"},
		{"resourceVersion=abc", 400, metav1.StatusReasonBadRequest,
			`invalid resource version: resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`},
	} {
		t.Run(tc.query, func(t *testing.T) {
			resp, body := get(t, s, "/api/v1/pods?"+tc.query)
			st := status(t, resp, body, tc.code)
			assert.Equal(t, tc.reason, st.Reason)
			assert.Contains(t, st.Message, tc.message)
		})
	}
}

// A continue token with resourceVersion "0" reads the rest in one page,
// whatever the limit: kube-apiserver's watch cache serves it, and its list
// limit for "0" is none.
func TestListContinueAtResourceVersionZeroIgnoresLimit(t *testing.T) {
	s := start(t)
	createPods(t, s, "default", 4)
	first := getList(t, s, "/api/v1/namespaces/default/pods?limit=1")
	require.NotEmpty(t, first.Metadata.Continue)
	rest := getList(t, s, "/api/v1/namespaces/default/pods?limit=1&resourceVersion=0&continue="+url.QueryEscape(first.Metadata.Continue))
	assert.Len(t, rest.Items, 3)
	assert.Empty(t, rest.Metadata.Continue)
}

func TestListTooLargeResourceVersion(t *testing.T) {
	s := start(t, apisim.WithTooLargeWait(50*time.Millisecond))
	rv := createPods(t, s, "default", 1)
	resp, body := get(t, s, "/api/v1/pods?resourceVersion=1000&resourceVersionMatch=NotOlderThan")
	st := status(t, resp, body, http.StatusGatewayTimeout)
	assert.Equal(t, metav1.StatusReasonTimeout, st.Reason)
	assert.Equal(t, "Timeout: Too large resource version: 1000, current: "+rv, st.Message)
	require.NotNil(t, st.Details)
	assert.Equal(t, int32(1), st.Details.RetryAfterSeconds)
	assert.Equal(t, []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}, st.Details.Causes)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
}

// TestListWaitsForAResourceVersionAboutToExist checks that a list at a
// resourceVersion one past the server's waits for it, and answers once a
// write creates it: the write happens only after the request is waiting.
func TestListWaitsForAResourceVersionAboutToExist(t *testing.T) {
	s := start(t, apisim.WithTooLargeWait(10*time.Second))
	next := rvPlus(t, createPods(t, s, "default", 1), 1)
	codes := make(chan int, 1)
	go func() {
		resp, err := s.Client().Get(s.URL() + "/api/v1/pods?resourceVersion=" + next)
		if err != nil {
			codes <- 0
			return
		}
		resp.Body.Close()
		codes <- resp.StatusCode
	}()
	require.Eventually(t, s.WaitingForRV, 5*time.Second, time.Millisecond, "the list waits for resourceVersion %s", next)
	select {
	case code := <-codes:
		t.Fatalf("the list answered %d before resourceVersion %s existed", code, next)
	default:
	}
	createPods(t, s, "other", 1)
	assert.Equal(t, http.StatusOK, <-codes)
}

func TestListSelectors(t *testing.T) {
	s := start(t)
	pods := apisim.Of[*corev1.Pod](s, apisim.Pods())
	for i, labels := range []map[string]string{
		{"app": "web", "tier": "front"},
		{"app": "web", "tier": "back"},
		{"app": "db", "tier": "back", "critical": "yes"},
		{"app": "cache"},
	} {
		p := apisim.MakePod([]string{"a", "b"}[i%2], "pod-"+strconv.Itoa(i))
		p.Labels = labels
		p.Spec.NodeName = "node-" + strconv.Itoa(i%2)
		_, err := pods.Create(p)
		require.NoError(t, err)
	}
	for _, tc := range []struct {
		selector string
		want     []string
	}{
		{"labelSelector=app%3Dweb", []string{"pod-0", "pod-1"}},
		{"labelSelector=app%3D%3Dweb", []string{"pod-0", "pod-1"}},
		{"labelSelector=app!%3Dweb", []string{"pod-2", "pod-3"}},
		{"labelSelector=" + url.QueryEscape("tier in (front,back)"), []string{"pod-0", "pod-2", "pod-1"}},
		{"labelSelector=" + url.QueryEscape("tier notin (front)"), []string{"pod-2", "pod-1", "pod-3"}},
		{"labelSelector=critical", []string{"pod-2"}},
		{"labelSelector=!tier", []string{"pod-3"}},
		{"labelSelector=" + url.QueryEscape("app=web,tier=back"), []string{"pod-1"}},
		{"fieldSelector=metadata.name%3Dpod-2", []string{"pod-2"}},
		{"fieldSelector=metadata.namespace%3Db", []string{"pod-1", "pod-3"}},
		{"fieldSelector=metadata.name!%3Dpod-2", []string{"pod-0", "pod-1", "pod-3"}},
		{"fieldSelector=spec.nodeName%3Dnode-1", []string{"pod-1", "pod-3"}},
	} {
		t.Run(tc.selector, func(t *testing.T) {
			l := getList(t, s, "/api/v1/pods?"+tc.selector)
			assert.ElementsMatch(t, tc.want, l.names())
		})
	}
	l := getList(t, s, "/api/v1/namespaces/a/pods?labelSelector=app%3Dweb")
	assert.Equal(t, []string{"pod-0"}, l.names(), "namespace path and selector combine")
}

func TestListClusterScopedAndCustomResources(t *testing.T) {
	s := start(t)
	nodes := apisim.Of[*corev1.Node](s, apisim.Nodes())
	n, err := nodes.Create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "ignored"}})
	require.NoError(t, err)
	assert.Empty(t, n.Namespace, "cluster-scoped objects have no namespace")
	l := getList(t, s, "/api/v1/nodes")
	assert.Equal(t, "NodeList", l.Kind)
	assert.Equal(t, []string{"n1"}, l.names())

	resp, _ := get(t, s, "/api/v1/namespaces/default/nodes")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	_, err = apisim.Of[*unstructured.Unstructured](s, widgets).Create(newWidget("default", "w1"))
	require.NoError(t, err)
	l = getList(t, s, "/apis/example.com/v1/namespaces/default/widgets")
	assert.Equal(t, "WidgetList", l.Kind)
	assert.Equal(t, "example.com/v1", l.APIVersion)
	assert.Equal(t, []string{"w1"}, l.names())
	assert.Equal(t, "blue", l.Items[0].Object["spec"].(map[string]any)["color"])
}

// A continue token whose snapshot RV is ahead of the server (token from
// another, further-ahead apiserver) must not be answered with the server's
// older state labelled with the token's RV (as apisim did). kube-apiserver's
// watch cache waits for the RV and fails with 504 "Too large resource
// version".
func TestContinueTokenFromAServerAhead(t *testing.T) {
	a := start(t)
	b := start(t, apisim.WithTooLargeWait(50*time.Millisecond))
	createPods(t, a, "default", 5) // A at RV 5
	createPods(t, b, "default", 3) // B at RV 3: lagging
	first := getList(t, a, "/api/v1/namespaces/default/pods?limit=2")
	require.NotEmpty(t, first.Metadata.Continue)

	resp, body := get(t, b, "/api/v1/namespaces/default/pods?limit=2&continue="+first.Metadata.Continue)
	if resp.StatusCode == http.StatusOK {
		var l list
		require.NoError(t, json.Unmarshal(body, &l))
		rv, _ := strconv.ParseUint(l.Metadata.ResourceVersion, 10, 64)
		cur, _ := strconv.ParseUint(b.ResourceVersion(), 10, 64)
		t.Fatalf("lagging server (at RV %d) answered 200 with metadata.resourceVersion=%d and items %v: state older than the RV it claims", cur, rv, l.names())
	}
	st := status(t, resp, body, http.StatusGatewayTimeout)
	require.Equal(t, "Timeout", string(st.Reason))
}

// GET on an object path with ?watch=1 is a plain GET in kube-apiserver
// (only collections turn a GET into a watch that way); apisim opened a
// watch stream.
func TestWatchParamOnAnObjectPathIsAGet(t *testing.T) {
	s := start(t)
	createPods(t, s, "default", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/api/v1/namespaces/default/pods/p0?watch=1", nil)
	resp, err := s.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var first map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&first))
	require.Equal(t, "Pod", first["kind"], "want the Pod object, got %v", first)
}

// Accept clauses of equal q rank specific types before wildcards in
// kube-apiserver's negotiation, so "*/*, application/vnd.kubernetes.protobuf"
// gets protobuf (apisim kept the header order and answered JSON).
func TestAcceptWildcardRanksLast(t *testing.T) {
	s := start(t)
	createPods(t, s, "default", 1)
	resp, _ := get(t, s, "/api/v1/namespaces/default/pods", "Accept", "*/*, application/vnd.kubernetes.protobuf")
	require.Equal(t, "application/vnd.kubernetes.protobuf", resp.Header.Get("Content-Type"))
}

// etcd serves reads at its compaction revision itself (only older ones are
// compacted), and Compact leaves the current state readable: an exact list
// at the compacted resourceVersion, and the pages of a list taken there.
func TestListAtTheCompactedResourceVersion(t *testing.T) {
	s := start(t)
	rv := createPods(t, s, "default", 3)
	s.Compact()

	l := getList(t, s, "/api/v1/pods?resourceVersionMatch=Exact&resourceVersion="+rv)
	assert.Equal(t, rv, l.Metadata.ResourceVersion)
	assert.Equal(t, []string{"p0", "p1", "p2"}, l.names())

	first := getList(t, s, "/api/v1/pods?limit=2")
	createPods(t, s, "other", 1) // the snapshot is now older than the server, not than the compaction
	next := getList(t, s, "/api/v1/pods?limit=2&continue="+first.Metadata.Continue)
	assert.Equal(t, rv, next.Metadata.ResourceVersion)
	assert.Equal(t, []string{"p2"}, next.names())
}

// kube-apiserver refuses a resourceVersion beside a continue token, except
// "0", which it treats as unset: the next page comes from the token's
// snapshot.
func TestContinueWithResourceVersionZero(t *testing.T) {
	s := start(t)
	createPods(t, s, "default", 3)
	first := getList(t, s, "/api/v1/pods?limit=2")
	createPods(t, s, "other", 1)

	next := getList(t, s, "/api/v1/pods?resourceVersion=0&limit=2&continue="+first.Metadata.Continue)
	assert.Equal(t, first.Metadata.ResourceVersion, next.Metadata.ResourceVersion)
	assert.Equal(t, []string{"p2"}, next.names())
}

// A token that decodes but names no snapshot, no start key, or a start key
// that climbs out of the list's scope gets kube-apiserver's 400.
func TestListRefusesMalformedContinueTokens(t *testing.T) {
	s := start(t)
	createPods(t, s, "default", 3)
	rv := s.ResourceVersion()
	for _, tc := range []struct{ token, message string }{
		{`{"v":"meta.k8s.io/v1","rv":0,"start":"/p0\u0000"}`,
			"invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"},
		{`{"v":"meta.k8s.io/v1","rv":` + rv + `,"start":""}`,
			"invalid continue token: continue key is not valid: encoded start key empty (version meta.k8s.io/v1)"},
		{`{"v":"meta.k8s.io/v1","rv":` + rv + `,"start":"/other/../p1"}`,
			"invalid continue token: continue key is not valid: /other/../p1"},
		{`{"v":"meta.k8s.io/v2","rv":` + rv + `,"start":"/p0\u0000"}`,
			"invalid continue token: continue key is not valid: server does not recognize this encoded version meta.k8s.io/v2"},
	} {
		t.Run(tc.token, func(t *testing.T) {
			token := base64.RawURLEncoding.EncodeToString([]byte(tc.token))
			resp, body := get(t, s, "/api/v1/namespaces/default/pods?limit=1&continue="+token)
			st := status(t, resp, body, http.StatusBadRequest)
			assert.Equal(t, metav1.StatusReasonBadRequest, st.Reason)
			assert.Equal(t, tc.message, st.Message)
		})
	}
}

// The server forgets when it issued tokens once it holds more than 1024
// snapshots' worth; a token it forgot because it had expired stays
// expired. Time is synctest's, the requests go straight to ServeHTTP.
func TestForgottenContinueTokenStaysExpired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := apisim.New(apisim.WithResources(apisim.Pods()), apisim.WithContinueTTL(time.Minute))
		defer s.Close()
		createPods(t, s, "default", 2)
		first := serveList(t, s, "/api/v1/pods?limit=1")
		require.NotEmpty(t, first.Metadata.Continue)

		time.Sleep(2 * time.Minute) // the first token expires
		for i := range 1025 {       // a token at each of 1025 newer snapshots
			createPods(t, s, "ns-"+strconv.Itoa(i), 1)
			serveList(t, s, "/api/v1/pods?limit=1")
		}

		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/pods?limit=1&continue="+first.Metadata.Continue, nil))
		assert.Equal(t, http.StatusGone, rec.Code, rec.Body.String())
	})
}

// serveList sends a LIST straight to ServeHTTP and decodes the answer.
func serveList(t *testing.T, s *apisim.Server, path string) list {
	t.Helper()
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var l list
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &l))
	return l
}

// The history window bounds exact lists and continue tokens too: once the
// events after a resourceVersion fell off the history, reads at it get 410,
// while reads at the start of the window are still served.
func TestHistoryWindowExpiresOlderListsAndTokens(t *testing.T) {
	s := start(t, apisim.WithHistorySize(3))
	old := createPods(t, s, "default", 2)
	first := getList(t, s, "/api/v1/pods?limit=1") // snapshot at old
	windowStart := createPods(t, s, "other", 1)    // the window's start once
	createPods(t, s, "more", 3)                    // the history keeps these three

	resp, body := get(t, s, "/api/v1/pods?resourceVersionMatch=Exact&resourceVersion="+old)
	assert.Equal(t, metav1.StatusReasonExpired, status(t, resp, body, http.StatusGone).Reason)
	resp, body = get(t, s, "/api/v1/pods?limit=1&continue="+first.Metadata.Continue)
	assert.Equal(t, metav1.StatusReasonExpired, status(t, resp, body, http.StatusGone).Reason)

	l := getList(t, s, "/api/v1/pods?resourceVersionMatch=Exact&resourceVersion="+windowStart)
	assert.Equal(t, []string{"p0", "p1", "p0"}, l.names())
}

// A field selector on a JSON-only resource of a kind with fields of its
// own (events.k8s.io Events are not in the default scheme) selects on
// those fields, as kube-apiserver does: the objects, unstructured, had
// only metadata fields, and type=Warning matched nothing.
func TestFieldSelectorOnAJSONOnlyKindWithFields(t *testing.T) {
	ev := apisim.Resource{Group: "events.k8s.io", Version: "v1", Resource: "events", Kind: "Event", ListKind: "EventList", Namespaced: true}
	s := start(t, apisim.WithResources(ev))
	evs := apisim.Of[*unstructured.Unstructured](s, ev)
	for name, typ := range map[string]string{"warn": "Warning", "norm": "Normal"} {
		_, err := evs.Create(&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "events.k8s.io/v1", "kind": "Event",
			"metadata": map[string]any{"namespace": "default", "name": name},
			"type":     typ, "reason": "R", "eventTime": "2024-01-01T00:00:00.000000Z",
		}})
		require.NoError(t, err)
	}
	l := getList(t, s, ev.Path("default")+"?fieldSelector="+url.QueryEscape("type=Warning"))
	assert.Equal(t, []string{"warn"}, l.names())
}

// status.podIP selects on status.podIP when it is set (the apiserver's
// conversion makes it the first of status.podIPs), and on the first of
// status.podIPs otherwise.
func TestPodIPFieldSelector(t *testing.T) {
	s := start(t)
	pods := apisim.Of[*corev1.Pod](s, apisim.Pods())
	a := apisim.MakePod("ns", "a")
	a.Status.PodIP = "10.0.0.1"
	b := apisim.MakePod("ns", "b")
	b.Status.PodIP, b.Status.PodIPs = "", []corev1.PodIP{{IP: "10.0.0.2"}}
	for _, p := range []*corev1.Pod{a, b} {
		_, err := pods.Create(p)
		require.NoError(t, err)
	}
	for ip, want := range map[string][]string{"10.0.0.1": {"a"}, "10.0.0.2": {"b"}} {
		l := getList(t, s, apisim.Pods().Path("ns")+"?fieldSelector="+url.QueryEscape("status.podIP="+ip))
		assert.Equal(t, want, l.names(), ip)
	}
}

// kube-apiserver writes a JSON list of a built-in kind from its Go type (a
// PodList of Pods): its items carry no kind or apiVersion, only the list
// does. A custom resource's items, unstructured, keep theirs, and so do
// metadata-only items (PartialObjectMetadata). apisim wrote every item
// with its kind, so clients that needed it there passed against apisim
// and failed against kube-apiserver.
func TestJSONListItemsCarryTheirKindAsKubeAPIServerWrites(t *testing.T) {
	jsonOnlyDeployments := apisim.Deployments()
	jsonOnlyDeployments.Protobuf = false
	s := start(t, apisim.WithResources(jsonOnlyDeployments))
	_, err := apisim.Of[*corev1.Pod](s, apisim.Pods()).Create(apisim.MakePod("default", "p"))
	require.NoError(t, err)
	_, err = apisim.Of[*unstructured.Unstructured](s, widgets).Create(newWidget("default", "w"))
	require.NoError(t, err)
	_, err = apisim.Of[*appsv1.Deployment](s, jsonOnlyDeployments).Create(&appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "d"}})
	require.NoError(t, err)

	// itemTypes lists each item's kind and apiVersion ("" when absent).
	itemTypes := func(path string, header ...string) []string {
		t.Helper()
		resp, body := get(t, s, path, header...)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
		var l struct{ Items []map[string]any }
		require.NoError(t, json.Unmarshal(body, &l))
		var out []string
		for _, it := range l.Items {
			kind, _ := it["kind"].(string)
			apiVersion, _ := it["apiVersion"].(string)
			out = append(out, kind+" "+apiVersion)
		}
		return out
	}
	assert.Equal(t, []string{" "}, itemTypes("/api/v1/pods"), "pods")
	assert.Equal(t, []string{" "}, itemTypes(jsonOnlyDeployments.Path("")), "JSON-only deployments")
	assert.Equal(t, []string{"Widget example.com/v1"}, itemTypes(widgets.Path("")), "custom resource")
	assert.Equal(t, []string{"PartialObjectMetadata meta.k8s.io/v1"},
		itemTypes("/api/v1/pods", "Accept", partialList), "metadata only")

	s.Inject(apisim.Match{Verb: apisim.VerbList}, apisim.WrongKind(), 1)
	assert.Equal(t, []string{"ConfigMap v1"}, itemTypes("/api/v1/pods"), "an item a fault gave another kind")

	// A watch event's object carries its kind, as kube-apiserver's do.
	resp, body := get(t, s, "/api/v1/pods?watch=1&timeoutSeconds=1")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), `"object":{"kind":"Pod","apiVersion":"v1",`)

	// A custom resource whose kind a scheme knows (WithScheme) is still a
	// custom resource: apiextensions-apiserver's items carry their kind.
	scheme := runtime.NewScheme()
	require.NoError(t, corev1.AddToScheme(scheme))
	require.NoError(t, appsv1.AddToScheme(scheme))
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	gadgetGV := schema.GroupVersion{Group: "example.com", Version: "v1"}
	scheme.AddKnownTypeWithName(gadgetGV.WithKind("Gadget"), &corev1.ConfigMap{})
	scheme.AddKnownTypeWithName(gadgetGV.WithKind("GadgetList"), &corev1.ConfigMapList{})
	gadgets := apisim.CustomResource("example.com", "v1", "gadgets", "Gadget", true)
	s = start(t, apisim.WithScheme(scheme), apisim.WithResources(gadgets))
	_, err = apisim.Of[*unstructured.Unstructured](s, gadgets).Create(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": map[string]any{"namespace": "default", "name": "g"}}})
	require.NoError(t, err)
	assert.Equal(t, []string{"Gadget example.com/v1"}, itemTypes(gadgets.Path("")), "custom resource of a kind the scheme knows")
}
