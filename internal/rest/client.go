package rest

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
)

// modulePath is this module's path, used to find its version for the
// User-Agent.
const modulePath = "github.com/listwatch/listwatch"

// Client sends requests to one apiserver with the credentials, TLS settings
// and timeouts of a Config. Build one with NewClient; the zero value is not
// usable. A Client is safe for concurrent use and meant to be shared: its
// connections are pooled and HTTP/2 multiplexes them.
type Client struct {
	base    *url.URL
	http    *http.Client
	auth    *authTransport
	conns   idleCloser   // the *http.Transport, or the caFileTransport over it
	tracker *connTracker // every connection the transports opened
	first   *firstGate   // the first request goes alone
}

// Option configures NewClient.
type Option func(*clientOptions)

type clientOptions struct {
	logger *slog.Logger
	wrap   func(http.RoundTripper) http.RoundTripper
}

// WithLogger sets where the client reports what it does on its own: token
// file re-reads, exec plugin runs, certificate rotations. The default, like
// a nil logger, discards everything. Credentials are never logged.
func WithLogger(l *slog.Logger) Option {
	return func(o *clientOptions) { o.logger = l }
}

// WithWrapTransport wraps the client's whole round-tripper chain, for
// metrics, tracing or tests. The wrapper sees requests before credentials
// are added.
func WithWrapTransport(wrap func(http.RoundTripper) http.RoundTripper) Option {
	return func(o *clientOptions) { o.wrap = wrap }
}

// NewClient checks cfg and builds a Client. It fails, with an error saying
// what to change, when Host is not an http(s) URL, when credentials would
// be sent over plain http without AllowBearerOverHTTP, when both a bearer
// token and basic auth are set, when a Password is set without a Username,
// when a CA, certificate or key does not load, or when the exec plugin is
// misconfigured. cfg is copied: later changes to it do not affect the
// Client.
//
// The credentials used are, in order: BearerTokenFile (with BearerToken,
// if set too, used while the file cannot be read), BearerToken,
// Username/Password, then Exec (only when none of those nor a static client
// certificate is set). A static client certificate combines with any of
// them.
func NewClient(cfg *Config, opts ...Option) (*Client, error) {
	if cfg == nil {
		return nil, errors.New("rest: nil Config")
	}
	var o clientOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	c := cfg.withDefaults()

	base, err := url.Parse(c.Host)
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return nil, fmt.Errorf("rest: Host %q is not an http:// or https:// URL", redactURL(c.Host))
	}
	if base.User != nil {
		return nil, fmt.Errorf("rest: Host %q carries user info; set Username and Password instead", withoutUserInfo(base))
	}
	// As client-go's REST client: no query or fragment, and the path
	// prefix (a proxy's, such as /k8s/clusters/c-1) sent as it decodes,
	// escaped again (c%2F1 is sent as c/1).
	base.RawQuery, base.Fragment, base.RawPath = "", "", ""

	if err := checkHeaderValues(&c); err != nil {
		return nil, err
	}
	hasBearer := c.BearerToken != "" || c.BearerTokenFile != ""
	if c.Password != "" && c.Username == "" {
		return nil, errors.New("rest: a Password is set without a Username; basic auth needs both (client-go sends no basic auth then)")
	}
	hasBasic := c.Username != ""
	if hasBearer && hasBasic {
		return nil, errors.New("rest: both a bearer token and basic auth (username/password) are set; keep one")
	}
	useExec := c.Exec != nil && !hasBearer && !hasBasic && !c.TLS.hasClientCert()
	if base.Scheme == "http" && (hasBearer || hasBasic || useExec) && !c.AllowBearerOverHTTP {
		return nil, fmt.Errorf("rest: refusing to send credentials in clear text to %s; use https, or set AllowBearerOverHTTP if the network is trusted", base.Redacted())
	}

	auth := &authTransport{origin: base, userAgent: c.UserAgent}
	if c.Impersonate.isSet() && c.Impersonate.UserName == "" {
		return nil, errors.New("rest: Impersonate has UID, Groups or Extra without a UserName; the apiserver refuses that")
	}
	if c.Impersonate.isSet() {
		auth.impersonate = impersonationHeaders(&c.Impersonate)
	}
	if auth.userAgent == "" {
		auth.userAgent = defaultUserAgent()
	}
	var (
		caFile *caFileTransport
		roots  *x509.CertPool
	)
	// Read once, here, before the exec plugin is given its contents: a
	// pipe (process substitution) has nothing left for a second read.
	if c.TLS.CAFile != "" && !c.TLS.Insecure { // both set: newTLSConfig says so
		if caFile, roots, err = newCAFileTransport(&c.TLS, o.logger); err != nil {
			return nil, fmt.Errorf("rest: %w", err)
		}
	}
	switch {
	case c.BearerTokenFile != "":
		auth.tokenFile = newTokenFile(c.BearerTokenFile, o.logger)
		// BearerToken, if set too, stands in while the file cannot be
		// read, as client-go's does.
		auth.tokenFile.token = c.BearerToken
		if _, err := auth.tokenFile.get(); err != nil {
			return nil, fmt.Errorf("rest: %w", err)
		}
	case c.BearerToken != "":
		auth.bearer = c.BearerToken
	case hasBasic:
		auth.basic, auth.username, auth.password = true, c.Username, c.Password
	case useExec:
		ex := *c.Exec // copied with its slices: cfg is the caller's
		ex.Args, ex.Env = slices.Clone(ex.Args), slices.Clone(ex.Env)
		auth.exec, err = newExecPlugin(ex, execCluster{
			Server:                   c.Host,
			TLSServerName:            c.TLS.ServerName,
			InsecureSkipTLSVerify:    c.TLS.Insecure,
			CertificateAuthorityData: caBundle(&c.TLS, caFile),
			ProxyURL:                 c.ProxyURL,
			DisableCompression:       c.DisableCompression,
			Config:                   ex.ClusterConfig,
		})
		if err != nil {
			return nil, fmt.Errorf("rest: %w", err)
		}
		auth.exec.log = o.logger
	}

	if c.TLS.CertFile != "" && c.TLS.KeyFile != "" && len(c.TLS.CertData) == 0 && len(c.TLS.KeyData) == 0 {
		// Both in files, which may be replaced: read again when they
		// change (as client-go does only in this case too).
		if auth.certFiles, err = newCertFiles(&c.TLS, o.logger); err != nil {
			return nil, fmt.Errorf("rest: %w", err)
		}
	}
	tlsConfig, err := newTLSConfig(&c.TLS, roots, auth.exec, auth.certFiles)
	if err != nil {
		return nil, fmt.Errorf("rest: %w", err)
	}
	tracker := &connTracker{}
	if auth.exec != nil || auth.certFiles != nil {
		auth.tracker = tracker // a rotation may cut requests off: they are sent again
	}
	log := o.logger
	if auth.exec != nil {
		auth.exec.onCertRotation = func() {
			log.Info("exec plugin returned a new client certificate; closing connections that used the old one")
			tracker.closeAll()
		}
	}
	if auth.certFiles != nil {
		auth.certFiles.onRotation = func() {
			log.Info("client certificate files changed; closing connections that used the old pair", "cert", c.TLS.CertFile)
			tracker.closeAll()
		}
	}
	transport, err := newTransport(&c, tlsConfig, tracker)
	if err != nil {
		return nil, fmt.Errorf("rest: %w", err)
	}
	auth.next = transport
	var conns idleCloser = transport
	if caFile != nil {
		// The CA file is read again when it changes: a new transport
		// with the new roots takes this one's place.
		caFile.use(transport)
		auth.next, conns = caFile, caFile
	}
	var rt http.RoundTripper = auth
	if o.wrap != nil {
		rt = o.wrap(rt)
	}
	var first *firstGate
	if base.Scheme == "https" && !c.DisableHTTP2 {
		first = newFirstGate(tracker.idle, tracker.sharesDials) // HTTP/2: one connection to share
	}
	return &Client{
		base:    base,
		http:    &http.Client{Transport: rt},
		auth:    auth,
		conns:   conns,
		tracker: tracker,
		first:   first,
	}, nil
}

// idleCloser closes a transport's idle connections.
type idleCloser interface{ CloseIdleConnections() }

// caBundle returns the CA certificates handed to an exec plugin that asks
// for cluster information: CAData, else the CA file's contents as caFile
// read them (nil when there is none: the file is not read twice, which a
// pipe would not survive).
func caBundle(t *TLSConfig, caFile *caFileTransport) []byte {
	if len(t.CAData) > 0 || caFile == nil {
		return t.CAData
	}
	return caFile.loaded
}

// URL returns the URL of path on the apiserver, below Host's own path
// prefix if it has one, with query encoded.
func (c *Client) URL(path string, query url.Values) *url.URL {
	u := c.base.JoinPath(path)
	if !strings.HasPrefix(u.Path, "/") {
		// JoinPath gives a Host without a path ("https://k:6443") a
		// relative one, "api/v1/pods": String mends it, but a request
		// made with u itself would ask for "api/v1/pods" (a 400, and
		// refused over HTTP/2).
		u.Path = "/" + u.Path
		if u.RawPath != "" {
			u.RawPath = "/" + u.RawPath
		}
	}
	u.RawQuery = query.Encode()
	return u
}

// Do sends req and returns the response whatever its status: pass it to
// CheckResponse. Only req's context bounds the request, which suits long
// requests such as WATCH; a dead connection still fails it through the
// HTTP/2 PING check or the TCP timeouts. The caller closes the body.
func (c *Client) Do(req *http.Request) (*http.Response, error) {
	round, first, err := c.first.enter(req.Context())
	if err != nil {
		return nil, err
	}
	if first {
		defer round.done() // even if the transport panics
	}
	seeker, err := c.first.seek(req.Context(), first)
	if err != nil {
		return nil, err
	}
	answered := false
	defer func() { seeker.finish(answered) }() // even if the transport panics
	req = traced(req, round, first, seeker)
	resp, err := c.http.Do(req)
	answered = err == nil
	if err != nil {
		if first {
			c.first.abandon(round)
		}
		if isTLSVerifyError(err) {
			return nil, fmt.Errorf("the apiserver's TLS certificate did not verify; check the cluster's CA (certificate-authority, TLS.CAData or TLS.CAFile) and server name (tls-server-name, TLS.ServerName): %w", err)
		}
		return nil, err
	}
	return resp, nil
}

// InvalidateCredentials drops cached credentials: the next request runs the
// exec plugin again (or waits for the run under way, whose failure is then
// not held) or re-reads the token file. The client already does this by
// itself when the apiserver answers 401. It also ends the hold of a failing
// plugin's error (1 s, doubling up to 16 s while it keeps failing), which
// otherwise delays by as much the first request to notice a login renewed.
func (c *Client) InvalidateCredentials() {
	c.auth.invalidate()
}

// CloseIdleConnections closes the connections that carry no request. Those
// made before the CA file last changed close by themselves once idle for
// 90 s.
func (c *Client) CloseIdleConnections() {
	c.conns.CloseIdleConnections()
}

// CloseConnections closes every connection, idle or carrying a request:
// answers being read fail. It also ends a run of the exec plugin under
// way, and waits for it: requests waiting for its credential fail. The
// owner of a Client calls it when done with it, and then nothing the
// Client started is left running; the Client stays usable, and a later
// request opens a new connection (RoundTrip sends one that got a closed
// connection once more) and runs the plugin again if it needs to.
func (c *Client) CloseConnections() {
	if c.auth.exec != nil {
		c.auth.exec.stop()
	}
	c.tracker.closeConns()
	c.conns.CloseIdleConnections()
}

// String names the apiserver the client talks to.
func (c *Client) String() string {
	return "rest.Client{Host: " + c.base.Redacted() + "}"
}

// Format implements fmt.Formatter, so that even %#v, which would otherwise
// print the client's internals, shows String only.
func (c *Client) Format(s fmt.State, _ rune) {
	_, _ = io.WriteString(s, c.String())
}

// defaultUserAgent is "listwatch/<version> (<goos>/<goarch>)", the version
// being this module's as built into the binary, or "devel".
func defaultUserAgent() string {
	version := "devel"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path == modulePath {
			version = bi.Main.Version
		}
		for _, dep := range bi.Deps {
			if dep.Path == modulePath {
				version = dep.Version
			}
		}
	}
	if version == "" || version == "(devel)" {
		version = "devel"
	}
	return fmt.Sprintf("listwatch/%s (%s/%s)", version, runtime.GOOS, runtime.GOARCH)
}

// checkHeaderValues refuses a Config whose values sent in headers hold a
// control character (a newline pasted with a token, say): no request could
// be sent with it, and an informer would retry for ever.
func checkHeaderValues(c *Config) error {
	fields := []struct{ field, value string }{
		{"BearerToken", c.BearerToken}, {"Username", c.Username}, {"Password", c.Password},
		{"UserAgent", c.UserAgent}, {"Impersonate.UserName", c.Impersonate.UserName}, {"Impersonate.UID", c.Impersonate.UID},
	}
	for _, g := range c.Impersonate.Groups {
		fields = append(fields, struct{ field, value string }{"Impersonate.Groups", g})
	}
	for k, vs := range c.Impersonate.Extra {
		for _, v := range vs {
			fields = append(fields, struct{ field, value string }{"Impersonate.Extra[" + strconv.Quote(k) + "]", v})
		}
	}
	for _, f := range fields {
		if err := checkHeaderValue(f.value); err != nil {
			return fmt.Errorf("rest: %s %w", f.field, err)
		}
	}
	return nil
}

// checkHeaderValue refuses a value no HTTP header may carry.
func checkHeaderValue(v string) error {
	if strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
		return errors.New("holds a control character (a newline?): it cannot be sent in an HTTP header")
	}
	return nil
}
