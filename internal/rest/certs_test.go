package rest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
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
	write := func(cn string) {
		c, k := ca.issue(t, cn, true, nil, nil)
		for path, data := range map[string][]byte{certFile: c, keyFile: k} {
			tmp := path + ".tmp" // replaced whole, as rotations do
			if err := os.WriteFile(tmp, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}
	}
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
