package rest

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func splitHostPort(t *testing.T, rawURL string) (host, port string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Hostname(), u.Port()
}

func newClient(t *testing.T, cfg *Config) *Client {
	t.Helper()
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// getErr sends a GET and returns the error of Do.
func getErr(c *Client, path string) error {
	req, _ := http.NewRequest(http.MethodGet, c.URL(path, nil).String(), nil)
	resp, err := c.Do(req)
	if err == nil {
		resp.Body.Close()
	}
	return err
}

func TestTLSVerification(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	caFile := writeFile(t, filepath.Join(t.TempDir(), "ca.crt"), string(serverCAPEM(srv)))
	otherCA := newTestCA(t, "someone else")

	ok := []struct {
		name string
		tls  TLSConfig
	}{
		{"CA data", TLSConfig{CAData: serverCAPEM(srv)}},
		{"CA file", TLSConfig{CAFile: caFile}},
		{"CA data and file", TLSConfig{CAData: otherCA.certPEM, CAFile: caFile}},
		{"server name override", TLSConfig{CAData: serverCAPEM(srv), ServerName: "example.com"}},
		{"insecure", TLSConfig{Insecure: true}},
	}
	for _, tt := range ok {
		t.Run(tt.name, func(t *testing.T) {
			if err := getErr(newClient(t, &Config{Host: srv.URL, TLS: tt.tls}), "/"); err != nil {
				t.Error(err)
			}
		})
	}

	refused := []struct {
		name string
		tls  TLSConfig
	}{
		{"system roots", TLSConfig{}},
		{"wrong CA", TLSConfig{CAData: otherCA.certPEM}},
		{"wrong server name", TLSConfig{CAData: serverCAPEM(srv), ServerName: "wrong.example"}},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			err := getErr(newClient(t, &Config{Host: srv.URL, TLS: tt.tls}), "/")
			if err == nil || !strings.Contains(err.Error(), "TLS certificate did not verify; check the cluster's CA") {
				t.Errorf("err = %v, want a verification error that says what to check", err)
			}
			if IsRetryable(err) {
				t.Error("a verification error is retryable")
			}
		})
	}
}

func TestTLSConfigErrors(t *testing.T) {
	ca := newTestCA(t, "ca")
	cert, key := ca.issue(t, "alice", true, nil, nil)
	tests := []struct {
		name string
		tls  TLSConfig
		want string
	}{
		{"insecure with CA", TLSConfig{Insecure: true, CAData: ca.certPEM}, "both set"},
		{"CA data not PEM", TLSConfig{CAData: []byte("nope")}, "CAData holds no PEM certificate"},
		{"CA file missing", TLSConfig{CAFile: "/nonexistent/ca.crt"}, "reading CA file"},
		{"cert without key", TLSConfig{CertData: cert}, "without its key"},
		{"key without cert", TLSConfig{KeyData: key}, "without a client certificate"},
		{"mismatched pair", TLSConfig{CertData: cert, KeyData: []byte("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n")}, "client certificate and key"},
		{"cert file missing", TLSConfig{CertFile: "/nonexistent/c.crt", KeyData: key}, "reading client certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewClient(&Config{Host: "https://127.0.0.1:1", TLS: tt.tls})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "AAAA") {
				t.Errorf("error quotes the key: %v", err)
			}
		})
	}
}

func TestStaticClientCertificate(t *testing.T) {
	ca := newTestCA(t, "ca")
	srv := newClientCertServer(t, ca)
	cert, key := ca.issue(t, "alice", true, nil, nil)
	dir := t.TempDir()
	certFile := writeFile(t, filepath.Join(dir, "c.crt"), string(cert))
	keyFile := writeFile(t, filepath.Join(dir, "c.key"), string(key))
	for name, tlsCfg := range map[string]TLSConfig{
		"data":  {CAData: ca.certPEM, CertData: cert, KeyData: key},
		"files": {CAData: ca.certPEM, CertFile: certFile, KeyFile: keyFile},
		"none":  {CAData: ca.certPEM},
	} {
		t.Run(name, func(t *testing.T) {
			want := "alice"
			if name == "none" {
				want = "anonymous"
			}
			if _, body := get(t, newClient(t, &Config{Host: srv.URL, TLS: tlsCfg}), "/"); body != want {
				t.Errorf("server saw %q, want %q", body, want)
			}
		})
	}
}

func TestHTTP2(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()

	for _, disable := range []bool{false, true} {
		c := newClient(t, &Config{Host: srv.URL, TLS: TLSConfig{CAData: serverCAPEM(srv)}, DisableHTTP2: disable})
		req, _ := http.NewRequest(http.MethodGet, c.URL("/", nil).String(), nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		wantMajor := 2
		if disable {
			wantMajor = 1
		}
		if resp.ProtoMajor != wantMajor {
			t.Errorf("DisableHTTP2=%v: response over %s (server saw %s), want HTTP/%d", disable, resp.Proto, body, wantMajor)
		}
	}
}

// DISABLE_HTTP2 in the environment keeps connections on HTTP/1.1, as it
// does client-go's (utilnet.SetTransportDefaults).
func TestDisableHTTP2FromTheEnvironment(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	for env, wantMajor := range map[string]int{"": 2, "1": 1, "false": 1} {
		t.Setenv("DISABLE_HTTP2", env)
		c := newClient(t, &Config{Host: srv.URL, TLS: TLSConfig{CAData: serverCAPEM(srv)}})
		req, _ := http.NewRequest(http.MethodGet, c.URL("/", nil).String(), nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.ProtoMajor != wantMajor {
			t.Errorf("DISABLE_HTTP2=%q: response over %s, want HTTP/%d", env, resp.Proto, wantMajor)
		}
		c.CloseConnections()
	}
}

func TestCredentialsNeedHTTPSOrPermission(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	exec := &ExecConfig{Command: "plugin", APIVersion: ExecAPIVersionV1}
	for name, cfg := range map[string]Config{
		"bearer":     {Host: srv.URL, BearerToken: "t0ken"},
		"token file": {Host: srv.URL, BearerTokenFile: "/nonexistent"},
		"basic":      {Host: srv.URL, Username: "admin", Password: "pw"},
		"exec":       {Host: srv.URL, Exec: exec},
	} {
		_, err := NewClient(&cfg)
		if err == nil || !strings.Contains(err.Error(), "refusing to send credentials in clear text") || !strings.Contains(err.Error(), "AllowBearerOverHTTP") {
			t.Errorf("%s over http: err = %v, want a refusal naming AllowBearerOverHTTP", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "t0ken") {
			t.Errorf("%s: error shows the token: %v", name, err)
		}
	}
	// Anonymous over http is fine, and so are credentials when allowed.
	if _, body := get(t, newClient(t, &Config{Host: srv.URL}), "/"); body != "" {
		t.Errorf("anonymous request sent %q", body)
	}
	c := newClient(t, &Config{Host: srv.URL, BearerToken: "t0ken", AllowBearerOverHTTP: true})
	if _, body := get(t, c, "/"); body != "Bearer t0ken" {
		t.Errorf("Authorization = %q", body)
	}
}

func TestBasicAuth(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, _ := r.BasicAuth()
		fmt.Fprint(w, u+":"+p)
	}))
	defer srv.Close()
	c := newClient(t, &Config{Host: srv.URL, Username: "admin", Password: "pw", TLS: TLSConfig{CAData: serverCAPEM(srv)}})
	if _, body := get(t, c, "/"); body != "admin:pw" {
		t.Errorf("server saw %q", body)
	}
	_, err := NewClient(&Config{Host: srv.URL, BearerToken: "t", Username: "admin"})
	if err == nil || !strings.Contains(err.Error(), "keep one") {
		t.Errorf("bearer and basic: err = %v", err)
	}
}

// A redirect to another server must not carry the credentials along.
func TestCredentialsStayWithTheirServer(t *testing.T) {
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "elsewhere:"+r.Header.Get("Authorization"))
	}))
	defer elsewhere.Close()
	var apiserver *httptest.Server
	apiserver = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, elsewhere.URL+"/", http.StatusFound)
		case "/here":
			http.Redirect(w, r, apiserver.URL+"/final", http.StatusFound)
		default:
			fmt.Fprint(w, "apiserver:"+r.Header.Get("Authorization"))
		}
	}))
	defer apiserver.Close()
	c := newClient(t, &Config{Host: apiserver.URL, BearerToken: "t0ken", AllowBearerOverHTTP: true})
	if _, body := get(t, c, "/away"); body != "elsewhere:" {
		t.Errorf("redirect to another host: %q, want no credentials", body)
	}
	if _, body := get(t, c, "/here"); body != "apiserver:Bearer t0ken" {
		t.Errorf("redirect to the same host: %q, want the credentials", body)
	}
}

func TestTokenFileReadAgainAfter401(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, filepath.Join(dir, "token"), "aaaa")
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	srv := newEchoServer(t, func(auth string) bool { return auth == "Bearer aaaa" })
	c := newClient(t, &Config{Host: srv.URL, BearerTokenFile: path, TLS: TLSConfig{CAData: serverCAPEM(srv)}})

	// Same size, same modification time: only the 401 reveals the change.
	writeFile(t, path, "bbbb")
	if err := os.Chtimes(path, info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, c, "/"); code != http.StatusUnauthorized {
		t.Fatalf("first request: %d, want 401 with the cached token", code)
	}
	if code, body := get(t, c, "/"); code != http.StatusOK || body != "Bearer bbbb" {
		t.Errorf("after a 401: %d %q, want the re-read token", code, body)
	}
	// A token file that disappears keeps the last token in use.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	c.InvalidateCredentials()
	if _, body := get(t, c, "/"); body != "Bearer bbbb" {
		t.Errorf("after the file vanished: %q, want the last token", body)
	}
}

// A token file that cannot be read any more is tried again at every
// request, with the last token in use: it is warned about once per
// failure, not at every request.
func TestTokenFileUnreadableWarnsOnce(t *testing.T) {
	path := writeFile(t, filepath.Join(t.TempDir(), "token"), "aaaa")
	var logs bytes.Buffer
	f := newTokenFile(path, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
	warnings := func() int { return strings.Count(logs.String(), "level=WARN") }
	for range 2 {
		if tok, err := f.get(); err != nil || tok != "aaaa" {
			t.Fatalf("get() = %q, %v", tok, err)
		}
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if tok, err := f.get(); err != nil || tok != "aaaa" {
				t.Fatalf("with the file gone: get() = %q, %v; want the last token", tok, err)
			}
		}
		writeFile(t, path, "aaaa")
	}
	if n := warnings(); n != 2 {
		t.Errorf("%d warnings for two failures of three requests each, want 2:\n%s", n, logs.String())
	}
}

// A token file's warning is logged after its lock is released: a logger
// that is slow (a handler writing to a full pipe) held up every request of
// the Client while the file could not be read. The warning still says why.
func TestTokenFileLogsOutsideItsLock(t *testing.T) {
	path := writeFile(t, filepath.Join(t.TempDir(), "token"), "aaaa")
	h := &blockingHandler{entered: make(chan string, 1), release: make(chan struct{})}
	f := newTokenFile(path, slog.New(h))
	if tok, err := f.get(); err != nil || tok != "aaaa" {
		t.Fatalf("get() = %q, %v", tok, err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	logging := make(chan struct{})
	go func() { defer close(logging); _, _ = f.get() }() // warns, and blocks in the logger
	if msg := <-h.entered; !strings.Contains(msg, "no such file") {
		t.Errorf("the warning says %q, want the read's error", msg)
	}
	got := make(chan string, 1)
	go func() { tok, _ := f.get(); got <- tok }()
	select {
	case tok := <-got:
		if tok != "aaaa" {
			t.Errorf("get() = %q, want the last token", tok)
		}
	case <-time.After(5 * time.Second): // a sync.Mutex: synctest cannot see it
		t.Error("get() waited for another request's logger")
	}
	close(h.release)
	<-logging
}

// blockingHandler sends its first record's text to entered and blocks it
// until release is closed.
type blockingHandler struct {
	entered chan string
	release chan struct{}
	entries atomic.Int32
}

func (h *blockingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *blockingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *blockingHandler) WithGroup(string) slog.Handler            { return h }
func (h *blockingHandler) Handle(_ context.Context, r slog.Record) error {
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
	if h.entries.Add(1) == 1 {
		h.entered <- msg
		<-h.release
	}
	return nil
}

// A token file that comes to name a named pipe is treated as the CA file
// is: the token read before stays in use. It was read under the lock that
// every request takes, and one nobody writes to held every request of the
// Client for ever. One given as a pipe when the Client is made, as a
// shell's process substitution gives one, is read then.
func TestTokenFileThatIsNoLongerARegularFileKeepsTheClientGoing(t *testing.T) {
	srv := newEchoServer(t, nil)
	path := filepath.Join(t.TempDir(), "token")
	mkfifo(t, path)
	go func() {
		if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil { // until the Client opens it
			_, _ = f.WriteString("fr0mpipe\n")
			f.Close()
		}
	}()
	c := newClient(t, &Config{Host: srv.URL, BearerTokenFile: path, TLS: TLSConfig{CAData: serverCAPEM(srv)}})
	for range 2 {
		c.InvalidateCredentials() // read again before the next request
		var body string
		if err := answered(t, path, func() (err error) {
			_, body, err = getBody(c, "/")
			return err
		}); err != nil || body != "Bearer fr0mpipe" {
			t.Errorf("token file a named pipe: %q, %v; want the token read at the start", body, err)
		}
	}
}

func TestTokenFileMissingAtStart(t *testing.T) {
	_, err := NewClient(&Config{Host: "https://127.0.0.1:1", BearerTokenFile: "/nonexistent/token"})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/token") {
		t.Errorf("err = %v, want one naming the file", err)
	}
}

// A value sent in a header that holds a control character (a newline
// pasted with a token) is refused by NewClient, naming the field: no
// request could carry it, and an informer would retry for ever. A token
// file with a newline inside the token is refused when read.
func TestHeaderValuesWithControlCharactersAreRefused(t *testing.T) {
	for field, cfg := range map[string]Config{
		"BearerToken":                 {BearerToken: "abc\ndef"},
		"Username":                    {Username: "a\rb", Password: "p"},
		"Password":                    {Username: "u", Password: "p\n"},
		"UserAgent":                   {UserAgent: "ua\r\nX-Evil: 1"},
		"Impersonate.UserName":        {Impersonate: ImpersonationConfig{UserName: "a\nb"}},
		"Impersonate.UID":             {Impersonate: ImpersonationConfig{UserName: "a", UID: "\x00"}},
		"Impersonate.Groups":          {Impersonate: ImpersonationConfig{UserName: "a", Groups: []string{"ok", "b\x7f"}}},
		`Impersonate.Extra["scopes"]`: {Impersonate: ImpersonationConfig{UserName: "a", Extra: map[string][]string{"scopes": {"x\ny"}}}},
	} {
		cfg.Host = "https://127.0.0.1:1"
		_, err := NewClient(&cfg)
		if err == nil || !strings.Contains(err.Error(), "rest: "+field+" holds a control character") {
			t.Errorf("%s: err = %v, want one naming the field", field, err)
		}
	}
	if _, err := NewClient(&Config{Host: "https://127.0.0.1:1", BearerToken: "tab\tis fine", UserAgent: "ua/1.0 (x)"}); err != nil {
		t.Errorf("a tab and printable characters: %v", err)
	}
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte("abc\ndef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := NewClient(&Config{Host: "https://127.0.0.1:1", BearerTokenFile: path})
	if err == nil || !strings.Contains(err.Error(), "control character") || !strings.Contains(err.Error(), path) {
		t.Errorf("token file: err = %v, want one naming the file and the control character", err)
	}
}

// With BearerToken set too, a token file that cannot be read is no error:
// the static token stands in until the file can be read.
func TestTokenFileMissingWithAStaticToken(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "token")
	srv := newEchoServer(t, nil)
	c := newClient(t, &Config{Host: srv.URL, BearerToken: "static", BearerTokenFile: path, TLS: TLSConfig{CAData: serverCAPEM(srv)}})
	if _, body := get(t, c, "/"); body != "Bearer static" {
		t.Errorf("file missing: %q, want the static token", body)
	}
	writeFile(t, path, "fromfile")
	c.InvalidateCredentials()
	if _, body := get(t, c, "/"); body != "Bearer fromfile" {
		t.Errorf("file written: %q, want the file's token", body)
	}
}

// The first read of a token file is no change of it, even when a
// BearerToken stood in before it; a later change is logged once.
func TestTokenFileChangeIsLoggedOnlyWhenItChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	writeFile(t, path, "fromfile")
	srv := newEchoServer(t, nil)
	var logs bytes.Buffer
	c, err := NewClient(&Config{Host: srv.URL, BearerToken: "static", BearerTokenFile: path, TLS: TLSConfig{CAData: serverCAPEM(srv)}},
		WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	if err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, c, "/"); body != "Bearer fromfile" {
		t.Fatalf("Authorization %q, want the file's token", body)
	}
	if n := strings.Count(logs.String(), "token file changed"); n != 0 {
		t.Errorf("the first read was logged as a change:\n%s", logs.String())
	}
	writeFile(t, path, "rotated")
	c.InvalidateCredentials()
	if _, body := get(t, c, "/"); body != "Bearer rotated" {
		t.Fatalf("Authorization %q, want the rotated token", body)
	}
	if n := strings.Count(logs.String(), "token file changed"); n != 1 {
		t.Errorf("%d changes logged, want 1:\n%s", n, logs.String())
	}
}

func TestUserAgent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Header.Get("User-Agent"))
	}))
	defer srv.Close()
	_, body := get(t, newClient(t, &Config{Host: srv.URL}), "/")
	want := regexp.MustCompile(`^listwatch/\S+ \(` + runtime.GOOS + "/" + runtime.GOARCH + `\)$`)
	if !want.MatchString(body) {
		t.Errorf("User-Agent = %q, want listwatch/<version> (%s/%s)", body, runtime.GOOS, runtime.GOARCH)
	}
	if _, body := get(t, newClient(t, &Config{Host: srv.URL, UserAgent: "mine/1"}), "/"); body != "mine/1" {
		t.Errorf("User-Agent = %q, want the configured one", body)
	}
}

func TestURL(t *testing.T) {
	c := newClient(t, &Config{Host: "https://rancher.example/k8s/clusters/c-1/?ignored=1"})
	got := c.URL("/api/v1/namespaces/default/pods", url.Values{"limit": {"500"}, "watch": {"1"}})
	if want := "https://rancher.example/k8s/clusters/c-1/api/v1/namespaces/default/pods?limit=500&watch=1"; got.String() != want {
		t.Errorf("URL = %s\nwant  %s", got, want)
	}
	if got := newClient(t, &Config{Host: "https://k:6443"}).URL("/api", nil); got.String() != "https://k:6443/api" {
		t.Errorf("URL = %s", got)
	}
	// A prefix with escapes goes as client-go sends it: decoded, then
	// escaped again.
	for host, want := range map[string]string{
		"https://p.example/k8s/clusters/c%2F1": "https://p.example/k8s/clusters/c/1/api",
		"https://p.example/k8s/clusters/c%2B1": "https://p.example/k8s/clusters/c+1/api",
		"https://p.example/k8s/c%201":          "https://p.example/k8s/c%201/api",
	} {
		if got := newClient(t, &Config{Host: host}).URL("/api", nil); got.String() != want {
			t.Errorf("Host %s: URL = %s, want %s", host, got, want)
		}
	}
	// The URL itself is absolute, not only its String: a request made with
	// it asked for "api/v1/pods" (a 400, refused over HTTP/2).
	for _, host := range []string{"https://k:6443", "https://k:6443/", "https://k/a%2Fb"} {
		u := newClient(t, &Config{Host: host}).URL("/api/v1/pods", nil)
		if !strings.HasPrefix(u.Path, "/") || !strings.HasPrefix(u.EscapedPath(), "/") || !strings.HasSuffix(u.Path, "/api/v1/pods") {
			t.Errorf("Host %s: URL path %q (escaped %q)", host, u.Path, u.EscapedPath())
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.URL.Path)
	}))
	defer srv.Close()
	direct := newClient(t, &Config{Host: srv.URL})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.URL = direct.URL("/api/v1/pods", nil)
	resp, err := direct.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if body, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || string(body) != "/api/v1/pods" {
		t.Errorf("a request with the URL: %s %q", resp.Status, body)
	}
}

func TestNewClientErrors(t *testing.T) {
	if _, err := NewClient(nil); err == nil {
		t.Error("nil Config: no error")
	}
	for _, host := range []string{"", "k.example:6443", "ftp://k", "https://", "https://admin:pw@k.example"} {
		_, err := NewClient(&Config{Host: host})
		if err == nil {
			t.Errorf("Host %q: no error", host)
		} else if strings.Contains(err.Error(), ":pw@") {
			t.Errorf("Host %q: error shows the password: %v", host, err)
		}
	}
	if _, err := NewClient(&Config{Host: "https://k", ProxyURL: "ftp://p"}); err == nil || !strings.Contains(err.Error(), "proxy") {
		t.Errorf("bad proxy: err = %v", err)
	}
	if _, err := NewClient(&Config{Host: "https://k", Password: "pw"}); err == nil || !strings.Contains(err.Error(), "without a Username") {
		t.Errorf("a password alone: err = %v", err)
	}
}

func TestProxyURL(t *testing.T) {
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "proxied "+r.URL.String())
	}))
	defer proxy.Close()
	c := newClient(t, &Config{Host: "http://apiserver.invalid:8080", ProxyURL: proxy.URL})
	if _, body := get(t, c, "/api"); body != "proxied http://apiserver.invalid:8080/api" {
		t.Errorf("body = %q, want the request to go through the proxy", body)
	}
}

func TestCheckResponseOverHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "2")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, status429)
	}))
	defer srv.Close()
	c := newClient(t, &Config{Host: srv.URL})
	req, _ := http.NewRequest(http.MethodGet, c.URL("/api/v1/pods", url.Values{"limit": {"1"}}).String(), nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	err = CheckResponse(resp)
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.ErrStatus.Code != 429 || apiErr.RetryAfter != 2*time.Second || !IsRetryable(err) {
		t.Fatalf("err = %#v", err)
	}
	if apiErr.URL != srv.URL+"/api/v1/pods?limit=1" || apiErr.Method != "GET" {
		t.Errorf("URL, Method = %q, %q", apiErr.URL, apiErr.Method)
	}
}

func TestClientFormatShowsNoInternals(t *testing.T) {
	c := newClient(t, &Config{Host: "https://k.example", BearerToken: "t0ken"})
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%d"} {
		if got := fmt.Sprintf(verb, c); got != "rest.Client{Host: https://k.example}" {
			t.Errorf("%s: %s", verb, got)
		}
	}
}

// A gzip bomb: a few KiB on the wire, much more once decompressed. Go's
// transport decompresses transparently; LimitReader bounds what comes out.
func TestLimitReaderBoundsDecompressedBody(t *testing.T) {
	var compressed bytes.Buffer
	zw := gzip.NewWriter(&compressed)
	if _, err := zw.Write(bytes.Repeat([]byte("a"), 2<<20)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") != "gzip" {
			t.Errorf("Accept-Encoding = %q, want gzip added by the transport", r.Header.Get("Accept-Encoding"))
		}
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(compressed.Bytes())
	}))
	defer srv.Close()

	c, err := NewClient(&Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, c.URL("/api/v1/pods", nil).String(), nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if !resp.Uncompressed {
		t.Error("the transport did not decompress the body")
	}
	n, err := io.Copy(io.Discard, LimitReader(resp.Body, 64<<10))
	if !errors.Is(err, ErrBodyTooLarge) || n != 64<<10 {
		t.Errorf("read %d bytes, err %v; want %d bytes and ErrBodyTooLarge", n, err, 64<<10)
	}
}

// streamHandler answers /stream with one byte, then holds the stream open
// until the request ends or released is closed; any other path with "ok".
func streamHandler(released <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stream" {
			fmt.Fprint(w, "x")
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-released:
			}
			return
		}
		fmt.Fprint(w, "ok")
	})
}

// CloseConnections closes every connection, the idle ones and those that
// carry a stream, over HTTP/2 and HTTP/1.1; the client stays usable.
func TestCloseConnections(t *testing.T) {
	for _, disableHTTP2 := range []bool{false, true} {
		t.Run(fmt.Sprint("DisableHTTP2=", disableHTTP2), func(t *testing.T) {
			released := make(chan struct{})
			srv := httptest.NewUnstartedServer(streamHandler(released))
			var open atomic.Int32
			allClosed := make(chan struct{}, 1)
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				switch s {
				case http.StateNew:
					open.Add(1)
				case http.StateClosed, http.StateHijacked:
					if open.Add(-1) == 0 {
						select {
						case allClosed <- struct{}{}:
						default:
						}
					}
				}
			}
			srv.EnableHTTP2 = true
			srv.StartTLS()
			defer srv.Close()
			defer close(released)
			c := newClient(t, &Config{Host: srv.URL, TLS: TLSConfig{CAData: serverCAPEM(srv)}, DisableHTTP2: disableHTTP2})

			stream, err := c.Do(mustRequest(t, c.URL("/stream", nil).String()))
			if err != nil {
				t.Fatal(err)
			}
			defer stream.Body.Close()
			if _, err := io.ReadFull(stream.Body, make([]byte, 1)); err != nil {
				t.Fatal(err)
			}
			get(t, c, "/") // an idle connection after it, on HTTP/1.1
			c.CloseConnections()
			select {
			case <-allClosed:
			case <-time.After(30 * time.Second): // a deadline, not a wait
				t.Fatalf("%d connections still open on the server after CloseConnections", open.Load())
			}
			if _, err := io.ReadAll(stream.Body); err == nil {
				t.Error("the stream ended cleanly: want an error")
			}
			get(t, c, "/") // still usable
		})
	}
}

// A request sent right after CloseConnections succeeds, over HTTP/2 too,
// where the pool may still hand out the connection of a stream it has not
// yet seen closed ("use of closed network connection"): it is sent once
// more, on a new connection.
func TestRequestRightAfterCloseConnections(t *testing.T) {
	released := make(chan struct{})
	defer close(released)
	srv := httptest.NewUnstartedServer(streamHandler(released))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	c := newClient(t, &Config{Host: srv.URL, TLS: TLSConfig{CAData: serverCAPEM(srv)}})
	failed := 0
	const rounds = 50
	for range rounds {
		stream, err := c.Do(mustRequest(t, c.URL("/stream", nil).String()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(stream.Body, make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		c.CloseConnections()
		if err := getErr(c, "/"); err != nil {
			failed++
			if failed == 1 {
				t.Logf("first failure: %v", err)
			}
		}
		stream.Body.Close()
	}
	if failed > 0 {
		t.Errorf("%d of %d requests sent right after CloseConnections failed", failed, rounds)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The response's Request is the request as the caller made it, not the
// copy that carried the credentials: a wrapper, or a caller, that dumps
// resp.Request must not show the token.
func TestResponseRequestCarriesNoCredentials(t *testing.T) {
	srv := newEchoServer(t, nil)
	var seen string
	c, err := NewClient(&Config{Host: srv.URL, BearerToken: "secret-token", TLS: TLSConfig{CAData: serverCAPEM(srv)}},
		WithWrapTransport(func(next http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				resp, err := next.RoundTrip(r)
				if resp != nil {
					seen = resp.Request.Header.Get("Authorization")
				}
				return resp, err
			})
		}))
	if err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, c, "/api"); body != "Bearer secret-token" {
		t.Fatalf("the server got Authorization %q", body)
	}
	if seen != "" {
		t.Errorf("resp.Request carries Authorization %q", seen)
	}
}

// Impersonate-* headers go to the apiserver only (like credentials: a
// redirect to another host gets none), and a caller's own impersonation
// headers are left as they are.
func TestImpersonationHeaders(t *testing.T) {
	show := func(r *http.Request) string {
		return fmt.Sprintf("%q %q %q", r.Header.Values("Impersonate-User"), r.Header.Values("Impersonate-Group"), r.Header.Values("Impersonate-Extra-A%2fb"))
	}
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "elsewhere:"+show(r))
	}))
	defer elsewhere.Close()
	apiserver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/away" {
			http.Redirect(w, r, elsewhere.URL+"/", http.StatusFound)
			return
		}
		fmt.Fprint(w, show(r))
	}))
	defer apiserver.Close()
	c := newClient(t, &Config{Host: apiserver.URL, Impersonate: ImpersonationConfig{
		UserName: "alice", Groups: []string{"g1", "g2"}, Extra: map[string][]string{"a/b": {"x"}},
	}})
	if _, body := get(t, c, "/"); body != `["alice"] ["g1" "g2"] ["x"]` {
		t.Errorf("apiserver got %s", body)
	}
	if _, body := get(t, c, "/away"); body != `elsewhere:[] [] []` {
		t.Errorf("redirect to another host got %s, want no impersonation", body)
	}
	req, _ := http.NewRequest(http.MethodGet, c.URL("/", nil).String(), nil)
	req.Header.Set("Impersonate-User", "bob")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != `["bob"] [] []` {
		t.Errorf("caller's own Impersonate-User: server got %s", body)
	}
	if _, err := NewClient(&Config{Host: apiserver.URL, Impersonate: ImpersonationConfig{Groups: []string{"g"}}}); err == nil {
		t.Error("Groups without UserName: no error")
	}
}

// roundTripRecorder records the requests it is given.
type roundTripRecorder struct{ reqs []*http.Request }

func (r *roundTripRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.reqs = append(r.reqs, req)
	return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
}

// Credentials go to the configured server only: not to the same host
// reached over plain HTTP (a redirect from https://h to http://h, whose
// Host is the same when neither names a port), where the token would
// travel in clear.
func TestCredentialsNotSentOverAnotherScheme(t *testing.T) {
	rec := &roundTripRecorder{}
	origin, _ := url.Parse("https://apiserver.example")
	tr := &authTransport{next: rec, origin: origin, userAgent: "test", bearer: "tok-123"}
	for _, u := range []string{"https://apiserver.example/api", "http://apiserver.example/api"} {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		if _, err := tr.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
	}
	if got := rec.reqs[0].Header.Get("Authorization"); got != "Bearer tok-123" {
		t.Fatalf("https request: Authorization %q", got)
	}
	if got := rec.reqs[1].Header.Get("Authorization"); got != "" {
		t.Fatalf("http request to the same host got Authorization %q", got)
	}
}

// CloseConnections reaches the dials under way: one that heeds its context
// is cancelled, and a connection that comes up anyway after it is closed
// at once, never handed to the HTTP client's pool (which dials on a
// context of its own, outliving the request: a Factory shut down would
// have left a connection open behind it). The error wraps net.ErrClosed,
// so a request whose context is alive is sent once more.
func TestCloseConnectionsReachesDialsUnderWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tracker := &connTracker{}
		started := make(chan struct{}, 2)
		finish := make(chan struct{})
		var late net.Conn // the connection the stubborn dial comes up with
		stubborn := tracker.wrap(func(context.Context, string, string) (net.Conn, error) {
			started <- struct{}{}
			<-finish // ignores its context
			a, b := net.Pipe()
			late = b
			return a, nil
		})
		heeding := tracker.wrap(func(ctx context.Context, _, _ string) (net.Conn, error) {
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		})
		type result struct {
			conn net.Conn
			err  error
		}
		stubbornDone, heedingDone := make(chan result, 1), make(chan result, 1)
		go func() { c, err := stubborn(t.Context(), "tcp", "x:1"); stubbornDone <- result{c, err} }()
		go func() { c, err := heeding(t.Context(), "tcp", "x:1"); heedingDone <- result{c, err} }()
		<-started
		<-started

		tracker.closeConns()
		r := <-heedingDone // without the cancel, it waits for ever: synctest fails the test
		if !errors.Is(r.err, net.ErrClosed) {
			t.Errorf("the dial that heeds its context: %v, want an error wrapping net.ErrClosed", r.err)
		}
		close(finish)
		r = <-stubbornDone
		if r.conn != nil || !errors.Is(r.err, net.ErrClosed) {
			t.Fatalf("the dial that came up after CloseConnections: conn %v, %v; want no connection and net.ErrClosed", r.conn, r.err)
		}
		if _, err := late.Read(make([]byte, 1)); err == nil {
			t.Error("the connection that came up after CloseConnections is still open")
		}
		if n := len(tracker.conns); n != 0 {
			t.Errorf("%d connections tracked after CloseConnections", n)
		}

		// The tracker goes on: a dial after it is tracked as usual.
		ok := tracker.wrap(func(context.Context, string, string) (net.Conn, error) { a, _ := net.Pipe(); return a, nil })
		if c, err := ok(t.Context(), "tcp", "x:1"); err != nil || c == nil {
			t.Fatalf("a dial after CloseConnections: %v", err)
		}
	})
}
