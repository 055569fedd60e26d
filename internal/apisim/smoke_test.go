package apisim_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/internal/apisim"
)

func TestListThenWatch(t *testing.T) {
	s := start(t)
	rv := createPods(t, s, "default", 3)

	l := getList(t, s, "/api/v1/namespaces/default/pods")
	assert.Equal(t, "PodList", l.Kind)
	assert.Equal(t, "v1", l.APIVersion)
	assert.Equal(t, rv, l.Metadata.ResourceVersion)
	assert.Equal(t, []string{"p0", "p1", "p2"}, l.names())

	w := watch(t, s, "/api/v1/namespaces/default/pods?watch=1&resourceVersion="+rv)
	pods := apisim.Of[*corev1.Pod](s, apisim.Pods())
	p, err := pods.Get("default", "p1")
	require.NoError(t, err)
	p.Labels["x"] = "y"
	p, err = pods.Update(p)
	require.NoError(t, err)
	e := w.next(t)
	assert.Equal(t, "MODIFIED", e.Type)
	assert.Equal(t, p.ResourceVersion, e.rv(t))
	assert.Equal(t, "y", e.obj(t).GetLabels()["x"])

	resp, _ := get(t, s, "/readyz")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// WaitConnections waits until the clients have closed their connections.
func TestWaitConnections(t *testing.T) {
	s := apisim.New(apisim.WithResources(apisim.Pods()))
	require.NoError(t, s.Start())
	defer s.Close()
	client := &http.Client{Transport: &http.Transport{}}
	resp, err := client.Get(s.URL() + "/api/v1/pods")
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	assert.ErrorContains(t, s.WaitConnections(ctx, 0), "1 client connections open, want at most 0")
	assert.NoError(t, s.WaitConnections(ctx, 1))

	client.CloseIdleConnections()
	assert.NoError(t, s.WaitConnections(t.Context(), 0))
}
