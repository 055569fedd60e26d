package rest

import (
	"bytes"
	"context"
	"crypto/tls"
	"log/slog"
	"os"
	"sync"
)

// certFiles keeps a client certificate and key that live in files, which
// their owner may replace while the program runs: the kubelet rotates the
// client certificate its kubeconfig names, as do certificate agents. Before
// each request to the apiserver, refresh looks at the files, and reads them
// again when they changed, as the token file is; the TLS handshake of every
// new connection presents the pair read last. A new pair also closes the
// connections that were made with the old one (onRotation), as client-go
// does. A pair that no longer loads (caught mid-write) leaves the last good
// one in use. It is safe for concurrent use.
type certFiles struct {
	certFile, keyFile string
	log               *slog.Logger
	onRotation        func() // called, outside the lock, when the pair changed

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   [2]fileStamp // of certFile and keyFile when cert was read
	failing bool         // the last read failed and was warned about
}

// fileStamp tells whether a file changed: its size, its modification time,
// and which file it is (a symlink swapped to another file, as the kubelet
// does, may keep both; os.SameFile compares the files themselves).
type fileStamp struct {
	info os.FileInfo
}

func stampOf(path string) (fileStamp, error) {
	info, err := os.Stat(path) // through symlinks
	return fileStamp{info}, err
}

func (s fileStamp) same(o fileStamp) bool {
	return s.info != nil && o.info != nil && os.SameFile(s.info, o.info) &&
		s.info.Size() == o.info.Size() && s.info.ModTime().Equal(o.info.ModTime())
}

// newCertFiles reads the pair once, so that bad files fail NewClient.
func newCertFiles(t *TLSConfig, log *slog.Logger) (*certFiles, error) {
	f := &certFiles{certFile: t.CertFile, keyFile: t.KeyFile, log: log}
	stamp, err := f.stamps()
	if err != nil {
		return nil, err
	}
	cert, err := loadClientCert(t)
	if err != nil {
		return nil, err
	}
	f.cert, f.stamp = &cert, stamp
	return f, nil
}

func (f *certFiles) stamps() ([2]fileStamp, error) {
	var s [2]fileStamp
	var err error
	if s[0], err = stampOf(f.certFile); err != nil {
		return s, err
	}
	s[1], err = stampOf(f.keyFile)
	return s, err
}

// clientCertificate is the tls.Config's GetClientCertificate.
func (f *certFiles) clientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cert, nil
}

// refresh reads the files again if they changed since they were read, and
// only if they are regular files (readWatchedFile): it runs before every
// request, under the lock.
func (f *certFiles) refresh() {
	f.mu.Lock()
	stamp, err := f.stamps()
	if err == nil && stamp[0].same(f.stamp[0]) && stamp[1].same(f.stamp[1]) {
		f.mu.Unlock()
		return
	}
	var certPEM, keyPEM []byte
	if err == nil {
		certPEM, err = readWatchedFile(stamp[0], f.certFile)
	}
	if err == nil {
		keyPEM, err = readWatchedFile(stamp[1], f.keyFile)
	}
	var cert tls.Certificate
	if err == nil {
		cert, err = clientKeyPair(certPEM, keyPEM)
	}
	if err != nil {
		// Looked at again before every request until it loads: warn
		// once, not at every request.
		level := slog.LevelWarn
		if f.failing {
			level = slog.LevelDebug
		}
		f.failing = true
		f.mu.Unlock()
		f.log.Log(context.Background(), level, "cannot read the client certificate files; using the pair read before", "cert", f.certFile, "key", f.keyFile, "error", err)
		return
	}
	rotated := !bytes.Equal(cert.Certificate[0], f.cert.Certificate[0])
	f.cert, f.stamp, f.failing = &cert, stamp, false
	f.mu.Unlock()
	if rotated && f.onRotation != nil {
		f.onRotation()
	}
}
