package rest

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestInClusterConfig(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "token"), "sa-token\n")
	writeFile(t, filepath.Join(dir, "namespace"), "payments\n")
	writeFile(t, filepath.Join(dir, "ca.crt"), "not read here\n")
	env := map[string]string{"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
	cfg, err := inClusterConfig(func(k string) string { return env[k] }, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Host:            "https://[fd00::1]:443",
		Namespace:       "payments",
		BearerTokenFile: filepath.Join(dir, "token"),
		TLS:             TLSConfig{CAFile: filepath.Join(dir, "ca.crt")},
	}
	if !reflect.DeepEqual(configFieldsOf(cfg), configFieldsOf(&want)) {
		t.Errorf("got  %#v\nwant %#v", configFieldsOf(cfg), configFieldsOf(&want))
	}

	// Without a namespace file, "default".
	if err := os.Remove(filepath.Join(dir, "namespace")); err != nil {
		t.Fatal(err)
	}
	if cfg, err := inClusterConfig(func(k string) string { return env[k] }, dir); err != nil || cfg.Namespace != "default" {
		t.Errorf("Namespace = %q, %v; want default", cfg.Namespace, err)
	}

	// Without a ca.crt, the system's roots (no CAFile), as with client-go:
	// before, NewClient failed on the missing file.
	if err := os.Remove(filepath.Join(dir, "ca.crt")); err != nil {
		t.Fatal(err)
	}
	cfg, err = inClusterConfig(func(k string) string { return env[k] }, dir)
	if err != nil || cfg.TLS.CAFile != "" {
		t.Fatalf("without ca.crt: CAFile = %q, %v; want none", cfg.TLS.CAFile, err)
	}
	if _, err := NewClient(cfg); err != nil {
		t.Errorf("without ca.crt: NewClient: %v", err)
	}
}

func TestInClusterConfigErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := inClusterConfig(func(string) string { return "" }, dir); !errors.Is(err, ErrNotInCluster) {
		t.Errorf("no environment: err = %v, want ErrNotInCluster", err)
	}
	if _, err := InClusterConfig(); err == nil && os.Getenv("KUBERNETES_SERVICE_HOST") == "" {
		t.Error("InClusterConfig succeeded outside a cluster")
	}
	env := map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
	getenv := func(k string) string { return env[k] }
	if _, err := inClusterConfig(getenv, dir); err == nil || errors.Is(err, ErrNotInCluster) {
		t.Errorf("no token file: err = %v, want a read error", err)
	}
	writeFile(t, filepath.Join(dir, "token"), "  \n")
	if _, err := inClusterConfig(getenv, dir); err == nil {
		t.Error("empty token file: no error")
	}
}

// The service account token is projected and rotated by the kubelet: every
// request after a rotation carries the new token.
func TestInClusterTokenRotation(t *testing.T) {
	dir := t.TempDir()
	tokenPath := writeFile(t, filepath.Join(dir, "token"), "token-one")
	srv := newEchoServer(t, nil)
	writeFile(t, filepath.Join(dir, "ca.crt"), string(serverCAPEM(srv)))
	host, port := splitHostPort(t, srv.URL)
	env := map[string]string{"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}
	cfg, err := inClusterConfig(func(k string) string { return env[k] }, dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, c, "/api"); body != "Bearer token-one" {
		t.Fatalf("Authorization = %q", body)
	}
	// The kubelet swaps the file; give it a distinct modification time so
	// that the test does not depend on the file system's clock resolution.
	writeFile(t, tokenPath, "token-two")
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(tokenPath, later, later); err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, c, "/api"); body != "Bearer token-two" {
		t.Errorf("after rotation: Authorization = %q, want the new token", body)
	}
}
