package rest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a certificate and key in PEM signed by the CA: a server
// certificate for dnsNames and ips, or a client certificate for cn.
func (ca *testCA) issue(t *testing.T, cn string, client bool, dnsNames []string, ips []net.IP) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	usage := x509.ExtKeyUsageServerAuth
	if client {
		usage = x509.ExtKeyUsageClientAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     dnsNames,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// newClientCertServer starts a TLS server whose certificate the CA signed
// for "apiserver.test" and 127.0.0.1, that asks for client certificates
// signed by the same CA (optional ones, as kube-apiserver does) and answers
// with the client certificate's common name, or "anonymous".
func newClientCertServer(t *testing.T, ca *testCA) *httptest.Server {
	t.Helper()
	return newClientCertServerCounting(t, ca, nil)
}

// newClientCertServerCounting is newClientCertServer adding one to conns
// for each connection it accepts, if conns is not nil.
func newClientCertServerCounting(t *testing.T, ca *testCA, conns *atomic.Int32) *httptest.Server {
	t.Helper()
	certPEM, keyPEM := ca.issue(t, "apiserver", false, []string{"apiserver.test"}, []net.IP{net.ParseIP("127.0.0.1")})
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 {
			_, _ = w.Write([]byte("anonymous"))
			return
		}
		_, _ = w.Write([]byte(r.TLS.PeerCertificates[0].Subject.CommonName))
	}))
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    pool,
	}
	if conns != nil {
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// serverCAPEM returns the PEM certificate of an httptest TLS server, to use
// as CAData.
func serverCAPEM(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// Client certificate and key files replaced while the program runs (the
// kubelet rotates its client certificate so) are read again: the next
// request closes the connections made with the old pair, and a new one
// presents the new pair. They were read once, and the old pair presented
// until it expired.
func TestClientCertFilesAreReadAgainWhenReplaced(t *testing.T) {
	ca := newTestCA(t, "ca")
	srv := newClientCertServer(t, ca) // answers with the client certificate's CN
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
	write := func(cn string) { writePair(t, ca, cn, certFile, keyFile) }
	write("node-old")
	c, err := NewClient(&Config{Host: srv.URL, TLS: TLSConfig{CAData: ca.certPEM, CertFile: certFile, KeyFile: keyFile}})
	if err != nil {
		t.Fatal(err)
	}
	if _, who := get(t, c, "/"); who != "node-old" {
		t.Fatalf("first request as %q", who)
	}
	write("node-new")
	if _, who := get(t, c, "/"); who != "node-new" {
		t.Errorf("after the files were replaced, the request went as %q, want node-new", who)
	}
	// A pair caught half-written keeps the last good one in use.
	if err := os.WriteFile(keyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.CloseIdleConnections()
	if _, who := get(t, c, "/"); who != "node-new" {
		t.Errorf("with a broken key file, the request went as %q, want node-new (the last good pair)", who)
	}
}

// newH2ClientCertServer is newClientCertServer over HTTP/2, as
// kube-apiserver speaks: it answers with the client certificate's CN, and
// /stream sends a byte and holds the stream open (a watch).
func newH2ClientCertServer(t *testing.T, ca *testCA) *httptest.Server {
	certPEM, keyPEM := ca.issue(t, "apiserver", false, []string{"apiserver.test"}, []net.IP{net.ParseIP("127.0.0.1")})
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stream" {
			_, _ = w.Write([]byte("x"))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		_, _ = w.Write([]byte(r.TLS.PeerCertificates[0].Subject.CommonName))
	}))
	srv.EnableHTTP2 = true
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// Over HTTP/2 the request that notices new certificate files closes the
// connections, and the pool could still hand it one of them: it failed
// with "use of closed network connection" about a third of the time. It
// is sent once more on a new connection. With a watch open on the
// connection, too.
func TestClientCertRotationOverHTTP2(t *testing.T) {
	for _, watching := range []bool{false, true} {
		t.Run(fmt.Sprint("watching=", watching), func(t *testing.T) {
			ca := newTestCA(t, "ca")
			srv := newH2ClientCertServer(t, ca)
			dir := t.TempDir()
			certFile, keyFile := filepath.Join(dir, "c.crt"), filepath.Join(dir, "c.key")
			write := func(cn string) { writePair(t, ca, cn, certFile, keyFile) }
			write("n0")
			c, err := NewClient(&Config{Host: srv.URL, TLS: TLSConfig{CAData: ca.certPEM, CertFile: certFile, KeyFile: keyFile}})
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= 40; i++ {
				var stream io.Closer
				if watching {
					resp, err := c.Do(mustRequest(t, c.URL("/stream", nil).String()))
					if err != nil {
						t.Fatal(err)
					}
					if _, err := io.ReadFull(resp.Body, make([]byte, 1)); err != nil {
						t.Fatal(err)
					}
					stream = resp.Body
				} else {
					get(t, c, "/")
				}
				write(fmt.Sprint("n", i))
				resp, err := c.Do(mustRequest(t, c.URL("/", nil).String()))
				if stream != nil {
					stream.Close()
				}
				if err != nil {
					t.Fatalf("round %d: the request after the rotation failed: %v", i, err)
				}
				who, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(who) != fmt.Sprint("n", i) {
					t.Fatalf("round %d: the request went as %q", i, who)
				}
			}
		})
	}
}

func mustRequest(t *testing.T, url string) *http.Request {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// The kubelet keeps its client certificate and key in one file behind a
// symlink, which it swaps to a new file. A new file of the same size and
// modification time (staged with cp -p, tar, rsync -a) is still a new file.
func TestClientCertSymlinkSwappedToAFileOfTheSameSizeAndTime(t *testing.T) {
	ca := newTestCA(t, "ca")
	srv := newClientCertServer(t, ca)
	dir := t.TempDir()
	current := filepath.Join(dir, "kubelet-client-current.pem")
	mtime := time.Now().Add(-time.Hour).Truncate(time.Second)
	swap := func(cn string) {
		c, k := ca.issue(t, cn, true, nil, nil)
		data := append(c, k...)
		data = append(data, bytes.Repeat([]byte("\n"), 4096-len(data))...) // every file 4096 bytes
		target := filepath.Join(dir, "kubelet-client-"+cn+".pem")
		if err := os.WriteFile(target, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(target, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, current+".tmp"); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(current+".tmp", current); err != nil {
			t.Fatal(err)
		}
	}
	swap("node-a")
	c, err := NewClient(&Config{Host: srv.URL, TLS: TLSConfig{CAData: ca.certPEM, CertFile: current, KeyFile: current}})
	if err != nil {
		t.Fatal(err)
	}
	if _, who := get(t, c, "/"); who != "node-a" {
		t.Fatalf("first request as %q", who)
	}
	swap("node-b")
	if _, who := get(t, c, "/"); who != "node-b" {
		t.Errorf("after the symlink was swapped to a file of the same size and time, the request went as %q, want node-b", who)
	}
}

// writePair issues a client certificate for cn and replaces certFile and
// keyFile with it, each whole (written aside, then renamed), as rotations do.
func writePair(t *testing.T, ca *testCA, cn, certFile, keyFile string) {
	t.Helper()
	c, k := ca.issue(t, cn, true, nil, nil)
	for path, data := range map[string][]byte{certFile: c, keyFile: k} {
		if err := os.WriteFile(path+".tmp", data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
}
