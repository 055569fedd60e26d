package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
)

// URL returns the apiserver's base URL, https://127.0.0.1:PORT. The port
// stays the same across apiserver restarts.
func (c *Cluster) URL() string { return "https://" + c.Host() }

// Host returns the apiserver's address, 127.0.0.1:PORT (a tcpproxy target).
func (c *Cluster) Host() string { return "127.0.0.1:" + strconv.Itoa(c.apiPort) }

// EtcdURL returns etcd's client URL, http://127.0.0.1:PORT.
func (c *Cluster) EtcdURL() string { return "http://127.0.0.1:" + strconv.Itoa(c.etcdPort) }

// Dir returns the cluster's temporary folder (certificates, logs, etcd
// data).
func (c *Cluster) Dir() string { return c.dir }

// CAPEM returns the PEM-encoded CA certificate that signed the apiserver's
// serving certificate (valid for 127.0.0.1, ::1 and localhost).
func (c *Cluster) CAPEM() []byte { return bytes.Clone(c.creds.caPEM) }

// AdminToken returns the bearer token of AdminUser (group system:masters).
func (c *Cluster) AdminToken() string { return c.creds.adminToken }

// UnprivilegedToken returns the bearer token of UnprivilegedUser, who is
// bound to no role.
func (c *Cluster) UnprivilegedToken() string { return c.creds.nobodyToken }

// TLSConfig returns a new client TLS configuration that trusts the
// cluster's CA and nothing else.
func (c *Cluster) TLSConfig() *tls.Config {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.creds.caPEM)
	return &tls.Config{RootCAs: pool}
}

// HTTPClient returns a new client with its own transport (HTTP/2 when the
// server offers it) that trusts the cluster's CA and sends token as a
// bearer token; an empty token sends none (anonymous).
func (c *Cluster) HTTPClient(token string) *http.Client {
	t := &http.Transport{TLSClientConfig: c.TLSConfig(), ForceAttemptHTTP2: true}
	return &http.Client{Transport: bearer{token: token, next: t}}
}

// bearer adds an Authorization header to each request.
type bearer struct {
	token string
	next  *http.Transport
}

// RoundTrip implements http.RoundTripper.
func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	if b.token != "" {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(req)
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// transport.
func (b bearer) CloseIdleConnections() { b.next.CloseIdleConnections() }

// WriteKubeconfig writes to path a kubeconfig for user (AdminUser or
// UnprivilegedUser) that talks to server, or to URL() when server is empty
// (pass a tcpproxy's URL to go through it), trusting the cluster's CA.
func (c *Cluster) WriteKubeconfig(path, user, server string) error {
	var token string
	switch user {
	case AdminUser:
		token = c.creds.adminToken
	case UnprivilegedUser:
		token = c.creds.nobodyToken
	default:
		return fmt.Errorf("WriteKubeconfig: unknown user %q (want %q or %q)", user, AdminUser, UnprivilegedUser)
	}
	if server == "" {
		server = c.URL()
	}
	// JSON is YAML, so every kubeconfig loader reads this.
	cfg := map[string]any{
		"apiVersion": "v1",
		"kind":       "Config",
		"clusters": []any{map[string]any{
			"name": "listwatch-e2e",
			"cluster": map[string]any{
				"server":                     server,
				"certificate-authority-data": base64.StdEncoding.EncodeToString(c.creds.caPEM),
			},
		}},
		"users": []any{map[string]any{
			"name": user,
			"user": map[string]any{"token": token},
		}},
		"contexts": []any{map[string]any{
			"name":    user + "@listwatch-e2e",
			"context": map[string]any{"cluster": "listwatch-e2e", "user": user},
		}},
		"current-context": user + "@listwatch-e2e",
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the kubeconfig: %w", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	return nil
}

func (c *Cluster) etcdLog() string      { return filepath.Join(c.dir, "etcd.log") }
func (c *Cluster) apiserverLog() string { return filepath.Join(c.dir, "kube-apiserver.log") }

// LogTail returns the last lines of the etcd and kube-apiserver logs, each
// under a header, for a failure message.
func (c *Cluster) LogTail(lines int) string {
	var b bytes.Buffer
	for _, f := range []string{c.etcdLog(), c.apiserverLog()} {
		data, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintf(&b, "---- %s: %v\n", f, err)
			continue
		}
		fmt.Fprintf(&b, "---- last %d lines of %s\n%s\n", lines, f, tail(string(data), lines))
	}
	return b.String()
}

// EtcdRevision returns etcd's current revision: the resource version the
// apiserver would give the next write, minus one.
func (c *Cluster) EtcdRevision(ctx context.Context) (int64, error) {
	// A count-only range over an empty key answers with the header alone.
	var out struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	if err := c.etcdCall(ctx, "/v3/kv/range", map[string]any{"key": base64.StdEncoding.EncodeToString([]byte{0}), "count_only": true}, &out); err != nil {
		return 0, err
	}
	rev, err := strconv.ParseInt(out.Header.Revision, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("etcd answered revision %q: %w", out.Header.Revision, err)
	}
	return rev, nil
}

// CompactEtcd compacts etcd's history up to revision rev (physically,
// waiting until it is done), so that reading at an older resource version
// fails. The apiserver is not told; what it answers then is what the
// conformance tests record.
func (c *Cluster) CompactEtcd(ctx context.Context, rev int64) error {
	return c.etcdCall(ctx, "/v3/kv/compaction", map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}, nil)
}

// etcdCall posts req as JSON to etcd's gRPC gateway at path and decodes the
// answer into out (when not nil).
func (c *Cluster) etcdCall(ctx context.Context, path string, req, out any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.EtcdURL()+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("etcd %s: reading the answer: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s: %s", path, resp.Status, bytes.TrimSpace(data))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("etcd %s: decoding %q: %w", path, data, err)
		}
	}
	return nil
}
