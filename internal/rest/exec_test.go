package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// newEchoServer starts a TLS server that answers with the request's
// Authorization header, and 401 when refuse says so.
func newEchoServer(t *testing.T, refuse func(auth string) bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		if refuse != nil && refuse(auth) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, status401)
			return
		}
		_, _ = io.WriteString(w, auth)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// get sends a GET of path and returns the status code and body.
func get(t *testing.T, c *Client, path string) (int, string) {
	t.Helper()
	code, body, err := getBody(c, path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return code, body
}

// getBody is get for a goroutine other than the test's: it returns the
// error rather than failing the test.
func getBody(c *Client, path string) (int, string, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, c.URL(path, nil).String(), nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", fmt.Errorf("reading body: %w", err)
	}
	return resp.StatusCode, string(body), nil
}

func newExecClient(t *testing.T, srv *httptest.Server, exec *ExecConfig) *Client {
	t.Helper()
	c, err := NewClient(&Config{Host: srv.URL, TLS: TLSConfig{CAData: serverCAPEM(srv)}, Exec: exec})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestExecPluginToken(t *testing.T) {
	for _, version := range []string{ExecAPIVersionV1, ExecAPIVersionV1beta1} {
		t.Run(version, func(t *testing.T) {
			srv := newEchoServer(t, nil)
			count := filepath.Join(t.TempDir(), "count")
			c := newExecClient(t, srv, testPlugin(t, version, map[string]string{
				"LW_PLUGIN_TOKEN": "tok", "LW_PLUGIN_COUNT_FILE": count,
			}))
			for range 3 {
				if _, body := get(t, c, "/api"); body != "Bearer tok-1" {
					t.Fatalf("Authorization = %q, want the plugin's token", body)
				}
			}
			if n := countLines(t, count); n != 1 {
				t.Errorf("the plugin ran %d times, want 1: a token without expiry is cached", n)
			}
		})
	}
}

// A logger that ends the goroutine of a plugin run (runtime.Goexit) as it
// logs the run's result does not leave the requests waiting for that run
// hanging: they waited until their own context ended, though the plugin
// had returned a token.
func TestExecPluginRunWhoseLoggerEndsItsGoroutine(t *testing.T) {
	srv := newEchoServer(t, nil)
	c, err := NewClient(&Config{Host: srv.URL, TLS: TLSConfig{CAData: serverCAPEM(srv)},
		Exec: testPlugin(t, ExecAPIVersionV1, map[string]string{"LW_PLUGIN_TOKEN": "tok"})},
		WithLogger(slog.New(goexitOn{on: "exec plugin returned credentials"})))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL("/api", nil).String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET: %v (the plugin returned a token)", err)
	}
	resp.Body.Close()
}

// goexitOn is a slog.Handler that ends its caller's goroutine with
// runtime.Goexit on the record whose message is on.
type goexitOn struct{ on string }

func (h goexitOn) Enabled(context.Context, slog.Level) bool { return true }
func (h goexitOn) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.on {
		runtime.Goexit()
	}
	return nil
}
func (h goexitOn) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h goexitOn) WithGroup(string) slog.Handler      { return h }

// While the plugin runs for one request, another waits for that run, not
// for a lock: it gives up when its own context ends, and one that waits to
// the end gets the same credential, from the one run.
func TestExecPluginWaitersFollowTheirContext(t *testing.T) {
	dir := t.TempDir()
	fifo, count := filepath.Join(dir, "fifo"), filepath.Join(dir, "count")
	mkfifo(t, fifo)
	cfg := testPlugin(t, ExecAPIVersionV1, map[string]string{
		"LW_PLUGIN_TOKEN": "tok", "LW_PLUGIN_COUNT_FILE": count, "LW_PLUGIN_WAIT_FIFO": fifo,
	})
	p, err := newExecPlugin(*cfg, execCluster{})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		c   *execCredential
		err error
	}
	first, patient := make(chan result, 1), make(chan result, 1)
	go func() {
		c, err := p.credential(context.Background())
		first <- result{c, err}
	}()
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // returns once the plugin runs
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		c, err := p.credential(context.Background())
		patient <- result{c, err}
	}()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	impatient := make(chan error, 1)
	go func() {
		_, err := p.credential(ctx)
		impatient <- err
	}()
	select {
	case err := <-impatient:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("a caller whose context ended: err = %v, want context.Canceled", err)
		}
	case <-time.After(time.Minute): // a guard: it returns at once, or waits for the lock
		t.Fatal("a caller whose context ended waits for another caller's plugin run")
	}

	w.Close() // the plugin answers
	a, b := <-first, <-patient
	if a.err != nil || b.err != nil || a.c == nil || a.c != b.c || a.c.token != "tok-1" {
		t.Errorf("first %+v, patient %+v: want one credential, tok-1, for both", a, b)
	}
	if n := countLines(t, count); n != 1 {
		t.Errorf("the plugin ran %d times, want 1", n)
	}
}

func TestExecPluginRunsAgainWhenExpired(t *testing.T) {
	srv := newEchoServer(t, nil)
	count := filepath.Join(t.TempDir(), "count")
	c := newExecClient(t, srv, testPlugin(t, ExecAPIVersionV1, map[string]string{
		"LW_PLUGIN_TOKEN": "tok", "LW_PLUGIN_COUNT_FILE": count, "LW_PLUGIN_EXPIRY": "past",
	}))
	for i, want := range []string{"Bearer tok-1", "Bearer tok-2", "Bearer tok-3"} {
		if _, body := get(t, c, "/api"); body != want {
			t.Fatalf("request %d: Authorization = %q, want %q", i, body, want)
		}
	}
}

func TestExecPluginCachesUntilExpiry(t *testing.T) {
	srv := newEchoServer(t, nil)
	count := filepath.Join(t.TempDir(), "count")
	c := newExecClient(t, srv, testPlugin(t, ExecAPIVersionV1, map[string]string{
		"LW_PLUGIN_TOKEN": "tok", "LW_PLUGIN_COUNT_FILE": count, "LW_PLUGIN_EXPIRY": "future",
	}))
	get(t, c, "/api")
	get(t, c, "/api")
	if n := countLines(t, count); n != 1 {
		t.Errorf("the plugin ran %d times before expiry, want 1", n)
	}
	c.InvalidateCredentials()
	if _, body := get(t, c, "/api"); body != "Bearer tok-2" {
		t.Errorf("after InvalidateCredentials: Authorization = %q, want a new token", body)
	}
}

func TestExecPluginRunsAgainAfter401(t *testing.T) {
	srv := newEchoServer(t, func(auth string) bool { return auth == "Bearer tok-1" })
	c := newExecClient(t, srv, testPlugin(t, ExecAPIVersionV1, map[string]string{
		"LW_PLUGIN_TOKEN": "tok", "LW_PLUGIN_COUNT_FILE": filepath.Join(t.TempDir(), "count"),
	}))
	if code, _ := get(t, c, "/api"); code != http.StatusUnauthorized {
		t.Fatalf("first request: %d, want 401", code)
	}
	if code, body := get(t, c, "/api"); code != http.StatusOK || body != "Bearer tok-2" {
		t.Errorf("after a 401: %d %q, want 200 with a new token", code, body)
	}
}

func TestExecPluginClientCertificate(t *testing.T) {
	ca := newTestCA(t, "test-ca")
	srv := newClientCertServer(t, ca)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeKeyPair := func(cn string) {
		cert, key := ca.issue(t, cn, true, nil, nil)
		if err := os.WriteFile(certFile, cert, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(keyFile, key, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeKeyPair("alice")

	for _, version := range []string{ExecAPIVersionV1, ExecAPIVersionV1beta1} {
		t.Run(version, func(t *testing.T) {
			writeKeyPair("alice")
			c, err := NewClient(&Config{
				Host: srv.URL,
				TLS:  TLSConfig{CAData: ca.certPEM},
				Exec: testPlugin(t, version, map[string]string{
					"LW_PLUGIN_MODE": "cert", "LW_PLUGIN_CERT_FILE": certFile, "LW_PLUGIN_KEY_FILE": keyFile,
				}),
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, body := get(t, c, "/"); body != "alice" {
				t.Fatalf("server saw %q, want the plugin's certificate for alice", body)
			}
			// A new certificate: connections made with the old one are
			// closed, and the next request presents the new one.
			writeKeyPair("bob")
			c.InvalidateCredentials()
			if _, body := get(t, c, "/"); body != "bob" {
				t.Errorf("after rotation the server saw %q, want bob", body)
			}
		})
	}
}

// A plugin that stops returning a client certificate and returns tokens
// instead closes the connections made with the certificate once, not at
// every refresh after (its last certificate was kept, so every later run
// counted as a rotation and closed every connection).
func TestExecPluginFromCertificateToToken(t *testing.T) {
	ca := newTestCA(t, "test-ca")
	var conns atomic.Int32
	srv := newClientCertServerCounting(t, ca, &conns)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	cert, key := ca.issue(t, "alice", true, nil, nil)
	writeFile(t, certFile, string(cert))
	writeFile(t, keyFile, string(key))
	c, err := NewClient(&Config{
		Host: srv.URL,
		TLS:  TLSConfig{CAData: ca.certPEM},
		Exec: testPlugin(t, ExecAPIVersionV1, map[string]string{
			"LW_PLUGIN_MODE": "certortoken", "LW_PLUGIN_CERT_FILE": certFile, "LW_PLUGIN_KEY_FILE": keyFile,
			"LW_PLUGIN_TOKEN": "tok",
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, c, "/"); body != "alice" {
		t.Fatalf("server saw %q, want the certificate for alice", body)
	}
	if err := os.Remove(certFile); err != nil {
		t.Fatal(err)
	}
	c.InvalidateCredentials()
	get(t, c, "/") // a token now: the certificate's connections go
	afterSwitch := conns.Load()
	for range 3 {
		c.InvalidateCredentials()
		get(t, c, "/") // a new token each time: no certificate changed
	}
	if n := conns.Load() - afterSwitch; n != 0 {
		t.Errorf("%d new connections for three token refreshes, want 0 (the connection reused)", n)
	}
}

// A static client certificate wins over the exec plugin, as in kubectl.
func TestExecPluginIgnoredWithStaticCredentials(t *testing.T) {
	srv := newEchoServer(t, nil)
	count := filepath.Join(t.TempDir(), "count")
	exec := testPlugin(t, ExecAPIVersionV1, map[string]string{"LW_PLUGIN_TOKEN": "tok", "LW_PLUGIN_COUNT_FILE": count})
	c, err := NewClient(&Config{Host: srv.URL, BearerToken: "static", TLS: TLSConfig{CAData: serverCAPEM(srv)}, Exec: exec})
	if err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, c, "/"); body != "Bearer static" {
		t.Errorf("Authorization = %q, want the static token", body)
	}
	if n := countLines(t, count); n != 0 {
		t.Errorf("the plugin ran %d times, want 0", n)
	}
}

func TestExecPluginInput(t *testing.T) {
	srv := newEchoServer(t, nil)
	infoFile := filepath.Join(t.TempDir(), "info.json")
	exec := testPlugin(t, ExecAPIVersionV1, map[string]string{"LW_PLUGIN_TOKEN": "tok", "LW_PLUGIN_INFO_FILE": infoFile})
	exec.ProvideClusterInfo = true
	exec.ClusterConfig = json.RawMessage(`{"audience":"a"}`)
	exec.InteractiveMode = ExecInteractiveIfAvailable
	c, err := NewClient(&Config{Host: srv.URL, TLS: TLSConfig{CAData: serverCAPEM(srv), ServerName: "example.com"}, Exec: exec})
	if err != nil {
		t.Fatal(err)
	}
	get(t, c, "/")
	data, err := os.ReadFile(infoFile)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		StdinEmpty bool `json:"stdinEmpty"`
		Info       struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Spec       struct {
				Interactive *bool `json:"interactive"`
				Cluster     *struct {
					Server        string          `json:"server"`
					TLSServerName string          `json:"tls-server-name"`
					CAData        []byte          `json:"certificate-authority-data"`
					Config        json.RawMessage `json:"config"`
				} `json:"cluster"`
			} `json:"spec"`
		} `json:"info"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("%v in %s", err, data)
	}
	if !got.StdinEmpty {
		t.Error("the plugin got something on standard input, want nothing attached")
	}
	in := got.Info
	if in.APIVersion != ExecAPIVersionV1 || in.Kind != "ExecCredential" {
		t.Errorf("KUBERNETES_EXEC_INFO is %s %s", in.APIVersion, in.Kind)
	}
	if in.Spec.Interactive == nil || *in.Spec.Interactive {
		t.Error("spec.interactive is not false")
	}
	if cl := in.Spec.Cluster; cl == nil || cl.Server != srv.URL || cl.TLSServerName != "example.com" || string(cl.CAData) != string(serverCAPEM(srv)) {
		t.Errorf("spec.cluster = %+v, want the server, name and CA", cl)
	}
	if cl := in.Spec.Cluster; cl == nil || string(cl.Config) != `{"audience":"a"}` {
		t.Errorf("spec.cluster.config = %s, want the cluster's configuration for the plugin", cl.Config)
	}
}

func TestExecPluginErrors(t *testing.T) {
	srv := newEchoServer(t, nil)
	tests := []struct {
		name    string
		mode    string
		want    []string
		notWant []string
	}{
		{"exit status with stderr", "fail",
			[]string{"exec plugin", "exit status 3", "standard error went to this process's"},
			[]string{"secret-token", "no credentials for cluster"}},
		{"output not JSON", "garbage", []string{"not a JSON ExecCredential"}, []string{"secret-token"}},
		{"no status", "nostatus", []string{"no status"}, nil},
		{"wrong apiVersion", "wrongversion", []string{`apiVersion "client.authentication.k8s.io/v1alpha1"`}, []string{"secret-token"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exec := testPlugin(t, ExecAPIVersionV1, map[string]string{"LW_PLUGIN_MODE": tt.mode, "LW_PLUGIN_TOKEN": "secret-token"})
			c := newExecClient(t, srv, exec)
			var stderr bytes.Buffer
			c.auth.exec.stderr = &stderr
			req, _ := http.NewRequest(http.MethodGet, c.URL("/", nil).String(), nil)
			_, err := c.Do(req)
			if err == nil {
				t.Fatal("no error")
			}
			if tt.mode == "fail" && !strings.Contains(stderr.String(), "no credentials for cluster xxx") {
				t.Errorf("the plugin's standard error was not passed on: %q", stderr.String())
			}
			msg := err.Error()
			if !strings.Contains(msg, exec.Command) {
				t.Errorf("error does not name the command: %s", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q: %s", w, msg)
				}
			}
			for _, nw := range tt.notWant {
				if strings.Contains(msg, nw) {
					t.Errorf("error shows %q: %s", nw, msg)
				}
			}
		})
	}
}

// A plugin's token that holds a control character could be sent in no
// request: the plugin's output is refused, saying why, without the token.
func TestExecPluginTokenWithANewlineIsRefused(t *testing.T) {
	srv := newEchoServer(t, nil)
	c := newExecClient(t, srv, testPlugin(t, ExecAPIVersionV1, map[string]string{"LW_PLUGIN_MODE": "token", "LW_PLUGIN_TOKEN": "secret\ntoken"}))
	req, _ := http.NewRequest(http.MethodGet, c.URL("/", nil).String(), nil)
	_, err := c.Do(req)
	if err == nil || !strings.Contains(err.Error(), "status.token holds a control character") || strings.Contains(err.Error(), "secret") {
		t.Errorf("err = %v, want one about status.token that does not quote it", err)
	}
}

// A plugin that exits with success while a child it started holds its
// output open gives its credential once WaitDelay has passed: the child is
// not waited for, and its holding the pipe is no error.
func TestExecPluginLeavingAChildRunning(t *testing.T) {
	srv := newEchoServer(t, nil)
	c := newExecClient(t, srv, testPlugin(t, ExecAPIVersionV1, map[string]string{"LW_PLUGIN_MODE": "leavechild", "LW_PLUGIN_TOKEN": "tok"}))
	if _, body := get(t, c, "/"); body != "Bearer tok-1" {
		t.Errorf("server saw %q, want the plugin's token", body)
	}
}

func TestExecPluginNotFound(t *testing.T) {
	srv := newEchoServer(t, nil)
	c := newExecClient(t, srv, &ExecConfig{
		Command:     "listwatch-no-such-plugin",
		APIVersion:  ExecAPIVersionV1,
		InstallHint: "install it from the example site",
	})
	req, _ := http.NewRequest(http.MethodGet, c.URL("/", nil).String(), nil)
	_, err := c.Do(req)
	if err == nil || !strings.Contains(err.Error(), `"listwatch-no-such-plugin" not found: install it from the example site`) {
		t.Errorf("err = %v, want not found with the install hint", err)
	}
}

func TestExecPluginConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		exec ExecConfig
		want string
	}{
		{"no command", ExecConfig{APIVersion: ExecAPIVersionV1}, "command is empty"},
		{"no apiVersion", ExecConfig{Command: "p"}, "apiVersion is required"},
		{"v1alpha1", ExecConfig{Command: "p", APIVersion: "client.authentication.k8s.io/v1alpha1"}, "not supported"},
		{"interactive always", ExecConfig{Command: "p", APIVersion: ExecAPIVersionV1, InteractiveMode: ExecInteractiveAlways}, "needs a terminal"},
		{"unknown mode", ExecConfig{Command: "p", APIVersion: ExecAPIVersionV1, InteractiveMode: "Sometimes"}, "unknown interactiveMode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewClient(&Config{Host: "https://127.0.0.1:1", Exec: &tt.exec})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// One caller that gives up (its context ends: a LIST page bounded by
// Config.Timeout or WithListTimeout, a watch cancelled) must not kill the
// plugin run that other callers wait for, or that the next request would
// use: a plugin slower than the shortest request deadline (an Azure CLI or
// SSO helper takes seconds) is otherwise killed on every attempt and never
// yields a credential. Here the first caller gives up while the plugin
// runs; the next caller should get that run's credential, with no second
// run.
func TestExecPluginRunOutlivesAnImpatientCaller(t *testing.T) {
	dir := t.TempDir()
	fifo, starts := filepath.Join(dir, "fifo"), filepath.Join(dir, "starts")
	mkfifo(t, fifo)
	cfg := testPlugin(t, ExecAPIVersionV1, map[string]string{
		"LW_PLUGIN_TOKEN": "tok", "LW_PLUGIN_START_FILE": starts, "LW_PLUGIN_WAIT_FIFO": fifo,
	})
	p, err := newExecPlugin(*cfg, execCluster{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := p.credential(ctx)
		first <- err
	}()
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // returns once the plugin runs
	if err != nil {
		t.Fatal(err)
	}
	cancel() // the first caller's deadline passes while the plugin runs
	if err := <-first; err == nil {
		t.Fatal("a caller whose context ended got a credential")
	}
	second := make(chan *execCredential, 1)
	go func() {
		c, err := p.credential(context.Background())
		if err != nil {
			t.Error(err)
		}
		second <- c
	}()
	w.Close() // the plugin answers
	// A second run, if one was started, waits for a writer of the fifo
	// too: let it through rather than wait for execTimeout.
	for answered := false; !answered; {
		select {
		case <-second: // nil after an error, which the goroutine reported
			answered = true
		case <-time.After(10 * time.Millisecond):
			if fd, err := syscall.Open(fifo, syscall.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				syscall.Close(fd)
			}
		}
	}
	if n := countLines(t, starts); n != 1 {
		t.Errorf("the plugin ran %d times, want 1: one caller giving up killed the run", n)
	}
}

// A failing plugin (an expired login) is not run again for every caller
// that asks after it: many informers retry on backoffs of their own, and
// each would run it. Its error is handed back for a second, then two, up
// to execFailureHoldMax; a success, or InvalidateCredentials, ends that.
func TestExecPluginFailureIsHeldForAWhile(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	cfg := testPlugin(t, ExecAPIVersionV1, map[string]string{"LW_PLUGIN_MODE": "fail", "LW_PLUGIN_COUNT_FILE": runs})
	p, err := newExecPlugin(*cfg, execCluster{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	p.now = func() time.Time { return now }
	ask := func(wantRuns int, why string) {
		t.Helper()
		if _, err := p.credential(context.Background()); err == nil {
			t.Fatalf("%s: a failing plugin gave a credential", why)
		}
		if n := countLines(t, runs); n != wantRuns {
			t.Fatalf("%s: the plugin ran %d times, want %d", why, n, wantRuns)
		}
	}
	ask(1, "first")
	ask(1, "at once again")
	now = now.Add(time.Second)
	ask(2, "a second later")
	now = now.Add(1500 * time.Millisecond)
	ask(2, "1.5 s after the second failure")
	now = now.Add(500 * time.Millisecond)
	ask(3, "2 s after it")
	p.invalidateAll()
	ask(4, "after InvalidateCredentials")

	for i := range p.cfg.Env {
		if p.cfg.Env[i].Name == "LW_PLUGIN_MODE" {
			p.cfg.Env[i].Value = "token"
		}
	}
	now = now.Add(execFailureHoldMax)
	if _, err := p.credential(context.Background()); err != nil {
		t.Fatalf("the plugin works again: %v", err)
	}
	if p.failed != nil || p.failHold != 0 {
		t.Errorf("a success left the failure held: %v for %v", p.failed, p.failHold)
	}
}

// InvalidateCredentials while a run of a failing plugin is under way (the
// user logs in again as the plugin fails with the old login) must not be
// undone by that run: its failure, from before the call, is not held, and
// the next request runs the plugin, as InvalidateCredentials says. The
// hold's doubling starts again too.
func TestExecPluginInvalidateDuringAFailingRunIsNotLost(t *testing.T) {
	dir := t.TempDir()
	fifo, starts := filepath.Join(dir, "fifo"), filepath.Join(dir, "starts")
	mkfifo(t, fifo)
	cfg := testPlugin(t, ExecAPIVersionV1, map[string]string{
		"LW_PLUGIN_MODE": "fail", "LW_PLUGIN_START_FILE": starts, "LW_PLUGIN_WAIT_FIFO": fifo,
	})
	p, err := newExecPlugin(*cfg, execCluster{})
	if err != nil {
		t.Fatal(err)
	}
	p.failHold = execFailureHoldMax // it has been failing for a while
	first := make(chan error, 1)
	go func() {
		_, err := p.credential(context.Background())
		first <- err
	}()
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // returns once the plugin runs
	if err != nil {
		t.Fatal(err)
	}
	p.invalidateAll() // the user has logged in again, and says so
	w.Close()         // the run, started before, fails
	if err := <-first; err == nil {
		t.Fatal("a failing plugin gave a credential")
	}
	second := make(chan error, 1)
	go func() {
		_, err := p.credential(context.Background())
		second <- err
	}()
	for answered := false; !answered; {
		select {
		case <-second:
			answered = true
		case <-time.After(10 * time.Millisecond):
			if fd, err := syscall.Open(fifo, syscall.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				syscall.Close(fd)
			}
		}
	}
	if n := countLines(t, starts); n != 2 {
		t.Errorf("the plugin ran %d times, want 2: the failure of a run started before InvalidateCredentials was held after it", n)
	}
	p.mu.Lock()
	hold := p.failHold
	p.mu.Unlock()
	if hold != execFailureHold {
		t.Errorf("after InvalidateCredentials and one failure the hold is %v, want %v", hold, execFailureHold)
	}
}

// CloseConnections ends a run of the exec plugin under way, and waits for
// it: the owner of a Client is done with it, and nothing the Client
// started may go on. Before, the run went on after Factory.Shutdown had
// returned, its process and goroutine with it, for up to execTimeout.
// The requests waiting for it fail; a later one runs the plugin again.
func TestCloseConnectionsEndsAnExecPluginRun(t *testing.T) {
	dir := t.TempDir()
	fifo, starts := filepath.Join(dir, "fifo"), filepath.Join(dir, "starts")
	mkfifo(t, fifo)
	c := newExecClient(t, newEchoServer(t, nil), testPlugin(t, ExecAPIVersionV1, map[string]string{
		"LW_PLUGIN_TOKEN": "tok", "LW_PLUGIN_START_FILE": starts, "LW_PLUGIN_WAIT_FIFO": fifo,
	}))
	waiting := make(chan error, 1)
	go func() {
		_, _, err := getBody(c, "/api")
		waiting <- err
	}()
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // returns once the plugin runs
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(starts)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Sscanf(string(data), "%d", &pid); err != nil {
		t.Fatalf("the plugin's pid: %v", err)
	}

	c.CloseConnections()
	proc, err := os.FindProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	alive := proc.Signal(syscall.Signal(0))
	w.Close() // lets the plugin answer, if it is still there
	err = <-waiting
	if !errors.Is(alive, os.ErrProcessDone) {
		t.Fatalf("the plugin (pid %d) after CloseConnections: %v, want it gone (the waiting request got %v)", pid, alive, err)
	}
	if err == nil || !strings.Contains(err.Error(), "stopped, as the client's connections were closed") {
		t.Errorf("the request waiting for the run: %v, want it stopped", err)
	}

	answered := make(chan string, 1)
	go func() {
		_, body, err := getBody(c, "/api")
		if err != nil {
			t.Error(err)
		}
		answered <- body
	}()
	w, err = os.OpenFile(fifo, os.O_WRONLY, 0) // the plugin runs again
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if body := <-answered; body != "Bearer tok-1" {
		t.Errorf("a request after CloseConnections got %q, want the plugin's new token", body)
	}
	if n := countLines(t, starts); n != 2 {
		t.Errorf("the plugin ran %d times, want 2", n)
	}
}
