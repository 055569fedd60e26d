package rest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/listwatch/listwatch/internal/rest"
)

func ExampleLoadKubeconfig() {
	dir, err := os.MkdirTemp("", "kubeconfig")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "config")
	err = os.WriteFile(path, []byte(`
current-context: dev
clusters:
- name: dev
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: dev
  user: {token: my-secret-token}
contexts:
- name: dev
  context: {cluster: dev, user: dev, namespace: team-a}
`), 0o600)
	if err != nil {
		fmt.Println(err)
		return
	}

	cfg, err := rest.LoadKubeconfig(path, "")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Host, cfg.Namespace)
	fmt.Println(cfg) // credentials never show

	_, err = rest.LoadKubeconfig(path, "prod")
	fmt.Println(strings.TrimPrefix(err.Error(), "kubeconfig "+path+": "))
	// Output:
	// https://127.0.0.1:6443 team-a
	// {Host: "https://127.0.0.1:6443", Namespace: "team-a", BearerToken: [redacted], TLS: {Insecure: true}}
	// context "prod" not found
}

// In a pod, use the service account; elsewhere, the user's kubeconfig.
func ExampleInClusterConfig() {
	cfg, err := rest.InClusterConfig()
	if errors.Is(err, rest.ErrNotInCluster) {
		cfg, err = rest.LoadKubeconfig("", "")
	}
	if errors.Is(err, rest.ErrNoKubeconfig) {
		fmt.Println("no cluster to talk to")
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("talking to", cfg.Host)
}

func ExampleCheckResponse() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusGone)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",`+
			`"message":"too old resource version: 1 (5012)","reason":"Expired","code":410}`)
	}))
	defer srv.Close()

	c, err := rest.NewClient(&rest.Config{Host: srv.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	u := c.URL("/api/v1/pods", url.Values{"watch": {"1"}, "resourceVersion": {"1"}})
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, u.String(), nil)
	resp, err := c.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	if err := rest.CheckResponse(resp); err != nil {
		err = fmt.Errorf("watching pods: %w", err)
		fmt.Println(err)
		fmt.Println("relist:", rest.IsGone(err), "retry as is:", rest.IsRetryable(err))
	}
	// Output:
	// watching pods: 410 Expired: too old resource version: 1 (5012)
	// relist: true retry as is: false
}

func ExampleLimitReader() {
	body := strings.NewReader(`{"kind":"PodList","items":[...a lot...]}`)
	_, err := io.ReadAll(rest.LimitReader(body, 16))
	fmt.Println(err)
	fmt.Println(errors.Is(err, rest.ErrBodyTooLarge))
	// Output:
	// response body too large: more than 16 bytes
	// true
}

func ExampleConfig_String() {
	cfg := rest.Config{
		Host:        "https://k.example:6443",
		BearerToken: "eyJhbGciOiJSUzI1NiIs...",
		Exec: &rest.ExecConfig{
			Command:    "aws",
			Args:       []string{"eks", "get-token"},
			Env:        []rest.ExecEnvVar{{Name: "AWS_PROFILE", Value: "prod"}},
			APIVersion: rest.ExecAPIVersionV1,
		},
	}
	fmt.Printf("%v\n", cfg)
	// Output:
	// {Host: "https://k.example:6443", BearerToken: [redacted], Exec: {Command: "aws", Args: [redacted], Env: {AWS_PROFILE: [redacted]}, APIVersion: "client.authentication.k8s.io/v1"}}
}
