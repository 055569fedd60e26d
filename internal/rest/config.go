package rest

import (
	"os"
	"time"
)

// Defaults applied by NewClient to the zero values of Config's timeouts.
const (
	// DefaultHTTP2ReadIdleTimeout is how long an HTTP/2 connection may go
	// without receiving a frame before a PING is sent.
	DefaultHTTP2ReadIdleTimeout = 5 * time.Second
	// DefaultHTTP2PingTimeout is how long the PING may go unanswered before
	// the connection is closed and its requests fail.
	DefaultHTTP2PingTimeout = 5 * time.Second
	// DefaultDialTimeout bounds establishing a TCP connection.
	DefaultDialTimeout = 10 * time.Second
	// DefaultDialKeepAlive is the idle time before the first TCP keepalive
	// probe and the interval between probes.
	DefaultDialKeepAlive = 5 * time.Second
	// DefaultTCPUserTimeout is how long sent data may stay unacknowledged
	// (and, on Linux, keepalive probes unanswered) before the kernel drops
	// the connection.
	DefaultTCPUserTimeout = 10 * time.Second
)

// Config says how to reach one apiserver and who to be there. Get one from
// LoadKubeconfig or InClusterConfig, or fill one in; NewClient checks it.
//
// The zero value of every field means "not set" or "the default"; a Config
// with only Host set talks to that host anonymously. A Config is plain data:
// copying it is fine, and it is safe for concurrent use as long as nobody
// writes to it. Formatting a Config with fmt, logging it with log/slog or
// marshalling it to JSON never shows a credential.
type Config struct {
	// Host is the apiserver's URL: "https://host:port", possibly with a
	// path prefix ("https://rancher.example/k8s/clusters/c-x"). Required.
	Host string
	// Namespace is the namespace of the kubeconfig context or of the pod's
	// service account, "default" when neither names one. Informational: the
	// client does not use it.
	Namespace string

	// BearerToken is sent as "Authorization: Bearer <token>".
	BearerToken string
	// BearerTokenFile is a file holding the bearer token. It is read again
	// when it changes (its modification time or size, checked before each
	// request), at least once a minute, and after a 401, so rotated tokens
	// (projected service account tokens) are picked up. When both are set,
	// BearerTokenFile wins.
	BearerTokenFile string
	// Username and Password are sent with HTTP basic authentication. A
	// Password without a Username is an error (NewClient); a kubeconfig's
	// user with one is read as kubectl reads it, as no basic auth.
	Username, Password string

	// TLS configures server verification and the client certificate.
	TLS TLSConfig
	// Exec runs a credential plugin for a token or client certificate. It is
	// ignored when BearerToken, BearerTokenFile, Username or a client
	// certificate is set, as kubectl does.
	Exec *ExecConfig
	// Impersonate, when its UserName, UID, Groups or Extra is set, makes
	// every request act as that user (Impersonate-* headers), as the as,
	// as-uid, as-groups and as-user-extra fields of a kubeconfig user do.
	Impersonate ImpersonationConfig
	// AllowBearerOverHTTP lets NewClient accept credentials (bearer token,
	// basic auth, exec plugin) with an "http://" Host. Without it that is an
	// error: the credentials would cross the network in clear text.
	AllowBearerOverHTTP bool

	// ProxyURL is the proxy to use ("http://", "https://" or "socks5://").
	// Empty: HTTPS_PROXY, HTTP_PROXY and NO_PROXY from the environment.
	ProxyURL string
	// DisableCompression stops asking for gzip-compressed responses.
	DisableCompression bool
	// UserAgent replaces "listwatch/<version> (<goos>/<goarch>)".
	UserAgent string

	// Timeout bounds a whole short request, body included: a LIST page
	// (with reflector.WithListTimeout, whichever is shorter), a request for
	// the server version. Watches are not bounded by it. Zero: no bound
	// but the request's context (and WithListTimeout).
	Timeout time.Duration
	// DisableHTTP2 keeps every connection on HTTP/1.1. The environment
	// variable DISABLE_HTTP2, set to anything but "", does so too, as it
	// does for client-go (a way around proxies that break HTTP/2).
	DisableHTTP2 bool
	// HTTP2ReadIdleTimeout: after this long without a frame, an HTTP/2
	// connection is checked with a PING. Zero: DefaultHTTP2ReadIdleTimeout.
	// Negative: no checks. Less than MinHTTP2PingInterval is raised to it:
	// each answer to a PING is a frame, and a shorter idle time would send
	// the next PING at once, for ever.
	HTTP2ReadIdleTimeout time.Duration
	// HTTP2PingTimeout: a PING unanswered for this long closes the
	// connection. Zero: DefaultHTTP2PingTimeout; negative: Go's own default
	// (15 s). Less than MinHTTP2PingInterval is raised to it.
	HTTP2PingTimeout time.Duration
	// DialTimeout bounds a TCP connect. Zero: DefaultDialTimeout.
	DialTimeout time.Duration
	// DialKeepAlive is the TCP keepalive idle time and probe interval.
	// Zero: DefaultDialKeepAlive. Negative: no keepalive. Linux takes at
	// most 32767 s; a longer one is lowered to that.
	DialKeepAlive time.Duration
	// TCPUserTimeout sets TCP_USER_TIMEOUT on Linux (ignored elsewhere):
	// unacknowledged data or keepalive probes for this long close the
	// connection, which catches a half-open HTTP/1.1 connection. Zero:
	// DefaultTCPUserTimeout. Negative: the kernel's default. It is set in
	// whole milliseconds, rounded up, and at most 2^31-1 of them (24.8
	// days), the most the kernel takes.
	TCPUserTimeout time.Duration
}

// TLSConfig is the TLS part of a Config. The zero value verifies the server
// against the system's roots and sends no client certificate. Like Config,
// it never shows KeyData when formatted or logged.
type TLSConfig struct {
	// CAData (PEM) or CAFile are the roots that the server's certificate
	// must chain to, replacing the system's. Both may be set. CAFile is
	// looked at before each request and read again when it changed (a
	// cluster's CA rotation adds the new CA to it before the apiservers
	// present certificates it signed): connections made from then on
	// verify the server against its new contents, and those made before
	// stay open. A file that no longer loads (removed, empty, caught
	// mid-write) leaves the certificates read before in use.
	CAData []byte
	CAFile string
	// CertData (PEM) or CertFile, with KeyData or KeyFile, are the client
	// certificate and its private key. When both are files, they are looked
	// at before each request and read again when they changed (the kubelet
	// rotates its client certificate so), and the connections made with
	// the old pair are closed.
	CertData []byte
	CertFile string
	KeyData  []byte
	KeyFile  string
	// ServerName is the name the server's certificate must carry, when it
	// differs from Host's (also sent as SNI).
	ServerName string
	// Insecure skips verifying the server's certificate. Then CAData and
	// CAFile must be empty.
	Insecure bool
}

// ImpersonationConfig is the identity to act as: the apiserver checks that
// the authenticated user may impersonate it.
type ImpersonationConfig struct {
	// UserName is sent as Impersonate-User.
	UserName string
	// UID is sent as Impersonate-Uid.
	UID string
	// Groups are sent as Impersonate-Group, one header each.
	Groups []string
	// Extra is sent as Impersonate-Extra-<key> headers, the key
	// percent-encoded where it is not a header name's character.
	Extra map[string][]string
}

func (i *ImpersonationConfig) isSet() bool {
	return i.UserName != "" || i.UID != "" || len(i.Groups) > 0 || len(i.Extra) > 0
}

// withDefaults returns c with the zero timeouts replaced by the defaults and
// the disabled (negative) ones set to zero.
func (c Config) withDefaults() Config {
	c.HTTP2ReadIdleTimeout = atLeast(orDefault(c.HTTP2ReadIdleTimeout, DefaultHTTP2ReadIdleTimeout), MinHTTP2PingInterval)
	c.HTTP2PingTimeout = atLeast(orDefault(c.HTTP2PingTimeout, DefaultHTTP2PingTimeout), MinHTTP2PingInterval)
	c.DialTimeout = orDefault(c.DialTimeout, DefaultDialTimeout)
	c.DialKeepAlive = min(orDefault(c.DialKeepAlive, DefaultDialKeepAlive), maxKeepAlive)
	c.TCPUserTimeout = orDefault(c.TCPUserTimeout, DefaultTCPUserTimeout)
	c.DisableHTTP2 = c.DisableHTTP2 || os.Getenv("DISABLE_HTTP2") != ""
	return c
}

// MinHTTP2PingInterval is the least HTTP2ReadIdleTimeout and
// HTTP2PingTimeout taken.
const MinHTTP2PingInterval = time.Second

// maxKeepAlive is the longest keepalive idle time and interval Linux takes
// (TCP_KEEPIDLE and TCP_KEEPINTVL, in seconds, at most 32767); Go drops the
// error of a longer one, which leaves the kernel's two hours.
const maxKeepAlive = 32767 * time.Second

// atLeast raises a positive d to floor; zero (off) stays.
func atLeast(d, floor time.Duration) time.Duration {
	if d > 0 {
		return max(d, floor)
	}
	return d
}

func orDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

func (t *TLSConfig) hasClientCert() bool {
	return len(t.CertData) > 0 || t.CertFile != "" || len(t.KeyData) > 0 || t.KeyFile != ""
}
