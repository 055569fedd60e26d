package rest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

// tokenFileMaxAge is how long a token read from a file is used before the
// file is read again even though it looks unchanged (a file system with
// coarse modification times could hide a rotation).
const tokenFileMaxAge = time.Minute

// authTransport is the outermost http.RoundTripper of a Client: it sets
// the User-Agent and one kind of credentials on every request bound for the
// configured apiserver (same scheme and host; a redirect elsewhere gets
// none), and reacts to a 401 by dropping cached credentials so that the
// next request fetches new ones. A client certificate is the TLS
// configuration's to present; when it lives in files, this transport has
// them looked at before each request, so that a new pair is used at once.
type authTransport struct {
	next      http.RoundTripper
	origin    *url.URL
	userAgent string

	// At most one of these is set.
	bearer             string
	tokenFile          *tokenFile
	username, password string
	basic              bool
	exec               *execPlugin

	impersonate http.Header // Impersonate-* headers for every request; nil: none

	certFiles *certFiles   // nil unless the client certificate and key are files
	tracker   *connTracker // closes the connections when the client certificate changes; nil when it cannot
}

// RoundTrip implements http.RoundTripper. It does not modify req.
func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var closes uint64
	if t.tracker != nil {
		closes = t.tracker.closes.Load()
	}
	resp, err := t.send(req)
	rotated := t.tracker != nil && t.tracker.closes.Load() != closes
	if err != nil && (rotated || errors.Is(err, net.ErrClosed)) &&
		(req.Body == nil || req.Body == http.NoBody) && req.Context().Err() == nil {
		// Connections were closed on our side while this request was on
		// its way (a new client certificate, Client.CloseConnections),
		// and HTTP/2's pool may still have handed it one of them ("use of
		// closed network connection"): once more, on a new connection.
		resp, err = t.send(req)
	}
	if resp != nil {
		// The request as the caller gave it, not the clone that carries
		// the credentials: code that dumps resp.Request must not show them.
		resp.Request = req
	}
	return resp, err
}

// send is one attempt of RoundTrip.
func (t *authTransport) send(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	if r.Header.Get("User-Agent") == "" {
		r.Header.Set("User-Agent", t.userAgent)
	}
	if !sameOrigin(r.URL, t.origin) {
		return t.next.RoundTrip(r)
	}
	if t.certFiles != nil {
		t.certFiles.refresh()
	}
	if t.impersonate != nil && !hasImpersonation(r.Header) {
		for k, v := range t.impersonate {
			r.Header[k] = append([]string(nil), v...)
		}
	}
	if r.Header.Get("Authorization") != "" {
		return t.next.RoundTrip(r)
	}
	var used *execCredential
	switch {
	case t.tokenFile != nil:
		token, err := t.tokenFile.get()
		if err != nil {
			closeBody(req)
			return nil, err
		}
		r.Header.Set("Authorization", "Bearer "+token)
	case t.bearer != "":
		r.Header.Set("Authorization", "Bearer "+t.bearer)
	case t.basic:
		r.SetBasicAuth(t.username, t.password)
	case t.exec != nil:
		c, err := t.exec.credential(r.Context())
		if err != nil {
			closeBody(req)
			return nil, err
		}
		if c.token != "" {
			r.Header.Set("Authorization", "Bearer "+c.token)
		}
		used = c
	}
	resp, err := t.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		if used != nil {
			t.exec.invalidate(used)
		}
		if t.tokenFile != nil {
			t.tokenFile.invalidate()
		}
	}
	return resp, err
}

// invalidate drops every cached credential.
func (t *authTransport) invalidate() {
	if t.exec != nil {
		t.exec.invalidateAll()
	}
	if t.tokenFile != nil {
		t.tokenFile.invalidate()
	}
}

func sameOrigin(u, origin *url.URL) bool {
	return strings.EqualFold(u.Scheme, origin.Scheme) && strings.EqualFold(u.Host, origin.Host)
}

// closeBody honours the RoundTripper contract on the paths that fail before
// the request is handed on: the body is always closed.
func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// tokenFile reads a bearer token from a file and reads it again when the
// file changes, when the token is older than tokenFileMaxAge and after a
// 401. The first read, as the Client is made, takes whatever the path
// names (a pipe from a shell's process substitution); the reads again,
// before requests and under the lock, only a regular file
// (readWatchedFile). It is safe for concurrent use.
type tokenFile struct {
	path string
	now  func() time.Time
	log  *slog.Logger

	mu      sync.Mutex
	token   string
	modTime time.Time
	size    int64
	readAt  time.Time // zero: read before the next use
	read    bool      // token came from the file (not from a BearerToken standing in)
	failing bool      // the last read failed and was warned about
	started bool      // read once: only a regular file is read again
}

func newTokenFile(path string, log *slog.Logger) *tokenFile {
	return &tokenFile{path: path, now: time.Now, log: log}
}

// get returns the current token. When the file cannot be read but a token
// was read before, that token is used (a rotation in progress should not
// fail requests); the error is returned only when there is no token at all.
// What it logs, it logs after the lock is released: a slow logger must not
// hold up every other request.
func (f *tokenFile) get() (string, error) {
	token, logIt, err := f.current()
	if logIt != nil {
		logIt()
	}
	return token, err
}

// current is get under the lock; logIt, if not nil, logs what happened.
func (f *tokenFile) current() (token string, logIt func(), err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	info, statErr := os.Stat(f.path)
	if f.token != "" && statErr == nil &&
		info.ModTime().Equal(f.modTime) && info.Size() == f.size &&
		f.now().Sub(f.readAt) < tokenFileMaxAge {
		return f.token, nil, nil
	}
	var data []byte
	err = statErr
	switch {
	case err != nil:
	case f.started:
		data, err = readWatchedFile(fileStamp{info}, f.path)
	default:
		data, err = readFileLimited(f.path, maxKubeconfigSize)
	}
	f.started = true
	token = strings.TrimSpace(string(data))
	switch {
	case err != nil:
	case token == "":
		err = errors.New("the file is empty")
	default:
		err = checkHeaderValue(token)
	}
	if err != nil {
		if f.token != "" {
			// Tried again at every request until it can be read: warn
			// once, not at every request.
			level := slog.LevelWarn
			if f.failing {
				level = slog.LevelDebug
			}
			f.failing = true
			readErr := err
			return f.token, func() {
				f.log.Log(context.Background(), level, "cannot read the bearer token file; using the token read before", "path", f.path, "error", readErr)
			}, nil
		}
		return "", nil, fmt.Errorf("reading bearer token file %s: %w", f.path, err)
	}
	if f.read && token != f.token {
		logIt = func() { f.log.Debug("bearer token file changed; using the new token", "path", f.path) }
	}
	f.token, f.readAt, f.read, f.failing = token, f.now(), true, false
	if statErr == nil {
		f.modTime, f.size = info.ModTime(), info.Size()
	}
	return token, logIt, nil
}

// invalidate makes the next get read the file again.
func (f *tokenFile) invalidate() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.readAt = time.Time{}
}

// impersonationHeaders returns the headers that ask to act as i.
func impersonationHeaders(i *ImpersonationConfig) http.Header {
	h := http.Header{}
	if i.UserName != "" {
		h.Set("Impersonate-User", i.UserName)
	}
	if i.UID != "" {
		h.Set("Impersonate-Uid", i.UID)
	}
	for _, g := range i.Groups {
		h.Add("Impersonate-Group", g)
	}
	for k, vs := range i.Extra {
		for _, v := range vs {
			h.Add("Impersonate-Extra-"+escapeHeaderKey(k), v)
		}
	}
	return h
}

// hasImpersonation reports whether the caller set impersonation headers of
// its own, which are then left as they are.
func hasImpersonation(h http.Header) bool {
	for k := range h {
		if strings.HasPrefix(k, "Impersonate-") {
			return true
		}
	}
	return false
}

// escapeHeaderKey percent-encodes the bytes of k that may not appear in a
// header name (an RFC 7230 token), and '%' itself: the apiserver decodes
// Impersonate-Extra-<key> so.
func escapeHeaderKey(k string) string {
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c != '%' && isTokenByte(c) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func isTokenByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
