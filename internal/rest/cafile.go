package rest

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
)

// caFileTransport is the http.RoundTripper under authTransport when the
// roots that verify the apiserver live in a file (TLSConfig.CAFile), which
// a cluster's CA rotation rewrites: the service account's ca.crt, or a
// kubeconfig's certificate-authority file, first gains the new CA next to
// the old one, and the apiservers then present certificates the new CA
// signed.
//
// Before each request it looks at the file, as certFiles looks at the
// client certificate's, and reads it again when it changed. When it holds
// other certificates, a new *http.Transport, a clone of the last one with a
// pool of the new roots (and of CAData's, if set), takes the old one's
// place for the requests that follow, so every connection made from then on
// verifies the apiserver against them. The connections made before are
// verified already and stay: the old transport's idle ones are closed at
// once, and those that carry a request (a watch) close once idle for the
// transport's IdleConnTimeout, or with Client.CloseConnections (the
// transports share one dialer and one connTracker). A tls.Config is never
// changed once a transport has it.
//
// A file that no longer loads (removed, emptied, caught mid-write) leaves
// the last good roots in use, and is warned about once until it loads
// again. A handshake that fails because the apiserver's certificate is
// signed by an unknown authority has the file read again even if it looks
// unchanged (a rewrite of the same size within the file system's
// modification-time granularity), and a request without a body is sent
// once more when there are new roots, read then or meanwhile.
//
// It is safe for concurrent use.
type caFileTransport struct {
	path   string
	caData []byte // TLSConfig.CAData, in every pool
	log    *slog.Logger

	current atomic.Pointer[http.Transport] // what RoundTrip sends through

	mu      sync.Mutex // held while the file is looked at and current replaced
	stamp   fileStamp  // of path when it was read last, whether it loaded or not
	loaded  []byte     // the contents that current's roots came from
	failing bool       // the last read failed and was warned about
}

// newCAFileTransport reads the CA file once, so that a bad one fails
// NewClient, and returns the roots for the first transport (set with
// use).
func newCAFileTransport(t *TLSConfig, log *slog.Logger) (*caFileTransport, *x509.CertPool, error) {
	f := &caFileTransport{path: t.CAFile, caData: t.CAData, log: log}
	stamp, err := stampOf(f.path)
	var data []byte
	if err == nil {
		// Whatever the path names, as client-go reads it: a pipe from a
		// shell's process substitution (--certificate-authority=<(...))
		// or /dev/stdin is read once, here, under no lock that requests
		// take. Only refresh refuses what is not a regular file.
		data, err = readFileLimited(f.path, maxKubeconfigSize)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("TLS: reading CA file: %w", err)
	}
	pool, err := newRootPool(t.CAData, data, f.path)
	if err != nil {
		return nil, nil, err
	}
	f.stamp, f.loaded = stamp, data
	return f, pool, nil
}

// use sets the transport that requests go through until the file changes:
// the one built with the roots newCAFileTransport returned.
func (f *caFileTransport) use(t *http.Transport) { f.current.Store(t) }

// newRootPool returns a pool of the certificates in caData and in the CA
// file's contents fileData (none when file is "").
func newRootPool(caData, fileData []byte, file string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if len(caData) > 0 && !pool.AppendCertsFromPEM(caData) {
		return nil, errors.New("TLS: CAData holds no PEM certificate")
	}
	if file != "" && !pool.AppendCertsFromPEM(fileData) {
		return nil, fmt.Errorf("TLS: CA file %s holds no PEM certificate", file)
	}
	return pool, nil
}

// RoundTrip implements http.RoundTripper.
func (f *caFileTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	f.refresh(false)
	used := f.current.Load()
	resp, err := used.RoundTrip(req)
	if err != nil && isUnknownAuthority(err) &&
		(req.Body == nil || req.Body == http.NoBody) && req.Context().Err() == nil {
		f.refresh(true)
		if next := f.current.Load(); next != used { // new roots, read now or meanwhile
			resp, err = next.RoundTrip(req)
		}
	}
	return resp, err
}

// CloseIdleConnections closes the current transport's idle connections.
func (f *caFileTransport) CloseIdleConnections() {
	f.current.Load().CloseIdleConnections()
}

// refresh reads the file again if it changed since it was read (always,
// when force is set), and replaces the current transport when it holds
// other roots that load.
func (f *caFileTransport) refresh(force bool) {
	f.mu.Lock()
	stamp, err := stampOf(f.path)
	if err == nil && !force && stamp.same(f.stamp) {
		f.mu.Unlock()
		return
	}
	var data []byte
	if err == nil {
		data, err = readWatchedFile(stamp, f.path)
	}
	if err == nil {
		f.stamp = stamp // not read again until it changes, whether it loads or not
	}
	if err == nil && bytes.Equal(data, f.loaded) {
		f.failing = false // touched, or back as it was
		f.mu.Unlock()
		return
	}
	if err == nil {
		err = wholePEM(data)
	}
	var pool *x509.CertPool
	if err == nil {
		pool, err = newRootPool(f.caData, data, f.path)
	}
	if err != nil {
		level := slog.LevelWarn
		if f.failing {
			level = slog.LevelDebug
		}
		f.failing = true
		f.mu.Unlock()
		f.log.Log(context.Background(), level, "cannot load the CA file; verifying the apiserver against the certificates read before", "path", f.path, "error", err)
		return
	}
	old := f.current.Load()
	next := old.Clone() // the same dialer, proxy, HTTP/2 and timeouts
	next.TLSClientConfig.RootCAs = pool
	f.current.Store(next)
	f.loaded, f.failing = data, false
	f.mu.Unlock()
	f.log.Info("CA file changed; new connections verify the apiserver against its certificates", "path", f.path)
	old.CloseIdleConnections()
}

// readWatchedFile reads again a file that a Client watches (the CA file,
// the client certificate and key, the bearer token file), whose stamp is
// stamp, if it is a regular file of at most maxKubeconfigSize bytes: a
// directory fails, and a named pipe or a device (/dev/zero through a
// symlink) would block, or never end, under the lock that every request
// takes. Only the first read, when the Client is made, takes whatever the
// path names. The path may have come to name something else since stamp
// was taken (a rotation by rename, racing): it is opened without waiting
// for a writer, as opening a named pipe would, and what was opened is
// checked again.
func readWatchedFile(stamp fileStamp, path string) ([]byte, error) {
	notRegular := func(m os.FileMode) error {
		return fmt.Errorf("%s is not a regular file (%v)", path, m.Type())
	}
	if !stamp.info.Mode().IsRegular() {
		return nil, notRegular(stamp.info.Mode())
	}
	f, err := openNonBlocking(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	switch info, err := f.Stat(); {
	case err != nil:
		return nil, err
	case !info.Mode().IsRegular():
		return nil, notRegular(info.Mode())
	}
	return readLimited(f, maxKubeconfigSize)
}

// wholePEM fails when data ends in the middle of a PEM block: a file being
// written, whose first certificates would load without the rest.
func wholePEM(data []byte) error {
	rest := data
	for {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
	}
	if bytes.Contains(rest, []byte("-----BEGIN")) {
		return errors.New("the file ends in the middle of a PEM block")
	}
	return nil
}

// isUnknownAuthority reports whether err is the apiserver's certificate
// failing verification for want of a root that signed it.
func isUnknownAuthority(err error) bool {
	var unknown x509.UnknownAuthorityError
	return errors.As(err, &unknown)
}
