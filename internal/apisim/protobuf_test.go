package apisim_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/listwatch/listwatch/internal/apisim"
)

const (
	protobufMedia = "application/vnd.kubernetes.protobuf"
	partialJSON   = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
	partialList   = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
)

// decoder decodes protobuf responses with apimachinery's own serializer.
func decoder(t *testing.T) *protobuf.Serializer {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, corev1.AddToScheme(scheme))
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	return protobuf.NewSerializer(scheme, scheme)
}

func decode(t *testing.T, data []byte) runtime.Object {
	t.Helper()
	obj, _, err := decoder(t).Decode(data, nil, nil)
	require.NoError(t, err)
	return obj
}

func TestProtobufList(t *testing.T) {
	s := start(t)
	rv := createPods(t, s, "default", 3)
	resp, body := get(t, s, "/api/v1/namespaces/default/pods?limit=2", "Accept", protobufMedia)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, protobufMedia, resp.Header.Get("Content-Type"))
	list, ok := decode(t, body).(*corev1.PodList)
	require.True(t, ok)
	assert.Equal(t, rv, list.ResourceVersion)
	assert.NotEmpty(t, list.Continue)
	require.Len(t, list.Items, 2)
	assert.Equal(t, "p1", list.Items[1].Name)
	assert.Equal(t, corev1.PodRunning, list.Items[1].Status.Phase)
	assert.Len(t, list.Items[1].Spec.Containers, 2)

	resp, body = get(t, s, "/api/v1/namespaces/default/pods/p2", "Accept", protobufMedia)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	pod, ok := decode(t, body).(*corev1.Pod)
	require.True(t, ok)
	assert.Equal(t, "p2", pod.Name)
}

// protoFrames reads a protobuf watch stream into decoded events.
func protoFrames(t *testing.T, body io.Reader, n int) []metav1.WatchEvent {
	t.Helper()
	r := bufio.NewReader(body)
	var out []metav1.WatchEvent
	for range n {
		var size uint32
		require.NoError(t, binary.Read(r, binary.BigEndian, &size))
		frame := make([]byte, size)
		_, err := io.ReadFull(r, frame)
		require.NoError(t, err)
		var e metav1.WatchEvent
		require.NoError(t, e.Unmarshal(frame))
		out = append(out, e)
	}
	return out
}

func TestProtobufWatch(t *testing.T) {
	s := start(t, apisim.WithBookmarkInterval(0), apisim.WithHistorySize(2))
	rv := createPods(t, s, "default", 2)
	req, err := http.NewRequest(http.MethodGet, s.URL()+
		"/api/v1/pods?watch=1&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", protobufMedia)
	resp, err := s.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, protobufMedia+";stream=watch", resp.Header.Get("Content-Type"))

	events := protoFrames(t, resp.Body, 3)
	var p0RV string
	for i, name := range []string{"p0", "p1"} {
		assert.Equal(t, "ADDED", events[i].Type)
		pod, ok := decode(t, events[i].Object.Raw).(*corev1.Pod)
		require.True(t, ok)
		assert.Equal(t, name, pod.Name)
		if i == 0 {
			p0RV = pod.ResourceVersion
		}
	}
	assert.Equal(t, "BOOKMARK", events[2].Type)
	bm, ok := decode(t, events[2].Object.Raw).(*corev1.Pod)
	require.True(t, ok)
	assert.Equal(t, rv, bm.ResourceVersion)
	assert.Equal(t, "true", bm.Annotations["k8s.io/initial-events-end"])

	createPods(t, s, "other", 3) // p0's RV falls out of the history of two
	req.URL.RawQuery = "watch=1&resourceVersion=" + p0RV
	resp2, err := s.Client().Do(req)
	require.NoError(t, err)
	defer resp2.Body.Close()
	e := protoFrames(t, resp2.Body, 1)[0]
	assert.Equal(t, "ERROR", e.Type)
	st, ok := decode(t, e.Object.Raw).(*metav1.Status)
	require.True(t, ok)
	assert.Equal(t, metav1.StatusReasonExpired, st.Reason)
}

func TestProtobufStatusError(t *testing.T) {
	s := start(t)
	resp, body := get(t, s, "/api/v1/namespaces/default/pods/nope", "Accept", protobufMedia)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, protobufMedia, resp.Header.Get("Content-Type"))
	st, ok := decode(t, body).(*metav1.Status)
	require.True(t, ok, "errors follow the client's Accept, as kube-apiserver's do")
	assert.Equal(t, metav1.StatusReasonNotFound, st.Reason)
}

func TestCustomResourceProtobufNegotiation(t *testing.T) {
	s := start(t)
	resp, body := get(t, s, "/apis/example.com/v1/widgets", "Accept", protobufMedia)
	assert.Equal(t, http.StatusNotAcceptable, resp.StatusCode)
	st, ok := decode(t, body).(*metav1.Status)
	require.True(t, ok)
	assert.Equal(t, metav1.StatusReasonNotAcceptable, st.Reason)
	assert.Equal(t, "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf", st.Message)

	resp, body = get(t, s, "/apis/example.com/v1/widgets", "Accept", protobufMedia+", application/json")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	assert.Contains(t, string(body), `"kind":"WidgetList"`)

	resp, _ = get(t, s, "/apis/example.com/v1/widgets?watch=1&timeoutSeconds=1", "Accept", protobufMedia)
	assert.Equal(t, http.StatusNotAcceptable, resp.StatusCode)
}

func TestPartialObjectMetadata(t *testing.T) {
	s := start(t, apisim.WithBookmarkInterval(0))
	rv := createPods(t, s, "default", 2)

	resp, body := get(t, s, "/api/v1/pods", "Accept", partialList)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var l metav1.PartialObjectMetadataList
	require.NoError(t, json.Unmarshal(body, &l))
	assert.Equal(t, "PartialObjectMetadataList", l.Kind)
	assert.Equal(t, "meta.k8s.io/v1", l.APIVersion)
	assert.Equal(t, rv, l.ResourceVersion)
	require.Len(t, l.Items, 2)
	assert.Equal(t, "PartialObjectMetadata", l.Items[0].Kind)
	assert.Equal(t, "p0", l.Items[0].Name)
	assert.NotContains(t, string(body), `"spec"`)

	resp, body = get(t, s, "/api/v1/namespaces/default/pods/p1", "Accept", partialJSON)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), `"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1"`)

	w := watch(t, s, "/api/v1/pods?watch=1&allowWatchBookmarks=true", "Accept", partialJSON)
	e := w.next(t)
	assert.Equal(t, "ADDED", e.Type)
	assert.Equal(t, "PartialObjectMetadata", e.obj(t).GetKind())
	w.next(t)
	e = w.next(t)
	require.Equal(t, "BOOKMARK", e.Type)
	assert.JSONEq(t, `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"`+rv+`","annotations":{"k8s.io/initial-events-end":"true"}}}`, string(e.Object))

	// Custom resources serve metadata-only protobuf, like kube-apiserver.
	resp, body = do(t, s, http.MethodPost, "/apis/example.com/v1/namespaces/default/widgets", jsonBody(t, newWidget("default", "w")))
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(body))
	resp, body = get(t, s, "/apis/example.com/v1/widgets",
		"Accept", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	pl, ok := decode(t, body).(*metav1.PartialObjectMetadataList)
	require.True(t, ok)
	require.Len(t, pl.Items, 1)
	assert.Equal(t, "w", pl.Items[0].Name)

	resp, body = get(t, s, "/api/v1/pods", "Accept", partialJSON)
	st := status(t, resp, body, http.StatusNotAcceptable)
	assert.Equal(t, "you requested PartialObjectMetadata, but the requested object is a list (*core.PodList)", st.Message)
	resp, body = get(t, s, "/api/v1/namespaces/default/pods/p0", "Accept", partialList)
	st = status(t, resp, body, http.StatusNotAcceptable)
	assert.Equal(t, "you requested PartialObjectMetadataList, but the requested object is not a list (*core.Pod)", st.Message)

	resp, body = get(t, s, "/api/v1/pods", "Accept", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1beta1"`)
	assert.Contains(t, string(body), `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1beta1"`)

	// A watch asking for the list form is accepted, and ends at its first
	// frame, as on kube-apiserver.
	w = watch(t, s, "/api/v1/pods?watch=1&resourceVersion=0&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", "Accept", partialList)
	assert.Equal(t, io.EOF, w.end(t))
}

func TestProtobufRequestBody(t *testing.T) {
	s := start(t)
	raw, err := apisim.MakePod("default", "pb").Marshal()
	require.NoError(t, err)
	unk := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "Pod"}, Raw: raw}
	body, err := unk.Marshal()
	require.NoError(t, err)
	resp, got := do(t, s, http.MethodPost, "/api/v1/namespaces/default/pods",
		bytes.NewReader(append([]byte("k8s\x00"), body...)),
		"Content-Type", protobufMedia, "Accept", protobufMedia)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(got))
	pod, ok := decode(t, got).(*corev1.Pod)
	require.True(t, ok)
	assert.Equal(t, "pb", pod.Name)
	assert.Equal(t, s.ResourceVersion(), pod.ResourceVersion)
}
