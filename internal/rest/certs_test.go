package rest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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

// A CA file rewritten while the program runs (a cluster's CA rotation: the
// service account's ca.crt, or a kubeconfig's certificate-authority file,
// gets the new CA next to the old one, and the apiservers then present
// certificates the new CA signed) is read again, as the token and client
// certificate files are, and as client-go v0.37 does (ReloadCAFiles, on by
// default since 1.36). Read once, it fails every connection made after the
// apiserver switched, until the process restarts.
func TestCAFileReadAgainWhenRotated(t *testing.T) {
	oldCA, newCA := newTestCA(t, "old-ca"), newTestCA(t, "new-ca")
	serving := func(ca *testCA) *tls.Certificate {
		certPEM, keyPEM := ca.issue(t, "apiserver", false, []string{"apiserver.test"}, []net.IP{net.ParseIP("127.0.0.1")})
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return &cert
	}
	var current atomic.Pointer[tls.Certificate]
	current.Store(serving(oldCA))
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	srv.TLS = &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return current.Load(), nil }}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	caFile := writeFile(t, filepath.Join(t.TempDir(), "ca.crt"), string(oldCA.certPEM))
	// ServerName: with SNI the server picks its certificate by GetCertificate.
	c := newClient(t, &Config{Host: srv.URL, TLS: TLSConfig{CAFile: caFile, ServerName: "apiserver.test"}})
	if _, body := get(t, c, "/"); body != "ok" {
		t.Fatalf("before the rotation: %q", body)
	}

	// The rotation: the bundle gets the new CA, then the server switches.
	writeFile(t, caFile, string(oldCA.certPEM)+string(newCA.certPEM))
	current.Store(serving(newCA))
	c.CloseConnections() // an apiserver restart, a watch timeout: new connections

	if err := getErr(c, "/"); err != nil {
		t.Fatalf("after the CA file gained the new CA: %v", err)
	}
}

// rotatingServer is an HTTP/2 TLS server whose certificate, for
// "apiserver.test" and 127.0.0.1, is signed by one CA until serveWith
// switches it to another's, as apiservers do in a CA rotation. It answers
// "ok", and /stream with "x", then "y" once released is closed (a watch's
// events). open counts its connections; allClosed is told when none are
// left.
type rotatingServer struct {
	*httptest.Server
	current   atomic.Pointer[tls.Certificate]
	released  chan struct{}
	open      atomic.Int32
	allClosed chan struct{}
}

func newRotatingServer(t *testing.T, ca *testCA) *rotatingServer {
	t.Helper()
	s := &rotatingServer{released: make(chan struct{}), allClosed: make(chan struct{}, 1)}
	s.serveWith(t, ca)
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stream" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		_, _ = io.WriteString(w, "x")
		w.(http.Flusher).Flush()
		select {
		case <-s.released:
			_, _ = io.WriteString(w, "y")
		case <-r.Context().Done():
		}
	}))
	s.EnableHTTP2 = true
	s.TLS = &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return s.current.Load(), nil }}
	s.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		switch state {
		case http.StateNew:
			s.open.Add(1)
		case http.StateClosed, http.StateHijacked:
			if s.open.Add(-1) == 0 {
				select {
				case s.allClosed <- struct{}{}:
				default:
				}
			}
		}
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// serveWith makes new connections get a certificate ca signed.
func (s *rotatingServer) serveWith(t *testing.T, ca *testCA) {
	t.Helper()
	certPEM, keyPEM := ca.issue(t, "apiserver", false, []string{"apiserver.test"}, []net.IP{net.ParseIP("127.0.0.1")})
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	s.current.Store(&cert)
}

// newCAFileClient returns a Client of srv whose roots are in caFile, and
// what it logged at Info and above.
func newCAFileClient(t *testing.T, srv *rotatingServer, caFile string) (*Client, *bytes.Buffer) {
	t.Helper()
	logs := new(bytes.Buffer) // written by the requests' goroutines, read once they are done
	c, err := NewClient(&Config{Host: srv.URL, TLS: TLSConfig{CAFile: caFile, ServerName: "apiserver.test"}},
		WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	return c, logs
}

// A CA file caught empty or half-written in a rotation, or removed, leaves
// the roots read before in use: connections made meanwhile still verify
// the apiserver. It is warned about once, not at every request, until it
// loads again.
func TestCAFileThatNoLongerLoadsKeepsTheRoots(t *testing.T) {
	oldCA, newCA := newTestCA(t, "old-ca"), newTestCA(t, "new-ca")
	srv := newRotatingServer(t, oldCA)
	caFile := writeFile(t, filepath.Join(t.TempDir(), "ca.crt"), string(oldCA.certPEM))
	c, logs := newCAFileClient(t, srv, caFile)
	get(t, c, "/")

	bundle := string(oldCA.certPEM) + string(newCA.certPEM)
	for _, broken := range []string{
		"",                         // truncated by the writer, not yet written
		bundle[:len(bundle)-100],   // the old CA whole, the new one cut short
		"not a certificate at all", // overwritten with something else
	} {
		writeFile(t, caFile, broken)
		for range 3 {
			c.CloseConnections() // a new connection verifies the server each time
			if err := getErr(c, "/"); err != nil {
				t.Fatalf("with the CA file holding %q: %v; want the roots read before in use", broken, err)
			}
		}
	}
	if err := os.Remove(caFile); err != nil {
		t.Fatal(err)
	}
	c.CloseConnections()
	if err := getErr(c, "/"); err != nil {
		t.Fatalf("with the CA file removed: %v", err)
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Errorf("%d warnings while the file did not load, want 1:\n%s", n, logs)
	}

	// Loaded again, then broken again: a second warning.
	writeFile(t, caFile, bundle)
	srv.serveWith(t, newCA)
	c.CloseConnections()
	if err := getErr(c, "/"); err != nil {
		t.Fatalf("after the CA file loaded again: %v", err)
	}
	writeFile(t, caFile, "")
	c.CloseConnections()
	if err := getErr(c, "/"); err != nil {
		t.Fatalf("with the CA file empty again: %v", err)
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 2 {
		t.Errorf("%d warnings for two times the file did not load, want 2:\n%s", n, logs)
	}
}

// The kubelet writes a pod's service account files (ca.crt among them) to
// a new directory and swaps a symlink to it. A new file of the same size
// and modification time is still a new file, seen before the request goes:
// one with a body, which is not sent twice when its handshake fails.
func TestCAFileSymlinkSwappedToAFileOfTheSameSizeAndTime(t *testing.T) {
	oldCA, newCA := newTestCA(t, "old-ca"), newTestCA(t, "new-ca")
	srv := newRotatingServer(t, oldCA)
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	mtime := time.Now().Add(-time.Hour).Truncate(time.Second)
	swap := func(name, bundle string) {
		target := filepath.Join(dir, name)
		writeFile(t, target, bundle+strings.Repeat("\n", 4096-len(bundle))) // every file 4096 bytes
		if err := os.Chtimes(target, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, caFile+".tmp"); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(caFile+".tmp", caFile); err != nil {
			t.Fatal(err)
		}
	}
	swap("ca-1.crt", string(oldCA.certPEM))
	c, _ := newCAFileClient(t, srv, caFile)
	get(t, c, "/")

	swap("ca-2.crt", string(oldCA.certPEM)+string(newCA.certPEM))
	srv.serveWith(t, newCA)
	c.CloseConnections()
	req, err := http.NewRequest(http.MethodPost, c.URL("/", nil).String(), strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("after the symlink was swapped to a file of the same size and time: %v", err)
	}
	resp.Body.Close()
}

// A CA file rewritten in place to the same size within the file system's
// modification-time granularity looks unchanged; the handshake that fails
// for want of the new CA has it read again, and the request is sent once
// more.
func TestCAFileReadAgainWhenAHandshakeFindsAnUnknownAuthority(t *testing.T) {
	oldCA, newCA := newTestCA(t, "old-ca"), newTestCA(t, "new-ca")
	srv := newRotatingServer(t, oldCA)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	mtime := time.Now().Add(-time.Hour).Truncate(time.Second)
	write := func(bundle string) {
		writeFile(t, caFile, bundle+strings.Repeat("\n", 4096-len(bundle)))
		if err := os.Chtimes(caFile, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	write(string(oldCA.certPEM))
	c, _ := newCAFileClient(t, srv, caFile)
	get(t, c, "/")

	write(string(newCA.certPEM)) // the same file, size and time
	srv.serveWith(t, newCA)
	c.CloseConnections()
	if err := getErr(c, "/"); err != nil {
		t.Errorf("after the CA file was rewritten and the server switched: %v", err)
	}
}

// The new roots apply to new connections; a watch open on a connection
// made before the rotation carries on to its end. The new connection
// speaks HTTP/2, and CloseConnections still closes both.
func TestCAFileRotationLeavesOpenStreamsAlone(t *testing.T) {
	oldCA, newCA := newTestCA(t, "old-ca"), newTestCA(t, "new-ca")
	srv := newRotatingServer(t, oldCA)
	caFile := writeFile(t, filepath.Join(t.TempDir(), "ca.crt"), string(oldCA.certPEM))
	c, _ := newCAFileClient(t, srv, caFile)

	stream, err := c.Do(mustRequest(t, c.URL("/stream", nil).String()))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	if _, err := io.ReadFull(stream.Body, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}

	writeFile(t, caFile, string(oldCA.certPEM)+string(newCA.certPEM))
	resp, err := c.Do(mustRequest(t, c.URL("/", nil).String()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Errorf("after the rotation the request went over %s, want HTTP/2", resp.Proto)
	}
	if n := srv.open.Load(); n != 2 {
		t.Errorf("%d connections open on the server, want 2: the watch's and one verified against the new roots", n)
	}

	close(srv.released)
	if rest, err := io.ReadAll(stream.Body); err != nil || string(rest) != "y" {
		t.Errorf("the watch opened before the rotation read %q, %v; want the rest of its events and its end", rest, err)
	}
	c.CloseConnections()
	select {
	case <-srv.allClosed:
	case <-time.After(30 * time.Second): // a deadline, not a wait
		t.Fatalf("%d connections still open on the server after CloseConnections", srv.open.Load())
	}
}

// Requests sent while the CA file is rewritten again and again (in place,
// so that some reads find it empty or half-written) all succeed, over
// HTTP/2 and over HTTP/1.1, which dials more.
func TestCAFileRewrittenUnderLoad(t *testing.T) {
	for _, disableHTTP2 := range []bool{false, true} {
		t.Run(fmt.Sprint("DisableHTTP2=", disableHTTP2), func(t *testing.T) {
			oldCA, newCA := newTestCA(t, "old-ca"), newTestCA(t, "new-ca")
			srv := newRotatingServer(t, oldCA)
			caFile := writeFile(t, filepath.Join(t.TempDir(), "ca.crt"), string(oldCA.certPEM))
			c := newClient(t, &Config{Host: srv.URL, TLS: TLSConfig{CAFile: caFile, ServerName: "apiserver.test"}, DisableHTTP2: disableHTTP2})

			var wg sync.WaitGroup
			errs := make(chan error, 8*50)
			for range 8 {
				wg.Go(func() {
					for range 50 {
						if err := getErr(c, "/"); err != nil {
							errs <- err
						}
					}
				})
			}
			for i := range 40 {
				bundle := oldCA.certPEM
				if i%2 == 0 {
					bundle = append(bytes.Clone(oldCA.certPEM), newCA.certPEM...)
				}
				if err := os.WriteFile(caFile, bundle, 0o600); err != nil {
					t.Fatal(err)
				}
				if i%10 == 0 {
					c.CloseIdleConnections()
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// A CA file path that comes to name something that is not a regular file
// (a directory, a named pipe, a device such as /dev/zero through a
// symlink) must not stop the Client: the roots read before stay in use.
// A pipe nobody writes to blocks os.ReadFile for ever, under the lock
// that every request of the Client takes first.
func TestCAFileThatIsNoLongerARegularFileKeepsTheClientGoing(t *testing.T) {
	oldCA := newTestCA(t, "old-ca")
	srv := newRotatingServer(t, oldCA)
	dir := t.TempDir()
	caFile := writeFile(t, filepath.Join(dir, "ca.crt"), string(oldCA.certPEM))
	c, _ := newCAFileClient(t, srv, caFile)
	get(t, c, "/")

	for name, replace := range map[string]func(){
		"a directory": func() {
			if err := os.Remove(caFile); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(caFile, 0o700); err != nil {
				t.Fatal(err)
			}
		},
		"a named pipe": func() {
			if err := os.Remove(caFile); err != nil {
				t.Fatal(err)
			}
			mkfifo(t, caFile)
		},
	} {
		replace()
		if err := answered(t, caFile, func() error { return getErr(c, "/") }); err != nil {
			t.Errorf("with the CA file %s: %v", name, err)
		}
	}
}

// answered returns what request returns, failing the test if it still
// waits after 10 s; pipe, if it is a named pipe that request may be stuck
// reading, is then opened for writing and closed, to let the test end.
func answered(t *testing.T, pipe string, request func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- request() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second): // a deadline, not a wait
		if f, err := os.OpenFile(pipe, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		t.Fatalf("with %s: a request still waits after 10 s", pipe)
		return nil
	}
}

// Client certificate and key files that come to name a named pipe are
// treated as the CA file is: the pair read before stays in use. They were
// read before the request, under the lock that every request takes, and
// one nobody writes to held every request of the Client for ever.
func TestClientCertFileThatIsNoLongerARegularFileKeepsTheClientGoing(t *testing.T) {
	ca := newTestCA(t, "ca")
	srv := newClientCertServer(t, ca) // answers with the client certificate's CN
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
	writePair(t, ca, "node", certFile, keyFile)
	c, err := NewClient(&Config{Host: srv.URL, TLS: TLSConfig{CAData: ca.certPEM, CertFile: certFile, KeyFile: keyFile}})
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{keyFile, certFile} {
		if err := os.Remove(file); err != nil {
			t.Fatal(err)
		}
		mkfifo(t, file)
		var who string
		if err := answered(t, file, func() (err error) {
			_, who, err = getBody(c, "/")
			return err
		}); err != nil || who != "node" {
			t.Errorf("with %s a named pipe: %q, %v; want the request to go as node", filepath.Base(file), who, err)
		}
	}
}

// A CA file given as a pipe when the Client is made, as a shell's process
// substitution gives one (kubectl --certificate-authority=<(...), or
// /dev/stdin), is read then, as client-go reads it: only a path that
// comes to name something else than a regular file later is refused,
// since that read would be under the lock every request takes.
func TestCAFileGivenAsAPipeAtStart(t *testing.T) {
	ca := newTestCA(t, "ca")
	srv := newRotatingServer(t, ca)
	pipe := filepath.Join(t.TempDir(), "ca-pipe")
	mkfifo(t, pipe)
	wrote := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(pipe, os.O_WRONLY, 0) // until the Client opens it
		if err == nil {
			_, err = f.Write(ca.certPEM)
			f.Close()
		}
		wrote <- err
	}()
	c, err := NewClient(&Config{Host: srv.URL, TLS: TLSConfig{CAFile: pipe, ServerName: "apiserver.test"}})
	if err != nil {
		// Let the writer go, so that the test ends.
		if fd, err := syscall.Open(pipe, syscall.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			syscall.Close(fd)
		}
		t.Fatalf("a CA file given as a pipe: %v", err)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- getErr(c, "/") }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("with the CA read from a pipe: %v", err)
		}
	case <-time.After(10 * time.Second): // a deadline, not a wait
		t.Fatal("a request still waits after 10 s")
	}
}

// A CA file given as a pipe with an exec plugin: the CA certificates the
// plugin may ask for (ProvideClusterInfo) came from a read of their own,
// made first, which drained the pipe; the read for the roots then waited
// for a writer that had gone, and NewClient never returned.
func TestCAFileGivenAsAPipeWithAnExecPlugin(t *testing.T) {
	ca := newTestCA(t, "ca")
	pipe := filepath.Join(t.TempDir(), "ca-pipe")
	mkfifo(t, pipe)
	go func() {
		f, err := os.OpenFile(pipe, os.O_WRONLY, 0) // until the Client opens it
		if err == nil {
			_, _ = f.Write(ca.certPEM)
			f.Close()
		}
	}()
	made := make(chan error, 1)
	var c *Client
	go func() {
		var err error
		c, err = NewClient(&Config{
			Host: "https://apiserver.test",
			TLS:  TLSConfig{CAFile: pipe},
			Exec: &ExecConfig{Command: "plugin", APIVersion: ExecAPIVersionV1, ProvideClusterInfo: true},
		})
		made <- err
	}()
	select {
	case err := <-made:
		if err != nil {
			t.Fatalf("a CA file given as a pipe, with an exec plugin: %v", err)
		}
		var info struct {
			Spec struct {
				Cluster struct {
					CAData []byte `json:"certificate-authority-data"`
				} `json:"cluster"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(c.auth.exec.info, &info); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(info.Spec.Cluster.CAData, ca.certPEM) {
			t.Errorf("the plugin is given %q as the CA data, want the pipe's certificate", info.Spec.Cluster.CAData)
		}
	case <-time.After(10 * time.Second): // a deadline, not a wait
		// Let NewClient go, so that the test ends.
		if f, err := os.OpenFile(pipe, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		<-made
		t.Fatal("NewClient still waits after 10 s")
	}
}
