package cluster

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWritePKI(t *testing.T) {
	dir := t.TempDir()
	creds, err := writePKI(dir)
	require.NoError(t, err)

	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(creds.caPEM))
	certPEM, err := os.ReadFile(creds.certFile)
	require.NoError(t, err)
	block, _ := pem.Decode(certPEM)
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	for _, name := range []string{"127.0.0.1", "localhost", "::1"} {
		_, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: name})
		require.NoError(t, err, "the serving certificate must be valid for %s", name)
	}
	_, err = cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "example.com"})
	require.Error(t, err)

	keyPEM, err := os.ReadFile(creds.saKey)
	require.NoError(t, err)
	block, _ = pem.Decode(keyPEM)
	require.Equal(t, "RSA PRIVATE KEY", block.Type)
	_, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	require.NoError(t, err)

	tokens, err := os.ReadFile(creds.tokenFile)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(tokens)), "\n")
	require.Len(t, lines, 2)
	require.Equal(t, creds.adminToken+","+AdminUser+",uid-admin,\"system:masters\"", lines[0])
	require.Equal(t, creds.nobodyToken+","+UnprivilegedUser+",uid-nobody", lines[1])
	require.NotEqual(t, creds.adminToken, creds.nobodyToken)
}

func TestLocateBinaries(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"kube-apiserver", "etcd"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755))
	}
	t.Setenv(EnvKubeBin, dir)
	got, err := LocateBinaries(t.Context(), "no-such-script")
	require.NoError(t, err)
	require.Equal(t, dir, got)

	require.NoError(t, os.Chmod(filepath.Join(dir, "etcd"), 0o644))
	_, err = LocateBinaries(t.Context(), "no-such-script")
	require.ErrorContains(t, err, "not an executable")

	// Without the variable, the script is asked; its last line is the folder.
	require.NoError(t, os.Chmod(filepath.Join(dir, "etcd"), 0o755))
	script := filepath.Join(t.TempDir(), "build.sh")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\necho building >&2\necho "+dir+"\n"), 0o755))
	t.Setenv(EnvKubeBin, "")
	got, err = LocateBinaries(t.Context(), script)
	require.NoError(t, err)
	require.Equal(t, dir, got)

	failing := filepath.Join(t.TempDir(), "build.sh")
	require.NoError(t, os.WriteFile(failing, []byte("#!/bin/sh\necho 'go: no network' >&2\nexit 3\n"), 0o755))
	_, err = LocateBinaries(t.Context(), failing)
	require.ErrorContains(t, err, "go: no network")
	require.ErrorContains(t, err, EnvKubeBin)
}

func TestStartNeedsBinaries(t *testing.T) {
	_, err := Start(t.Context(), Options{})
	require.ErrorContains(t, err, "Binaries")
	_, err = Start(t.Context(), Options{Binaries: t.TempDir()})
	require.ErrorContains(t, err, "kube-apiserver")
}

func TestWriteKubeconfig(t *testing.T) {
	c := &Cluster{dir: t.TempDir(), apiPort: 6443, creds: credentials{caPEM: []byte("CA"), adminToken: "a", nobodyToken: "n"}}
	path := filepath.Join(t.TempDir(), "config")
	require.NoError(t, c.WriteKubeconfig(path, UnprivilegedUser, ""))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(b), `"server": "https://127.0.0.1:6443"`)
	require.Contains(t, string(b), `"token": "n"`)
	require.NoError(t, c.WriteKubeconfig(path, AdminUser, "https://127.0.0.1:1"))
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(b), `"server": "https://127.0.0.1:1"`)
	require.Contains(t, string(b), `"token": "a"`)
	require.ErrorContains(t, c.WriteKubeconfig(path, "root", ""), "unknown user")
}

// freePorts hands out distinct ports below the ephemeral range, which
// nothing binds on its own, and never one twice.
func TestFreePorts(t *testing.T) {
	low := ephemeralLow()
	seen := map[int]bool{}
	for range 3 {
		ports, err := freePorts(3)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ports {
			if p < 10000 || p >= low {
				t.Errorf("port %d outside 10000-%d", p, low-1)
			}
			if seen[p] {
				t.Errorf("port %d handed out twice", p)
			}
			seen[p] = true
		}
	}
}
