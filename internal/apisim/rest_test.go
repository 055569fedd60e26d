package apisim_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/listwatch/listwatch/internal/apisim"
)

func jsonBody(t *testing.T, v any) *strings.Reader {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return strings.NewReader(string(b))
}

func TestCreateGetUpdateDeleteOverHTTP(t *testing.T) {
	s := start(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "v"}}
	resp, body := do(t, s, http.MethodPost, "/api/v1/namespaces/default/configmaps", jsonBody(t, cm))
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(body))
	var created corev1.ConfigMap
	require.NoError(t, json.Unmarshal(body, &created))
	assert.Equal(t, "ConfigMap", created.Kind)
	assert.Equal(t, "default", created.Namespace, "namespace taken from the path")
	assert.NotEmpty(t, created.UID)
	assert.Equal(t, s.ResourceVersion(), created.ResourceVersion)
	assert.Equal(t, int64(1), created.Generation)
	assert.False(t, created.CreationTimestamp.IsZero())

	resp, body = get(t, s, "/api/v1/namespaces/default/configmaps/c")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.JSONEq(t, mustJSON(t, &created), string(body))

	created.Data["k"] = "w"
	resp, body = do(t, s, http.MethodPut, "/api/v1/namespaces/default/configmaps/c", jsonBody(t, &created))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var updated corev1.ConfigMap
	require.NoError(t, json.Unmarshal(body, &updated))
	assert.Equal(t, rvPlus(t, created.ResourceVersion, 1), updated.ResourceVersion)
	assert.Equal(t, created.UID, updated.UID)
	assert.Equal(t, int64(2), updated.Generation, "data is not metadata: new generation")

	resp, body = do(t, s, http.MethodDelete, "/api/v1/namespaces/default/configmaps/c", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.JSONEq(t, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success",
		"details":{"name":"c","kind":"configmaps","uid":"`+string(created.UID)+`"}}`, string(body))

	p := apisim.MakePod("default", "p")
	resp, _ = do(t, s, http.MethodPost, "/api/v1/namespaces/default/pods", jsonBody(t, p))
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	resp, body = do(t, s, http.MethodDelete, "/api/v1/namespaces/default/pods/p", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), `"kind":"Pod"`, "pods answer a delete with the object")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func TestStatusErrorShapes(t *testing.T) {
	s := start(t, apisim.WithResources(apisim.Deployments()))
	pods := apisim.Of[*corev1.Pod](s, apisim.Pods())
	p, err := pods.Create(apisim.MakePod("default", "x"))
	require.NoError(t, err)
	stale := p.DeepCopy()
	p.Labels["v"] = "2"
	_, err = pods.Update(p)
	require.NoError(t, err)

	for _, tc := range []struct {
		name         string
		method, path string
		body         any
		code         int
		want         string
	}{
		{"not found", http.MethodGet, "/api/v1/namespaces/default/pods/nope", nil, 404,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"nope\" not found","reason":"NotFound","details":{"name":"nope","kind":"pods"},"code":404}`},
		{"not found in a group", http.MethodGet, "/apis/apps/v1/namespaces/default/deployments/d", nil, 404,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"deployments.apps \"d\" not found","reason":"NotFound","details":{"name":"d","group":"apps","kind":"deployments"},"code":404}`},
		{"already exists", http.MethodPost, "/api/v1/namespaces/default/pods", apisim.MakePod("default", "x"), 409,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"x\" already exists","reason":"AlreadyExists","details":{"name":"x","kind":"pods"},"code":409}`},
		{"conflict", http.MethodPut, "/api/v1/namespaces/default/pods/x", stale, 409,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Operation cannot be fulfilled on pods \"x\": the object has been modified; please apply your changes to the latest version and try again","reason":"Conflict","details":{"name":"x","kind":"pods"},"code":409}`},
		{"delete missing", http.MethodDelete, "/api/v1/namespaces/default/pods/nope", nil, 404,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"nope\" not found","reason":"NotFound","details":{"name":"nope","kind":"pods"},"code":404}`},
		{"unknown resource", http.MethodGet, "/api/v1/foos", nil, 404,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}`},
		{"namespace mismatch", http.MethodPost, "/api/v1/namespaces/other/pods", apisim.MakePod("default", "y"), 400,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the namespace of the provided object does not match the namespace sent on the request","reason":"BadRequest","code":400}`},
		{"name mismatch", http.MethodPut, "/api/v1/namespaces/default/pods/other", stale, 400,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the name of the object (x) does not match the name on the URL (other)","reason":"BadRequest","code":400}`},
		{"missing name", http.MethodPost, "/api/v1/namespaces/default/configmaps", &corev1.ConfigMap{}, 422,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ConfigMap \"\" is invalid: metadata.name: Required value: name or generateName is required","reason":"Invalid","details":{"kind":"ConfigMap","causes":[{"reason":"FieldValueRequired","message":"Required value: name or generateName is required","field":"metadata.name"}]},"code":422}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body *strings.Reader
			if tc.body != nil {
				body = jsonBody(t, tc.body)
			} else {
				body = strings.NewReader("")
			}
			resp, got := do(t, s, tc.method, tc.path, body)
			assert.Equal(t, tc.code, resp.StatusCode)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			assert.JSONEq(t, tc.want, string(got))
		})
	}

	_, err = pods.Update(stale)
	assert.True(t, apierrors.IsConflict(err), "the Go API returns the same status errors: %v", err)
	_, err = pods.Get("default", "nope")
	assert.True(t, apierrors.IsNotFound(err))
	_, err = pods.Create(apisim.MakePod("default", "x"))
	assert.True(t, apierrors.IsAlreadyExists(err))
}

func TestGenerationAndNoOpUpdates(t *testing.T) {
	s := start(t, apisim.WithResources(apisim.Deployments()))
	deps := apisim.Of[*appsv1.Deployment](s, apisim.Deployments())
	d, err := deps.Create(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "d"}})
	require.NoError(t, err)
	assert.Equal(t, int64(1), d.Generation)

	same, err := deps.Update(d.DeepCopy())
	require.NoError(t, err)
	assert.Equal(t, d.ResourceVersion, same.ResourceVersion, "an update that changes nothing writes nothing")

	d.Status.Replicas = 3
	d, err = deps.Update(d)
	require.NoError(t, err)
	assert.Equal(t, int64(1), d.Generation, "status is not spec")

	d.Spec.Paused = true
	d, err = deps.Update(d)
	require.NoError(t, err)
	assert.Equal(t, int64(2), d.Generation)

	w := newWidget("default", "w")
	ws := apisim.Of[*unstructured.Unstructured](s, widgets)
	w, err = ws.Create(w)
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(w.Object, "red", "spec", "color"))
	w, err = ws.Update(w)
	require.NoError(t, err)
	assert.Equal(t, int64(2), w.GetGeneration())
}

func TestGenerateName(t *testing.T) {
	s := start(t)
	cms := apisim.Of[*corev1.ConfigMap](s, apisim.ConfigMaps())
	cm, err := cms.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "gen-"}})
	require.NoError(t, err)
	assert.Regexp(t, `^gen-[a-z0-9]{5}$`, cm.Name)
}

func TestUnknownGroupIsPlainNotFound(t *testing.T) {
	s := start(t)
	for _, path := range []string{"/apis/widgets.example.org/v1/widgets", "/apis/example.com/v2/widgets", "/api/v2/pods", "/metrics"} {
		resp, body := get(t, s, path)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"), path)
		assert.Equal(t, "404 page not found\n", string(body), path)
	}
}

func TestUnsupportedMethod(t *testing.T) {
	s := start(t)
	resp, body := do(t, s, http.MethodPatch, "/api/v1/namespaces/default/pods/x", strings.NewReader("{}"))
	st := status(t, resp, body, http.StatusMethodNotAllowed)
	assert.Equal(t, metav1.StatusReasonMethodNotAllowed, st.Reason)
}

func TestDiscoveryAndVersion(t *testing.T) {
	s := start(t, apisim.WithResources(apisim.Deployments()))
	resp, body := get(t, s, "/api")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var versions metav1.APIVersions
	require.NoError(t, json.Unmarshal(body, &versions))
	assert.Equal(t, []string{"v1"}, versions.Versions)

	resp, body = get(t, s, "/api/v1")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var core metav1.APIResourceList
	require.NoError(t, json.Unmarshal(body, &core))
	names := map[string]bool{}
	for _, r := range core.APIResources {
		names[r.Name] = r.Namespaced
	}
	assert.Equal(t, map[string]bool{"pods": true, "configmaps": true, "nodes": false}, names)

	resp, body = get(t, s, "/apis")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var groups metav1.APIGroupList
	require.NoError(t, json.Unmarshal(body, &groups))
	require.Len(t, groups.Groups, 2)
	assert.Equal(t, "apps", groups.Groups[0].Name)
	assert.Equal(t, "example.com/v1", groups.Groups[1].PreferredVersion.GroupVersion)

	resp, body = get(t, s, "/apis/example.com/v1")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), `"kind":"Widget"`)

	resp, body = get(t, s, "/version")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var v map[string]string
	require.NoError(t, json.Unmarshal(body, &v))
	assert.Equal(t, "v1.37.2", v["gitVersion"])
	assert.Equal(t, "1", v["major"])

	for _, path := range []string{"/healthz", "/readyz", "/livez"} {
		resp, body = get(t, s, path)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "ok", string(body))
	}
}

func TestBearerToken(t *testing.T) {
	s := start(t, apisim.WithBearerToken("secret"))
	resp, body := get(t, s, "/api/v1/pods")
	st := status(t, resp, body, http.StatusUnauthorized)
	assert.Equal(t, metav1.StatusReasonUnauthorized, st.Reason)
	resp, _ = get(t, s, "/api/v1/pods", "Authorization", "Bearer secret")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	resp, _ = get(t, s, "/readyz")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestRequestCounters(t *testing.T) {
	s := start(t)
	getList(t, s, "/api/v1/pods")
	getList(t, s, "/api/v1/namespaces/default/pods")
	w := watch(t, s, "/api/v1/pods?watch=1&resourceVersion=0&sendInitialEvents=false&resourceVersionMatch=NotOlderThan")
	w.close()
	assert.Equal(t, 2, s.Requests(apisim.VerbList, apisim.Pods()))
	assert.Equal(t, 1, s.Requests(apisim.VerbWatch, apisim.Pods()))
	assert.Zero(t, s.Requests(apisim.VerbList, apisim.ConfigMaps()))
}

func TestDeletePreconditions(t *testing.T) {
	s := start(t)
	p, err := apisim.Of[*corev1.Pod](s, apisim.Pods()).Create(apisim.MakePod("default", "alpha"))
	require.NoError(t, err)
	wrongUID := `{"preconditions":{"uid":"00000000-0000-4000-8000-000000000000"}}`
	resp, body := do(t, s, http.MethodDelete, "/api/v1/namespaces/default/pods/alpha", strings.NewReader(wrongUID))
	assert.Equal(t, http.StatusConflict, resp.StatusCode)
	assert.JSONEq(t, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Operation cannot be fulfilled on Pod \"alpha\": the UID in the precondition (00000000-0000-4000-8000-000000000000) does not match the UID in record (`+string(p.UID)+`). The object might have been deleted and then recreated","reason":"Conflict","details":{"name":"alpha","kind":"Pod"},"code":409}`, string(body))

	resp, body = do(t, s, http.MethodDelete, "/api/v1/namespaces/default/pods/alpha", strings.NewReader(`{"preconditions":{"resourceVersion":"999"}}`))
	st := status(t, resp, body, http.StatusConflict)
	assert.Contains(t, st.Message, "the ResourceVersion in the precondition (999) does not match the ResourceVersion in record ("+p.ResourceVersion+")")

	right := `{"preconditions":{"uid":"` + string(p.UID) + `","resourceVersion":"` + p.ResourceVersion + `"}}`
	resp, _ = do(t, s, http.MethodDelete, "/api/v1/namespaces/default/pods/alpha", strings.NewReader(right))
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// Creating an object that carries metadata.resourceVersion (one re-created
// from a cached copy) fails on kube-apiserver with a 500, "resourceVersion
// should not be set on objects to be created"; apisim created it.
func TestCreateWithResourceVersionIsRefused(t *testing.T) {
	s := start(t)
	p := apisim.MakePod("default", "x")
	p.ResourceVersion = "42"
	b, err := json.Marshal(p)
	require.NoError(t, err)
	resp, body := do(t, s, http.MethodPost, "/api/v1/namespaces/default/pods", bytes.NewReader(b), "Content-Type", "application/json")
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode, string(body))
	require.Contains(t, string(body), "resourceVersion should not be set")

	// Only a number other than 0 refuses it, as the storage parses it
	// (etcd3 store.Create); the others are cleared.
	for i, rv := range []string{"0", "00", "abc"} {
		p := apisim.MakePod("default", fmt.Sprintf("y%d", i))
		p.ResourceVersion = rv
		b, err := json.Marshal(p)
		require.NoError(t, err)
		resp, body := do(t, s, http.MethodPost, "/api/v1/namespaces/default/pods", bytes.NewReader(b), "Content-Type", "application/json")
		require.Equal(t, http.StatusCreated, resp.StatusCode, "resourceVersion %q: %s", rv, body)
		var got corev1.Pod
		require.NoError(t, json.Unmarshal(body, &got))
		_, err = strconv.ParseUint(got.ResourceVersion, 10, 64)
		require.NoError(t, err, "resourceVersion %q: created at %q", rv, got.ResourceVersion)
	}
}

// A created object is not being deleted, whatever the client sent:
// kube-apiserver wipes deletionTimestamp and deletionGracePeriodSeconds
// (rest.WipeObjectMetaSystemFields). apisim kept them, so informers saw an
// object being deleted that no server holds.
func TestCreateIgnoresDeletionFields(t *testing.T) {
	s := start(t)
	p := apisim.MakePod("ns", "a")
	now := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	grace := int64(30)
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &grace
	body, err := json.Marshal(p)
	require.NoError(t, err)
	resp, b := do(t, s, http.MethodPost, "/api/v1/namespaces/ns/pods", bytes.NewReader(body), "Content-Type", "application/json")
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(b))
	var got corev1.Pod
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Nil(t, got.DeletionTimestamp)
	assert.Nil(t, got.DeletionGracePeriodSeconds)
}

// An object written back as it was read writes nothing, also where it
// holds times finer than a second (given through Objects, or a
// creationTimestamp set by the simulator): kube-apiserver stores what its
// encoding keeps, whole seconds, and a client reads nothing finer. The
// simulator stored the nanoseconds, and the write-back made a MODIFIED
// that changed nothing.
func TestWriteBackOfAnObjectAsReadWritesNothing(t *testing.T) {
	s := start(t)
	pods := apisim.Of[*corev1.Pod](s, apisim.Pods())
	p := apisim.MakePod("ns", "a")
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 123456789, time.UTC))}}
	created, err := pods.Create(p)
	require.NoError(t, err)
	assert.Zero(t, created.Status.Conditions[0].LastTransitionTime.Nanosecond(), "stored as the encoding keeps it")
	assert.Zero(t, created.CreationTimestamp.Nanosecond())

	path := apisim.Pods().ObjectPath("ns", "a")
	resp, body := get(t, s, path)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, body = do(t, s, http.MethodPut, path, bytes.NewReader(body), "Content-Type", "application/json")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var after corev1.Pod
	require.NoError(t, json.Unmarshal(body, &after))
	assert.Equal(t, created.ResourceVersion, after.ResourceVersion, "the write-back wrote")

	again, err := pods.Update(created)
	require.NoError(t, err)
	assert.Equal(t, created.ResourceVersion, again.ResourceVersion, "the write-back through Objects wrote")
}
