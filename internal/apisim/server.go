package apisim

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Server is an in-process kube-apiserver: a real HTTP server on 127.0.0.1
// with kube-apiserver's paths, list and watch rules, and scriptable faults.
//
// Create one with New, register resources, then Start or StartTLS; Close
// ends every stream and waits for the handlers. All methods are safe for
// concurrent use.
type Server struct {
	opts       options
	scheme     *runtime.Scheme
	paramCodec runtime.ParameterCodec
	log        *slog.Logger

	mu              sync.Mutex
	rv              uint64 // the global resourceVersion: last write's revision
	collections     map[schema.GroupVersionResource]*collection
	rvWaiters       chan struct{}        // closed at the next write; nil when nobody waits
	tokenIssued     map[uint64]time.Time // snapshot RV -> first continue token handed out
	tokensForgotten uint64               // tokens at or below this RV expired and were forgotten
	faults          []*Injection
	counts          map[countKey]int64
	started         bool
	closed          bool
	initErr         error // the first registration error of New, returned by Start
	url             string
	tls             *tlsState
	client          *http.Client
	clientCA        *CA // the CA client trusts

	closing    chan struct{} // closed by Close: every stream ends
	handlers   sync.WaitGroup
	background sync.WaitGroup
	http       *http.Server
	listener   net.Listener

	connMu       sync.Mutex
	conns        int           // client connections open
	connsChanged chan struct{} // closed, and replaced, when conns changes
}

// initialRV is the resourceVersion of an empty server. etcd's first
// revision is 1, so kube-apiserver never answers at "0": a fresh store
// lists at 1 and its first write is at 2.
const initialRV = 1

// New returns a Server that is configured but not listening yet.
func New(opts ...Option) *Server {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	s := &Server{
		opts:        o,
		scheme:      o.scheme,
		log:         o.logger,
		collections: make(map[schema.GroupVersionResource]*collection),
		tokenIssued: make(map[uint64]time.Time),
		counts:      make(map[countKey]int64),
		closing:     make(chan struct{}),
		rv:          initialRV,
	}
	if s.scheme == nil {
		s.scheme = defaultScheme()
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	params := runtime.NewScheme()
	_ = internalversion.AddToScheme(params) // registers fixed types; cannot fail
	s.paramCodec = runtime.NewParameterCodec(params)
	for _, r := range o.resources {
		if err := s.Register(r); err != nil && s.initErr == nil {
			s.initErr = err
		}
	}
	return s
}

func defaultScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme,
		coordinationv1.AddToScheme, discoveryv1.AddToScheme, networkingv1.AddToScheme,
		policyv1.AddToScheme, rbacv1.AddToScheme, schedulingv1.AddToScheme,
		storagev1.AddToScheme, metav1.AddMetaToScheme,
	} {
		_ = add(s) // registration of static types cannot fail
	}
	return s
}

// Register makes the server serve res. Registering a resource twice is a
// no-op. It fails when the descriptor is incomplete, or when res.Protobuf is
// set for a kind the scheme does not know.
func (s *Server) Register(res Resource) error {
	c, err := newCollection(res, s.scheme, s.opts.historySize)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	gvr := res.GroupVersion().WithResource(res.Resource)
	if _, ok := s.collections[gvr]; ok {
		return nil
	}
	c.watchStart, c.compactedRV = s.rv, 0
	s.collections[gvr] = c
	return nil
}

// Start listens on 127.0.0.1 (a free port) with plain HTTP/1.1. It fails
// when a resource given to New could not be registered.
func (s *Server) Start() error {
	return s.start(nil)
}

// StartTLS listens on 127.0.0.1 with TLS, serving a certificate for
// 127.0.0.1 and ServerName() signed by a fresh self-signed CA (see CA), with
// HTTP/2 unless WithHTTP2(false).
func (s *Server) StartTLS() error {
	st, err := newTLSState()
	if err != nil {
		return err
	}
	return s.start(st)
}

func (s *Server) start(st *tlsState) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.initErr != nil:
		return s.initErr
	case s.started || s.closed:
		return errors.New("apisim: Start called twice or after Close")
	}
	s.started = true

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("apisim: listen on 127.0.0.1: %w", err)
	}
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
		BaseContext:       func(net.Listener) context.Context { return context.Background() },
		ConnState:         s.countConn,
	}
	scheme := "http"
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	if st != nil {
		scheme = "https"
		s.tls = st
		srv.TLSConfig = &tls.Config{GetCertificate: st.certificate, MinVersion: tls.VersionTLS12}
		protocols.SetHTTP2(s.opts.http2)
	}
	srv.Protocols = protocols
	s.http, s.listener = srv, ln
	s.url = scheme + "://" + ln.Addr().String()

	s.background.Add(1)
	go func() {
		defer s.background.Done()
		if st != nil {
			_ = srv.ServeTLS(ln, "", "") // returns http.ErrServerClosed after Close
			return
		}
		_ = srv.Serve(ln)
	}()
	s.startTimers()
	return nil
}

// countConn counts the client connections open, for WaitConnections.
func (s *Server) countConn(_ net.Conn, state http.ConnState) {
	delta := 0
	switch state {
	case http.StateNew:
		delta = 1
	case http.StateClosed, http.StateHijacked:
		delta = -1
	default:
		return
	}
	s.connMu.Lock()
	defer s.connMu.Unlock()
	s.conns += delta
	if s.connsChanged != nil {
		close(s.connsChanged)
		s.connsChanged = nil
	}
}

// WaitConnections waits until at most n client connections are open, as
// the server sees them (a connection a client closed is seen closed
// once the server reads its end), or until ctx ends: then it returns
// ctx's error and the number open.
func (s *Server) WaitConnections(ctx context.Context, n int) error {
	for {
		s.connMu.Lock()
		open := s.conns
		if s.connsChanged == nil {
			s.connsChanged = make(chan struct{})
		}
		changed := s.connsChanged
		s.connMu.Unlock()
		if open <= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("apisim: %d client connections open, want at most %d: %w", open, n, ctx.Err())
		}
	}
}

// URL returns the base URL, e.g. "http://127.0.0.1:41234"; empty before
// Start.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// Client returns an http.Client for this server, the same one until the
// server's CA changes: for a TLS server it trusts the current CA and speaks
// HTTP/2 when enabled.
func (s *Server) Client() *http.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ca *CA
	if s.tls != nil {
		ca = s.tls.currentCA()
	}
	if s.client != nil && s.clientCA == ca {
		return s.client
	}
	tr := &http.Transport{ForceAttemptHTTP2: s.opts.http2}
	if ca != nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca.pem)
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if s.client != nil {
		s.client.CloseIdleConnections()
	}
	s.client, s.clientCA = &http.Client{Transport: tr}, ca
	return s.client
}

// Close ends every watch and blocked request, closes the listener and every
// connection, and waits for all handlers and timers to return. It is safe
// to call more than once.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.closing)
	for _, c := range s.collections {
		c.stopWatchers()
	}
	srv, client := s.http, s.client
	s.mu.Unlock()

	if srv != nil {
		_ = srv.Close()
	}
	if client != nil {
		client.CloseIdleConnections()
	}
	s.handlers.Wait()
	s.background.Wait()
}

// ResourceVersion returns the server's current resourceVersion: that of the
// last write to any resource ("1" before the first write, as etcd's first
// revision).
func (s *Server) ResourceVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strconv.FormatUint(s.rv, 10)
}

// ServeHTTP serves one request; the listener started by Start uses it, and
// tests may call it directly with an httptest.ResponseRecorder for requests
// that do not stream.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		writeStatus(w, r, errServerClosing(), format{})
		return
	}
	s.handlers.Add(1)
	s.mu.Unlock()
	defer s.handlers.Done()
	s.route(w, r)
}

// collection returns the registered collection for res, or an error that
// says how to register it.
func (s *Server) collection(res Resource) (*collection, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.collections[res.GroupVersion().WithResource(res.Resource)]
	if !ok {
		return nil, fmt.Errorf("apisim: resource %s is not registered; call Server.Register first", res.GroupResource())
	}
	return c, nil
}

// startTimers starts the periodic bookmark and compaction goroutines.
func (s *Server) startTimers() {
	if s.opts.bookmarkInterval > 0 {
		s.every(s.opts.bookmarkInterval, s.sendBookmarks)
	}
	if s.opts.compactEvery > 0 {
		s.every(s.opts.compactEvery, s.Compact)
	}
}

func (s *Server) every(d time.Duration, f func()) {
	s.background.Add(1)
	go func() {
		defer s.background.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-s.closing:
				return
			case <-t.C:
				f()
			}
		}
	}()
}
