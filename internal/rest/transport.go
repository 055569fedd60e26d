package rest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// The transport under the auth layer: TLS, HTTP/2 with PING health checks,
// and a dialer whose TCP settings notice a dead peer on HTTP/1.1.

// readBufferSize is the Transport's read buffer per connection (net/http's
// default is 4 KiB).
const readBufferSize = 64 << 10

// newTransport builds the *http.Transport for cfg, whose timeouts have their
// defaults applied. tracker, when not nil, records every connection so that
// they can all be closed.
func newTransport(cfg *Config, tlsConfig *tls.Config, tracker *connTracker) (*http.Transport, error) {
	proxy := http.ProxyFromEnvironment
	if cfg.ProxyURL != "" {
		u, err := url.Parse(cfg.ProxyURL)
		if err != nil {
			return nil, fmt.Errorf("proxy URL %q does not parse", redactURL(cfg.ProxyURL))
		}
		switch u.Scheme {
		case "http", "https", "socks5", "socks5h":
		default:
			return nil, fmt.Errorf("proxy URL %q: scheme must be http, https or socks5", redactURL(cfg.ProxyURL))
		}
		proxy = http.ProxyURL(u)
	}

	dialer := &net.Dialer{
		Timeout: cfg.DialTimeout,
		Control: userTimeoutControl(cfg.TCPUserTimeout),
	}
	if cfg.DialKeepAlive > 0 {
		dialer.KeepAliveConfig = net.KeepAliveConfig{
			Enable:   true,
			Idle:     cfg.DialKeepAlive,
			Interval: cfg.DialKeepAlive,
			Count:    3,
		}
	} else {
		dialer.KeepAlive = -1
	}
	dial := dialer.DialContext
	if tracker != nil {
		dial = tracker.wrap(dial)
	}

	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	if !cfg.DisableHTTP2 {
		// Offered through ALPN: servers that do not speak HTTP/2 get
		// HTTP/1.1.
		protocols.SetHTTP2(true)
	}
	return &http.Transport{
		Proxy:                 proxy,
		DialContext:           dial,
		TLSClientConfig:       tlsConfig,
		TLSHandshakeTimeout:   10 * time.Second,
		MaxIdleConnsPerHost:   25,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    cfg.DisableCompression,
		// Watch streams are read in small pieces (a length prefix, then an
		// event): a larger buffer means fewer reads from the socket.
		ReadBufferSize: readBufferSize,
		Protocols:      protocols,
		HTTP2: &http.HTTP2Config{
			// After SendPingTimeout without a frame, a PING; after
			// PingTimeout without its answer, the connection is closed
			// and every stream on it fails.
			SendPingTimeout: cfg.HTTP2ReadIdleTimeout,
			PingTimeout:     cfg.HTTP2PingTimeout,
		},
	}, nil
}

// newTLSConfig builds the TLS configuration: verification against roots
// (from CAData and the CA file, read by newCAFileTransport; nil: CAData's,
// or the system's when there is none), TLS 1.2 at least, and the static
// client certificate (read again when its files change, files) or, failing
// that, the exec plugin's.
func newTLSConfig(t *TLSConfig, roots *x509.CertPool, exec *execPlugin, files *certFiles) (*tls.Config, error) {
	c := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         t.ServerName,
		InsecureSkipVerify: t.Insecure, //nolint:gosec // the user asked for it
	}
	if t.Insecure && (len(t.CAData) > 0 || t.CAFile != "") {
		return nil, errors.New("TLS: a CA certificate and Insecure are both set; verify the server or don't, not both")
	}
	switch {
	case roots != nil:
		c.RootCAs = roots
	case len(t.CAData) > 0:
		pool, err := newRootPool(t.CAData, nil, "")
		if err != nil {
			return nil, err
		}
		c.RootCAs = pool
	}
	switch {
	case files != nil:
		c.GetClientCertificate = files.clientCertificate
	case t.hasClientCert():
		cert, err := loadClientCert(t)
		if err != nil {
			return nil, err
		}
		c.Certificates = []tls.Certificate{cert}
	case exec != nil:
		c.GetClientCertificate = exec.clientCertificate
	}
	return c, nil
}

// loadClientCert loads the static client certificate and key, from the
// files whatever they are (a pipe is read once, here). Its errors never
// quote the key.
func loadClientCert(t *TLSConfig) (tls.Certificate, error) {
	certPEM, keyPEM := t.CertData, t.KeyData
	var err error
	if len(certPEM) == 0 && t.CertFile != "" {
		if certPEM, err = readFileLimited(t.CertFile, maxKubeconfigSize); err != nil {
			return tls.Certificate{}, fmt.Errorf("TLS: reading client certificate: %w", err)
		}
	}
	if len(keyPEM) == 0 && t.KeyFile != "" {
		if keyPEM, err = readFileLimited(t.KeyFile, maxKubeconfigSize); err != nil {
			return tls.Certificate{}, fmt.Errorf("TLS: reading client key: %w", err)
		}
	}
	return clientKeyPair(certPEM, keyPEM)
}

// clientKeyPair parses a client certificate and its key. Its errors never
// quote the key.
func clientKeyPair(certPEM, keyPEM []byte) (tls.Certificate, error) {
	switch {
	case len(certPEM) == 0:
		return tls.Certificate{}, errors.New("TLS: a client key is set without a client certificate")
	case len(keyPEM) == 0:
		return tls.Certificate{}, errors.New("TLS: a client certificate is set without its key")
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("TLS: client certificate and key: %w", err)
	}
	return cert, nil
}

// connTracker remembers open connections so that they can be closed: after
// a new client certificate (from an exec plugin, or files replaced),
// connections authenticated with the old one must not be reused, and
// Client.CloseConnections closes them all. It also tells the firstGate
// whether a usable HTTP/2 connection exists (idle), and whether requests
// reach the Client's dialer and share its connections (sharesDials). It is
// safe for concurrent use.
type connTracker struct {
	mu      sync.Mutex
	conns   map[*trackedConn]struct{}
	dialing map[*dialing]struct{} // dials under way; guarded by mu
	closes  atomic.Uint64         // how many times closeAll ran
	dialed  atomic.Bool           // a connection was dialed (whether it came up or not)
	usable  atomic.Int32          // connections a request was given and not closed since
	http1   atomic.Bool           // the last connection given speaks HTTP/1.1: nothing to share
}

type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// dialing is a dial under way: closeConns cancels it, and a connection it
// comes up with afterwards is closed at once.
type dialing struct {
	cancel context.CancelFunc
	closed bool // closeConns ran while it dialed; guarded by connTracker.mu
}

// errClosedWhileDialing fails a dial that closeConns ran during. It wraps
// net.ErrClosed, so that authTransport sends the request once more, on a
// new connection, if its context is still alive.
var errClosedWhileDialing = fmt.Errorf("connections closed while this one was dialed: %w", net.ErrClosed)

func (t *connTracker) wrap(dial dialFunc) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		t.dialed.Store(true) // tried: a server not up yet is "no connection up" too
		// The HTTP client dials on a context of its own, which outlives
		// the request that asked for the connection and would put the
		// connection in its pool after closeConns: closeConns must reach
		// the dials under way too.
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		d := &dialing{cancel: cancel}
		t.mu.Lock()
		if t.dialing == nil {
			t.dialing = map[*dialing]struct{}{}
		}
		t.dialing[d] = struct{}{}
		t.mu.Unlock()

		conn, err := dial(ctx, network, addr)

		t.mu.Lock()
		delete(t.dialing, d)
		if d.closed {
			t.mu.Unlock()
			if conn != nil {
				_ = conn.Close()
			}
			return nil, errClosedWhileDialing
		}
		if err != nil {
			t.mu.Unlock()
			return nil, err
		}
		tc := &trackedConn{Conn: conn, tracker: t}
		if t.conns == nil {
			t.conns = map[*trackedConn]struct{}{}
		}
		t.conns[tc] = struct{}{}
		t.mu.Unlock()
		return tc, nil
	}
}

// idle reports that a connection was dialed (whether it came up or not),
// the last one given to a request spoke HTTP/2 (or none was), and none is
// usable now: none that a request was given is still open. A connection
// still in its TLS handshake is not usable yet.
func (t *connTracker) idle() bool {
	return t.dialed.Load() && !t.http1.Load() && t.usable.Load() <= 0
}

// sharesDials reports that a connection was dialed and the last one given
// to a request speaks HTTP/2 (or none was given yet): requests reach the
// Client's dialer, and share its connections.
func (t *connTracker) sharesDials() bool {
	return t.dialed.Load() && !t.http1.Load()
}

// noteConn notes that a request was given conn: it is usable until it
// fails or is closed. It reports whether conn is usable (a request may be
// given one that failed a moment before, which the HTTP/2 client has not
// put aside yet), and whether it speaks HTTP/1.1.
func noteConn(info httptrace.GotConnInfo) (usable, http1 bool) {
	conn := info.Conn
	if tc, ok := conn.(*tls.Conn); ok {
		http1 = tc.ConnectionState().NegotiatedProtocol != "h2"
	}
	for { // TLS over TLS through an https:// proxy
		tc, ok := conn.(*tls.Conn)
		if !ok {
			break
		}
		conn = tc.NetConn()
	}
	c, ok := conn.(*trackedConn)
	if !ok {
		return true, http1
	}
	c.tracker.http1.Store(http1)
	if c.state.CompareAndSwap(connNew, connUsable) {
		c.tracker.usable.Add(1)
	}
	return c.state.Load() == connUsable, http1
}

// closeAll closes every connection for a rotation of the client
// certificate: a request it cuts off may be sent again (authTransport).
func (t *connTracker) closeAll() {
	t.closes.Add(1)
	t.closeConns()
}

// closeConns closes every connection, and cancels the dials under way:
// a connection one of them comes up with anyway is closed at once.
func (t *connTracker) closeConns() {
	t.mu.Lock()
	conns := t.conns
	t.conns = nil
	for d := range t.dialing {
		d.closed = true
		d.cancel()
	}
	t.mu.Unlock()
	for c := range conns {
		c.setClosed()
		_ = c.Conn.Close()
	}
}

type trackedConn struct {
	net.Conn
	tracker *connTracker
	state   atomic.Int32 // connNew, connUsable or connClosed
}

const (
	connNew    = iota
	connUsable // a request was given it
	connClosed // closed, or failed to read
)

// Read counts a connection that fails to read as closed at once: the
// HTTP/2 client fails the connection's streams before it closes it, and
// the requests sent again in between must find no connection usable.
func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		// Only a deadline's timeout leaves it usable; ETIMEDOUT (a dead
		// peer, from TCP_USER_TIMEOUT or keepalive probes) does not.
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			c.setClosed()
		}
	}
	return n, err
}

func (c *trackedConn) Close() error {
	c.setClosed()
	c.tracker.mu.Lock()
	delete(c.tracker.conns, c)
	c.tracker.mu.Unlock()
	return c.Conn.Close()
}

func (c *trackedConn) setClosed() {
	if c.state.Swap(connClosed) == connUsable {
		c.tracker.usable.Add(-1)
	}
}
