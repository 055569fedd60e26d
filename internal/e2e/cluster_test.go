package e2e

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/listwatch/listwatch/internal/e2e/cluster"
)

func TestClusterStarts(t *testing.T) {
	admin := adminAPI(t, shared)

	r := admin.do("GET", "/readyz", "", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)

	v := admin.must("GET", "/version", nil, http.StatusOK)
	require.Equal(t, "v1.37.2", v["gitVersion"])

	admin.createNamespace("cluster-starts")
	rv := admin.createPod("cluster-starts", "first", map[string]string{"app": "demo"})
	require.NotEmpty(t, rv)
	pod := admin.must("GET", "/api/v1/namespaces/cluster-starts/pods/first", nil, http.StatusOK)
	require.Equal(t, rv, resourceVersion(pod))

	nobody := &api{t: t, base: shared.URL(), client: shared.HTTPClient(shared.UnprivilegedToken())}
	r = nobody.do("GET", "/api/v1/namespaces/cluster-starts/pods", "", nil)
	require.Equal(t, http.StatusForbidden, r.status)
	status := r.json(t)
	assert.Equal(t, "Status", status["kind"])
	assert.Equal(t, "Forbidden", status["reason"])
	assert.Contains(t, status["message"], cluster.UnprivilegedUser)

	anonymous := &api{t: t, base: shared.URL(), client: shared.HTTPClient("wrong-token")}
	r = anonymous.do("GET", "/api/v1/pods", "", nil)
	require.Equal(t, http.StatusUnauthorized, r.status)
}

// TestKubeconfig checks that client-go reads the kubeconfig files the
// harness writes, for both users.
func TestKubeconfig(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	clientFor := func(user string) *kubernetes.Clientset {
		path := filepath.Join(dir, user+".kubeconfig")
		require.NoError(t, shared.WriteKubeconfig(path, user, ""))
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		require.NoError(t, err)
		cs, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		return cs
	}
	_, err := clientFor(cluster.AdminUser).CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	_, err = clientFor(cluster.UnprivilegedUser).CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "want Forbidden, got %v", err)
	require.Error(t, shared.WriteKubeconfig(filepath.Join(dir, "x"), "somebody", ""))
}

// TestAPIServerRestart restarts kube-apiserver on a cluster of its own:
// same port, same data, resource versions carry on; Stop leaves no process.
func TestAPIServerRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c := startCluster(t)
	admin := adminAPI(t, c)
	admin.createNamespace("restart")
	before := admin.createPod("restart", "survivor", nil)

	url := c.URL()
	start := time.Now()
	require.NoError(t, c.RestartAPIServer(ctx))
	recordTiming(t, "apiserver restart (SIGTERM, start, /readyz)", time.Since(start))
	require.Equal(t, url, c.URL())

	admin.client.CloseIdleConnections()
	pod := admin.must("GET", "/api/v1/namespaces/restart/pods/survivor", nil, http.StatusOK)
	require.Equal(t, before, resourceVersion(pod))
	after := admin.createPod("restart", "newcomer", nil)
	require.Greater(t, parseRV(t, after), parseRV(t, before))

	require.NoError(t, c.KillAPIServer())
	r, err := c.HTTPClient(c.AdminToken()).Get(c.URL() + "/readyz")
	if err == nil {
		r.Body.Close()
	}
	require.Error(t, err, "a killed apiserver answers nothing")
	require.NoError(t, c.StartAPIServer(ctx))

	require.Len(t, c.Processes(), 2, "etcd and kube-apiserver")
	require.NoError(t, c.Stop())
	require.Empty(t, c.Processes(), "processes left after Stop")
	require.NoDirExists(t, c.Dir())
}
