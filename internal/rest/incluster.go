package rest

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// serviceAccountDir is where the kubelet mounts a pod's service account.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// InClusterConfig returns the Config of a process running in a pod: the
// apiserver from $KUBERNETES_SERVICE_HOST and $KUBERNETES_SERVICE_PORT, the
// service account's token (BearerTokenFile, so that rotated tokens are
// picked up), CA certificate and namespace from
// /var/run/secrets/kubernetes.io/serviceaccount. Without a ca.crt there (a
// pod whose projected volume leaves it out), the system's roots verify the
// apiserver, as with client-go; a ca.crt that is there but does not load
// fails NewClient. An error wrapping ErrNotInCluster means the environment
// variables are unset, so the caller may fall back to LoadKubeconfig.
func InClusterConfig() (*Config, error) {
	return inClusterConfig(os.Getenv, serviceAccountDir)
}

// inClusterConfig is InClusterConfig with the environment and the service
// account directory as parameters.
func inClusterConfig(getenv func(string) string, dir string) (*Config, error) {
	host, port := getenv("KUBERNETES_SERVICE_HOST"), getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, ErrNotInCluster
	}
	tokenFile := filepath.Join(dir, "token")
	token, err := readFileLimited(tokenFile, maxKubeconfigSize)
	if err != nil {
		return nil, fmt.Errorf("in-cluster config: reading the service account token: %w", err)
	}
	if strings.TrimSpace(string(token)) == "" {
		return nil, fmt.Errorf("in-cluster config: service account token file %s is empty", tokenFile)
	}
	namespace := "default"
	switch ns, err := os.ReadFile(filepath.Join(dir, "namespace")); {
	case err == nil && strings.TrimSpace(string(ns)) != "":
		namespace = strings.TrimSpace(string(ns))
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("in-cluster config: reading the namespace: %w", err)
	}
	caFile := filepath.Join(dir, "ca.crt")
	if _, err := os.Stat(caFile); errors.Is(err, fs.ErrNotExist) {
		caFile = "" // the system's roots
	}
	return &Config{
		Host:            "https://" + net.JoinHostPort(host, port),
		Namespace:       namespace,
		BearerTokenFile: tokenFile,
		TLS:             TLSConfig{CAFile: caFile},
	}, nil
}
