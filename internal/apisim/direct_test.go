package apisim_test

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/listwatch/listwatch/internal/apisim"
)

func TestObjectsConvertBetweenForms(t *testing.T) {
	s := start(t)
	// Create as unstructured, read back typed, metadata-only and unstructured.
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Pod")
	u.SetNamespace("default")
	u.SetName("u")
	require.NoError(t, unstructured.SetNestedField(u.Object, "node-a", "spec", "nodeName"))
	created, err := apisim.Of[*unstructured.Unstructured](s, apisim.Pods()).Create(u)
	require.NoError(t, err)
	assert.Equal(t, s.ResourceVersion(), created.GetResourceVersion())

	typed, err := apisim.Of[*corev1.Pod](s, apisim.Pods()).Get("default", "u")
	require.NoError(t, err)
	assert.Equal(t, "node-a", typed.Spec.NodeName)
	assert.Equal(t, created.GetUID(), typed.UID)

	meta, err := apisim.Of[*metav1.PartialObjectMetadata](s, apisim.Pods()).Get("default", "u")
	require.NoError(t, err)
	assert.Equal(t, "PartialObjectMetadata", meta.Kind)
	assert.Equal(t, "u", meta.Name)

	// The caller's object is never kept: changing it changes nothing stored.
	typed.Spec.NodeName = "changed"
	again, err := apisim.Of[*corev1.Pod](s, apisim.Pods()).Get("default", "u")
	require.NoError(t, err)
	assert.Equal(t, "node-a", again.Spec.NodeName)

	_, err = apisim.Of[*corev1.Pod](s, apisim.Secrets()).Get("default", "u")
	assert.ErrorContains(t, err, "not registered")
	_, err = apisim.Of[*corev1.Pod](s, apisim.Pods()).Create(nil)
	assert.Error(t, err)
}

func TestObjectsList(t *testing.T) {
	s := start(t)
	createPods(t, s, "a", 2)
	rv := createPods(t, s, "b", 1)
	pods, listRV, err := apisim.Of[*corev1.Pod](s, apisim.Pods()).List("a")
	require.NoError(t, err)
	assert.Equal(t, rv, listRV)
	require.Len(t, pods, 2)
	assert.Equal(t, "p1", pods[1].Name)
	all, _, err := apisim.Of[*unstructured.Unstructured](s, apisim.Pods()).List("")
	require.NoError(t, err)
	assert.Len(t, all, 3)
}

// Expire deletes at one resourceVersion, as etcd deletes an expired
// lease's keys: a watch gets a DELETED event for each, all at it.
func TestObjectsExpireTogether(t *testing.T) {
	s := start(t)
	rv := createPods(t, s, "a", 3)
	pods := apisim.Of[*corev1.Pod](s, apisim.Pods())
	w := watch(t, s, "/api/v1/namespaces/a/pods?watch=1&resourceVersion="+rv)
	_, err := pods.Expire("a", "p0", "missing")
	require.True(t, apierrors.IsNotFound(err), "%v", err)
	gone, err := pods.Expire("a", "p0", "p2")
	require.NoError(t, err)
	require.Len(t, gone, 2)
	assert.Equal(t, gone[0].ResourceVersion, gone[1].ResourceVersion)
	for _, name := range []string{"p0", "p2"} {
		ev := w.next(t)
		assert.Equal(t, "DELETED", ev.Type)
		assert.Equal(t, name, ev.obj(t).GetName())
		assert.Equal(t, gone[0].ResourceVersion, ev.rv(t))
	}
	left, listRV, err := pods.List("a")
	require.NoError(t, err)
	assert.Equal(t, gone[0].ResourceVersion, listRV)
	require.Len(t, left, 1, "the NotFound deleted none")
	assert.Equal(t, "p1", left[0].Name)
}

func TestPopulate(t *testing.T) {
	s := start(t)
	err := s.Populate(apisim.ConfigMaps(), 10, []string{"x", "y"}, func(ns string, i int) runtime.Object {
		return apisim.MakeConfigMap("", "cm-"+strconv.Itoa(i), 8)
	})
	require.NoError(t, err)
	n, err := s.Len(apisim.ConfigMaps())
	require.NoError(t, err)
	assert.Equal(t, 10, n)
	l := getList(t, s, "/api/v1/namespaces/y/configmaps")
	assert.Len(t, l.Items, 5)

	err = s.Populate(apisim.ConfigMaps(), 1, nil, func(string, int) runtime.Object {
		return apisim.MakeConfigMap("default", "", 1) // no name
	})
	assert.ErrorContains(t, err, "object 0")
}

func TestMakePodIsRealistic(t *testing.T) {
	p := apisim.MakePod("default", "web-1")
	b, err := json.Marshal(p)
	require.NoError(t, err)
	assert.InDelta(t, 4096, len(b), 1024, "about 4 KB of JSON")
	assert.Len(t, p.Spec.Containers, 2)
	assert.Len(t, p.ManagedFields, 2)
	assert.Equal(t, "web", p.Labels["app"])
	assert.Equal(t, corev1.PodRunning, p.Status.Phase)
}

func TestRegisterRefusesBadDescriptors(t *testing.T) {
	bad := apisim.Resource{Version: "v1", Resource: "gizmos", Kind: "Gizmo", ListKind: "GizmoList", Protobuf: true}
	s := apisim.New(apisim.WithResources(bad))
	assert.ErrorContains(t, s.Start(), "not in the scheme")
	assert.ErrorContains(t, s.Register(apisim.Resource{Resource: "x"}), "needs Version")
	s.Close()

	crd := bad
	crd.Protobuf = false
	s = apisim.New()
	require.NoError(t, s.Register(crd), "without protobuf any kind is fine")
	require.NoError(t, s.Register(crd), "twice is a no-op")
}
