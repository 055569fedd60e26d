package kubeconfigdiff

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The servers the kubeconfigs point at, and what they saw.

// record is what a server saw of one request: the things a kubeconfig
// decides.
type record struct {
	Server         string   // "A" or "B" (HTTPS), "H" (plain HTTP)
	Prefix         string   // the path before the test's own, from the server URL
	Proxied        bool     // it came through the proxy
	Authorization  string   // the Authorization header
	Impersonate    []string // every Impersonate-* header, "Name: value", sorted
	ClientCN       string   // the client certificate's subject CN, if one was presented
	AcceptEncoding string   // gzip unless disable-compression
}

// recorder keeps the record of each request by its path's last element,
// a run ID unique in the test.
type recorder struct {
	proxy *proxy

	mu   sync.Mutex
	seen map[string]record
}

func (rec *recorder) handler(server string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := record{
			Server:         server,
			Proxied:        rec.proxy.dialedFrom(r.RemoteAddr),
			Authorization:  r.Header.Get("Authorization"),
			AcceptEncoding: r.Header.Get("Accept-Encoding"),
		}
		for k, vs := range r.Header {
			if strings.HasPrefix(k, "Impersonate-") {
				for _, v := range vs {
					got.Impersonate = append(got.Impersonate, k+": "+v)
				}
			}
		}
		slices.Sort(got.Impersonate)
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			got.ClientCN = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		id := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
		got.Prefix, _, _ = strings.Cut(r.URL.Path, "/kcdiff/")
		rec.mu.Lock()
		if rec.seen == nil {
			rec.seen = map[string]record{}
		}
		if _, dup := rec.seen[id]; dup {
			got.Server += " (twice)"
		}
		rec.seen[id] = got
		rec.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"major":"1","minor":"37"}`)
	})
}

// take returns and forgets the record of run id.
func (rec *recorder) take(id string) (record, bool) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	r, ok := rec.seen[id]
	delete(rec.seen, id)
	return r, ok
}

// proxy is a forward proxy: CONNECT tunnels for https:// targets, and
// absolute-URL requests for http:// ones. It dials the servers from
// proxySource, an address no client uses, so that a server can tell that a
// request came through it. (Remembering the ports it dialed from is not
// enough: Linux gives one local port to several connections with
// different destinations, so a client's direct connection to one server
// can have the port of a proxied one to another.)
type proxy struct {
	forward *httputil.ReverseProxy
	tr      *http.Transport

	mu      sync.Mutex
	tunnels map[net.Conn]bool
	wg      sync.WaitGroup
}

// proxySource is the proxy's side of its connections to the servers; the
// clients connect from 127.0.0.1.
var proxySource = net.IPv4(127, 0, 0, 2)

func newProxy() *proxy {
	p := &proxy{tunnels: map[net.Conn]bool{}}
	p.tr = &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return p.dial(ctx, addr)
	}}
	p.forward = &httputil.ReverseProxy{
		Rewrite:   func(*httputil.ProxyRequest) {}, // Out.URL is In's, absolute
		Transport: p.tr,
	}
	return p
}

func (p *proxy) dial(ctx context.Context, addr string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: proxySource}}
	return d.DialContext(ctx, "tcp", addr)
}

// dialedFrom reports whether remote, a request's RemoteAddr, is the
// proxy's.
func (p *proxy) dialedFrom(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	return p != nil && err == nil && net.ParseIP(host).Equal(proxySource)
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		p.forward.ServeHTTP(w, r)
		return
	}
	up, err := p.dial(r.Context(), r.Host)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		_ = up.Close()
		return
	}
	p.mu.Lock()
	if p.tunnels == nil { // closed
		p.mu.Unlock()
		_ = up.Close()
		_ = conn.Close()
		return
	}
	p.tunnels[conn], p.tunnels[up] = true, true
	p.mu.Unlock()
	_, _ = io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n")
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		_, _ = io.Copy(up, buf)
		_ = up.Close()
		_ = conn.Close()
	}()
	go func() {
		defer p.wg.Done()
		_, _ = io.Copy(conn, up)
		_ = up.Close()
		_ = conn.Close()
	}()
}

// close ends the tunnels still open and waits for their goroutines.
func (p *proxy) close() {
	p.mu.Lock()
	tunnels := p.tunnels
	p.tunnels = nil
	p.mu.Unlock()
	for c := range tunnels {
		_ = c.Close()
	}
	p.wg.Wait()
	p.tr.CloseIdleConnections()
}

// pki is the certificates of a test: two CAs, a server certificate signed
// by each, and client certificates (their CAs do not matter: the servers
// ask for a certificate without verifying it).
type pki struct {
	ca1, ca2 []byte          // PEM
	serverA  tls.Certificate // signed by ca1, for 127.0.0.1 and a.kcdiff.test
	serverB  tls.Certificate // signed by ca2, for 127.0.0.1 and b.kcdiff.test
	clients  []keyPair       // CNs alice, bob, carol
	serial   int64
}

type keyPair struct {
	cn        string
	cert, key []byte // PEM
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{}
	ca1Key, ca1 := p.selfSigned(t, "kcdiff CA 1")
	ca2Key, ca2 := p.selfSigned(t, "kcdiff CA 2")
	p.ca1, p.ca2 = pemCert(ca1), pemCert(ca2)
	p.serverA = p.leaf(t, ca1Key, ca1, "a.kcdiff.test", true).tls(t)
	p.serverB = p.leaf(t, ca2Key, ca2, "b.kcdiff.test", true).tls(t)
	for _, cn := range []string{"alice", "bob", "carol"} {
		p.clients = append(p.clients, p.leaf(t, ca1Key, ca1, cn, false))
	}
	return p
}

func (p *pki) selfSigned(t *testing.T, cn string) (*ecdsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p.serial++
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(p.serial),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert
}

// leaf makes a certificate signed by the CA: a server's for 127.0.0.1 and
// name, or a client's with CN name.
func (p *pki) leaf(t *testing.T, caKey *ecdsa.PrivateKey, ca *x509.Certificate, name string, server bool) keyPair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.DNSNames = []string{name}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return keyPair{
		cn:   name,
		cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}
}

func (k keyPair) tls(t *testing.T) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(k.cert, k.key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func pemCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// servers is what a test's kubeconfigs point at.
type servers struct {
	rec     *recorder
	a, b, h string // https://127.0.0.1:port (A, B), http://127.0.0.1:port (H)
	proxy   string // http://127.0.0.1:port
	closed  string // host:port where nothing listens
}

func startServers(t *testing.T, p *pki) *servers {
	t.Helper()
	px := newProxy()
	rec := &recorder{proxy: px}
	tlsServer := func(name string, cert tls.Certificate) string {
		s := httptest.NewUnstartedServer(rec.handler(name))
		s.EnableHTTP2 = true
		s.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequestClientCert}
		s.Config.ErrorLog = discardLog
		s.StartTLS()
		t.Cleanup(s.Close)
		return s.URL
	}
	s := &servers{rec: rec}
	s.a = tlsServer("A", p.serverA)
	s.b = tlsServer("B", p.serverB)
	h := httptest.NewServer(rec.handler("H"))
	t.Cleanup(h.Close)
	s.h = h.URL
	ps := httptest.NewServer(px)
	t.Cleanup(px.close) // after ps.Close: cleanups run last first
	t.Cleanup(ps.Close)
	s.proxy = ps.URL
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.closed = l.Addr().String()
	_ = l.Close()
	return s
}

// discardLog keeps the TLS servers' handshake errors, which the cases
// with a wrong CA cause on purpose, out of the test's output.
var discardLog = log.New(io.Discard, "", 0)
