package reflector_test

import (
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/reflector"
)

// kubeconfigServer is an HTTPS apiserver stand-in that records every
// request it gets, and the kubeconfig (in a temp file) that points at it
// with server = its URL + prefix, its CA as certificate-authority-data, and
// user as the user's fields (YAML, indented four spaces).
func kubeconfigServer(t *testing.T, prefix, user string) (string, func() []*http.Request) {
	t.Helper()
	var mu sync.Mutex
	var reqs []*http.Request
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reqs = append(reqs, r.Clone(r.Context()))
		mu.Unlock()
		if !strings.HasPrefix(r.URL.Path, prefix+"/api/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") != "" {
			w.WriteHeader(http.StatusOK) // an empty stream, ended at once
			return
		}
		_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[]}`))
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	kc := `apiVersion: v1
kind: Config
current-context: ctx
clusters:
- name: c
  cluster:
    server: ` + srv.URL + prefix + `
    certificate-authority-data: ` + base64.StdEncoding.EncodeToString(ca) + `
    tls-server-name: example.com
contexts:
- name: ctx
  context: {cluster: c, user: u, namespace: team-a}
users:
- name: u
  user:
` + user
	path := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.WriteFile(path, []byte(kc), 0o600))
	return path, func() []*http.Request {
		mu.Lock()
		defer mu.Unlock()
		return append([]*http.Request(nil), reqs...)
	}
}

func listAndWatchOnce(t *testing.T, kubeconfig string) {
	t.Helper()
	cfg, err := reflector.LoadKubeconfig(kubeconfig, "")
	require.NoError(t, err)
	client, err := reflector.NewClient(cfg)
	require.NoError(t, err)
	defer client.CloseConnections()
	lw, err := reflector.NewListerWatcher[*corev1.Pod](client, reflector.Target{Namespace: cfg.Namespace}, reflector.WithContentType(reflector.JSON))
	require.NoError(t, err)
	_, err = lw.List(t.Context(), reflector.ListOptions{}, func(*corev1.Pod) error { return nil })
	require.NoError(t, err)
	w, err := lw.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: "7"})
	require.NoError(t, err)
	w.Close()
}

// Rancher-style server URLs carry a path prefix: LIST and WATCH must stay
// under it (client-go: https://host/k8s/clusters/c-xyz/api/v1/...).
func TestKubeconfigServerPathPrefixKeptOnListAndWatch(t *testing.T) {
	path, reqs := kubeconfigServer(t, "/k8s/clusters/c-xyz", "    token: tok\n")
	listAndWatchOnce(t, path)
	got := reqs()
	require.Len(t, got, 2)
	for _, r := range got {
		assert.Equal(t, "/k8s/clusters/c-xyz/api/v1/namespaces/team-a/pods", r.URL.Path)
		assert.Equal(t, "Bearer tok", r.Header.Get("Authorization"))
		assert.Equal(t, "example.com", r.TLS.ServerName, "tls-server-name is the SNI")
	}
	assert.Equal(t, "1", got[1].URL.Query().Get("watch"))
}

// kubectl (clientcmd) turns as, as-uid, as-groups and as-user-extra into
// Impersonate-User, Impersonate-Uid, Impersonate-Group and
// Impersonate-Extra-<key> headers on every request; so does a Client made
// from LoadKubeconfig's Config, on LIST and WATCH alike.
func TestKubeconfigImpersonationHeadersAreSent(t *testing.T) {
	path, reqs := kubeconfigServer(t, "", `    token: tok
    as: alice
    as-uid: "1234"
    as-groups: [devs, "system:authenticated"]
    as-user-extra:
      scopes: [view, "read/write"]
      example.com/team: [a]
`)
	listAndWatchOnce(t, path)
	got := reqs()
	require.NotEmpty(t, got)
	for _, r := range got {
		assert.Equal(t, "Bearer tok", r.Header.Get("Authorization"))
		assert.Equal(t, "alice", r.Header.Get("Impersonate-User"))
		assert.Equal(t, "1234", r.Header.Get("Impersonate-Uid"))
		assert.Equal(t, []string{"devs", "system:authenticated"}, r.Header.Values("Impersonate-Group"))
		assert.Equal(t, []string{"view", "read/write"}, r.Header.Values("Impersonate-Extra-Scopes"))
		// Keys outside a header name's token characters are percent-encoded.
		assert.Equal(t, []string{"a"}, r.Header.Values("Impersonate-Extra-Example.com%2fteam"))
	}
}
