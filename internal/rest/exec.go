package rest

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// The exec credential protocol (client.authentication.k8s.io): the client
// runs a command with KUBERNETES_EXEC_INFO set to an ExecCredential holding
// the request's spec; the command prints an ExecCredential whose status
// holds a bearer token, or a client certificate and key, and optionally
// when they expire. The client caches them until then, or until the server
// answers 401.

// The API versions of ExecCredential that plugins may speak.
const (
	ExecAPIVersionV1      = "client.authentication.k8s.io/v1"
	ExecAPIVersionV1beta1 = "client.authentication.k8s.io/v1beta1"
)

// The interactive modes of ExecConfig. Plugins always run without a
// terminal (standard input is not attached), so Always is refused.
const (
	ExecInteractiveNever       = "Never"
	ExecInteractiveIfAvailable = "IfAvailable"
	ExecInteractiveAlways      = "Always"
)

const (
	// execTimeout bounds one run of a plugin. Plugins run without a
	// terminal, so one that takes longer is stuck.
	execTimeout = time.Minute
	// execFailureHold and execFailureHoldMax bound how long a plugin's
	// failure is handed to the callers that ask after it.
	execFailureHold    = time.Second
	execFailureHoldMax = 16 * time.Second
	// maxExecOutput bounds what is read of a plugin's standard output.
	maxExecOutput = 1 << 20
)

// ExecConfig runs a credential plugin, as the "exec" section of a
// kubeconfig user does. The zero value is not usable: Command and
// APIVersion are required. Formatting or logging an ExecConfig never shows
// the values of Env.
type ExecConfig struct {
	// Command is the program to run, looked up in PATH when it has no
	// slash. Required.
	Command string
	// Args are the command's arguments.
	Args []string
	// Env is added to the environment the command inherits.
	Env []ExecEnvVar
	// APIVersion is the ExecCredential version the plugin speaks:
	// ExecAPIVersionV1 or ExecAPIVersionV1beta1. Required.
	APIVersion string
	// InstallHint is shown when the command is not found.
	InstallHint string
	// ProvideClusterInfo passes the cluster's server, CA data, TLS server
	// name and proxy to the plugin in KUBERNETES_EXEC_INFO, and
	// ClusterConfig as spec.cluster.config.
	ProvideClusterInfo bool
	// ClusterConfig is the cluster's configuration for the plugin, JSON:
	// LoadKubeconfig fills it from the cluster's extension named
	// client.authentication.k8s.io/exec, as kubectl does.
	ClusterConfig json.RawMessage
	// InteractiveMode is Never, IfAvailable (the default when empty) or
	// Always, which is refused: plugins get no terminal here.
	InteractiveMode string
}

// ExecEnvVar is one environment variable for an exec plugin. Formatting or
// logging it never shows Value.
type ExecEnvVar struct {
	Name, Value string
}

// execCredential is what one run of the plugin returned.
type execCredential struct {
	token  string
	cert   *tls.Certificate // nil when the plugin returned no certificate
	expiry time.Time        // zero: valid until the server refuses it
}

// execPlugin runs the plugin when no valid credential is cached. It is safe
// for concurrent use; concurrent callers share one run.
type execPlugin struct {
	cfg     ExecConfig
	info    []byte // KUBERNETES_EXEC_INFO
	environ func() []string
	// stderr receives what the plugin writes to its standard error: this
	// process's, as with client-go. It is never quoted in errors or logs,
	// which reach informers' LastError and warnings: plugins that log
	// verbosely write tokens there.
	stderr io.Writer
	now    func() time.Time
	log    *slog.Logger
	// onCertRotation is called, outside the lock, when the plugin returns
	// a client certificate that differs from the previous one: connections
	// authenticated with the old one must go.
	onCertRotation func()

	mu       sync.Mutex // guards what follows; never held while the plugin runs
	running  *execRun   // the run in progress, which other callers wait for
	cached   *execCredential
	lastCert *tls.Certificate // the certificate of the last run (nil: none), even if invalidated since
	// failed is the error of the last run if it failed; callers that ask
	// before failedUntil get it without running the plugin again. Many
	// informers retry on backoffs of their own, so a failing plugin (an
	// expired login) would otherwise run once for each of them, again and
	// again. The hold doubles with each failure in a row, from
	// execFailureHold to execFailureHoldMax; a success, or
	// InvalidateCredentials, ends it.
	failed      error
	failedUntil time.Time
	failHold    time.Duration
	// invalidations counts invalidateAll calls: a run started before the
	// last one failed with what the user has since replaced (a login
	// renewed), and its failure is not held.
	invalidations uint64
}

// execCredentialObject is the ExecCredential object, in both versions.
type execCredentialObject struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Spec       execSpec    `json:"spec"`
	Status     *execStatus `json:"status,omitempty"`
}

type execSpec struct {
	Cluster     *execCluster `json:"cluster,omitempty"`
	Interactive bool         `json:"interactive"`
}

// execCluster is the cluster information handed to plugins that ask for it.
type execCluster struct {
	Server                   string          `json:"server"`
	TLSServerName            string          `json:"tls-server-name,omitempty"`
	InsecureSkipTLSVerify    bool            `json:"insecure-skip-tls-verify,omitempty"`
	CertificateAuthorityData []byte          `json:"certificate-authority-data,omitempty"`
	ProxyURL                 string          `json:"proxy-url,omitempty"`
	DisableCompression       bool            `json:"disable-compression,omitempty"`
	Config                   json.RawMessage `json:"config,omitempty"`
}

type execStatus struct {
	ExpirationTimestamp   *time.Time `json:"expirationTimestamp,omitempty"`
	Token                 string     `json:"token,omitempty"`
	ClientCertificateData string     `json:"clientCertificateData,omitempty"`
	ClientKeyData         string     `json:"clientKeyData,omitempty"`
}

// newExecPlugin checks cfg and prepares the plugin's input. cluster is
// passed to the plugin only when cfg.ProvideClusterInfo is set.
func newExecPlugin(cfg ExecConfig, cluster execCluster) (*execPlugin, error) {
	if cfg.Command == "" {
		return nil, errors.New("exec plugin: command is empty")
	}
	switch cfg.APIVersion {
	case ExecAPIVersionV1, ExecAPIVersionV1beta1:
	case "":
		return nil, fmt.Errorf("exec plugin %q: apiVersion is required (%s or %s)", cfg.Command, ExecAPIVersionV1, ExecAPIVersionV1beta1)
	default:
		return nil, fmt.Errorf("exec plugin %q: apiVersion %q is not supported; use %s or %s", cfg.Command, cfg.APIVersion, ExecAPIVersionV1, ExecAPIVersionV1beta1)
	}
	switch cfg.InteractiveMode {
	case "", ExecInteractiveNever, ExecInteractiveIfAvailable:
	case ExecInteractiveAlways:
		return nil, fmt.Errorf("exec plugin %q: interactiveMode Always needs a terminal, and plugins run without one here; use Never or IfAvailable", cfg.Command)
	default:
		return nil, fmt.Errorf("exec plugin %q: unknown interactiveMode %q (want Never, IfAvailable or Always)", cfg.Command, cfg.InteractiveMode)
	}
	in := execCredentialObject{APIVersion: cfg.APIVersion, Kind: "ExecCredential"}
	if cfg.ProvideClusterInfo {
		in.Spec.Cluster = &cluster
	}
	info, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("exec plugin %q: encoding KUBERNETES_EXEC_INFO: %w", cfg.Command, err)
	}
	return &execPlugin{cfg: cfg, info: info, environ: os.Environ, stderr: os.Stderr, now: time.Now, log: slog.New(slog.DiscardHandler)}, nil
}

// errExecStopped is the error of a plugin run that stop ended.
var errExecStopped = errors.New("stopped, as the client's connections were closed")

// execRun is one run of the plugin, shared by the callers that wait for it.
type execRun struct {
	done    chan struct{} // closed when the run has ended and the fields are set
	gen     uint64        // p.invalidations when it started
	stop    context.CancelCauseFunc
	stopped bool // by stop; guarded by the plugin's mu
	cred    *execCredential
	err     error
}

// credential returns the cached credential if it has not expired, else runs
// the plugin, or waits for the run another caller started (or, for a while
// after a run failed, returns that run's error). A caller waits
// only as long as its own context lets it; the run itself is not bound by
// any caller's context (only by execTimeout, and by stop): a caller that
// gives up (a LIST page's deadline, a cancelled watch) must not kill the
// run that the others, and the next request, are waiting for. A plugin
// slower than the shortest request deadline would otherwise never yield a
// credential.
func (p *execPlugin) credential(ctx context.Context) (*execCredential, error) {
	p.mu.Lock()
	if c := p.cached; c != nil && (c.expiry.IsZero() || p.now().Before(c.expiry)) {
		p.mu.Unlock()
		return c, nil
	}
	if err := p.failed; err != nil && p.now().Before(p.failedUntil) {
		p.mu.Unlock()
		return nil, err
	}
	r := p.running
	if r == nil {
		// Values (tracing) are kept; cancellation is not. The run's
		// goroutine belongs to the plugin, not to this caller, and ends
		// on its own, within execTimeout and the WaitDelay after it, or
		// when stop ends it and waits for it.
		runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
		r = &execRun{done: make(chan struct{}), gen: p.invalidations, stop: cancel}
		p.running = r
		go p.runFor(runCtx, r)
	}
	p.mu.Unlock()
	select {
	case <-r.done:
		return r.cred, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// runFor runs the plugin for the run r it registered, and hands the result
// to the callers waiting for it.
func (p *execPlugin) runFor(ctx context.Context, r *execRun) {
	// Deferred: the logger below is user code, which may end the
	// goroutine (runtime.Goexit); the waiters must not wait for ever.
	defer close(r.done)
	c, err := p.run(ctx)
	r.stop(nil)
	p.mu.Lock()
	p.running = nil
	r.cred, r.err = c, err
	rotated := false
	switch {
	case err != nil && (r.gen != p.invalidations || r.stopped):
		// InvalidateCredentials came while it ran, or stop ended it:
		// handed to the callers that waited for it, not held for the
		// next ones.
	case err != nil:
		p.failHold = min(max(2*p.failHold, execFailureHold), execFailureHoldMax)
		p.failed, p.failedUntil = err, p.now().Add(p.failHold)
	default:
		p.failed, p.failHold = nil, 0
		p.cached = c
		// A certificate replaced, or dropped for a token: the
		// connections made with the old one go, once.
		rotated = p.lastCert != nil && !sameCertificate(p.lastCert, c.cert)
		p.lastCert = c.cert
	}
	p.mu.Unlock()
	if err != nil {
		p.log.Debug("exec plugin failed", "command", p.cfg.Command, "error", err)
	} else {
		if rotated && p.onCertRotation != nil {
			// Before the waiters go on: none of them may pick a
			// connection made with the old certificate.
			p.onCertRotation()
		}
		p.log.Debug("exec plugin returned credentials", "command", p.cfg.Command,
			"token", c.token != "", "certificate", c.cert != nil, "expiry", c.expiry)
	}
}

// stop ends the run under way, if any, and waits until it has ended: the
// Client's owner is done with it (CloseConnections), and nothing the
// Client started may go on. The callers waiting for the run get
// errExecStopped, which is not held: a later request runs the plugin
// again. The wait is short: the plugin is killed, and a child of it that
// holds its output open is waited for up to the run's WaitDelay.
func (p *execPlugin) stop() {
	p.mu.Lock()
	r := p.running
	if r != nil {
		r.stopped = true
	}
	p.mu.Unlock()
	if r != nil {
		r.stop(errExecStopped)
		<-r.done
	}
}

// invalidate forgets used, the credential a request was refused with, so
// that the next request runs the plugin again. A credential cached since
// then by another request is kept.
func (p *execPlugin) invalidate(used *execCredential) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cached == used {
		p.cached = nil
	}
}

// invalidateAll forgets the cached credential, whatever it is, and a
// failure being held, or that a run under way will end with: the next
// request runs the plugin (or waits for the run under way), and the hold
// starts again from execFailureHold.
func (p *execPlugin) invalidateAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cached, p.failed, p.failHold = nil, nil, 0
	p.invalidations++
}

// clientCertificate serves tls.Config.GetClientCertificate: the plugin's
// certificate, or none when it returns a token only.
func (p *execPlugin) clientCertificate(info *tls.CertificateRequestInfo) (*tls.Certificate, error) {
	c, err := p.credential(info.Context())
	if err != nil {
		return nil, err
	}
	if c.cert == nil {
		return &tls.Certificate{}, nil
	}
	return c.cert, nil
}

// run runs the plugin once and parses its output.
func (p *execPlugin) run(ctx context.Context) (*execCredential, error) {
	ctx, cancel := context.WithTimeout(ctx, execTimeout)
	defer cancel()

	cmd := exec.CommandContext(ctx, p.cfg.Command, p.cfg.Args...)
	env := p.environ()
	for _, v := range p.cfg.Env {
		env = append(env, v.Name+"="+v.Value)
	}
	cmd.Env = append(env, "KUBERNETES_EXEC_INFO="+string(p.info))
	stdout := &cappedBuffer{max: maxExecOutput}
	cmd.Stdout, cmd.Stderr = stdout, p.stderr // standard input stays unattached
	// Once the plugin has exited, wait this long for its output, and no
	// longer for a child of it that holds the pipes open.
	cmd.WaitDelay = 5 * time.Second

	err := cmd.Run()
	if errors.Is(err, exec.ErrWaitDelay) {
		// The plugin exited successfully; what it wrote is all there is
		// to read (on a loaded machine a second was once too short).
		err = nil
	}
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			msg := fmt.Sprintf("exec plugin %q not found", p.cfg.Command)
			if p.cfg.InstallHint != "" {
				msg += ": " + strings.TrimSpace(p.cfg.InstallHint)
			}
			return nil, fmt.Errorf("%s: %w", msg, err)
		}
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, errExecStopped):
			return nil, fmt.Errorf("exec plugin %q: %w", p.cfg.Command, errExecStopped)
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return nil, fmt.Errorf("exec plugin %q did not finish within %v and was stopped: %w", p.cfg.Command, execTimeout, err)
		}
		return nil, fmt.Errorf("exec plugin %q: %w (what it wrote to standard error went to this process's)", p.cfg.Command, err)
	}
	if stdout.truncated {
		return nil, fmt.Errorf("exec plugin %q: output larger than %d bytes", p.cfg.Command, maxExecOutput)
	}
	c, err := p.parse(stdout.Bytes())
	if err != nil {
		return nil, fmt.Errorf("exec plugin %q: %w", p.cfg.Command, err)
	}
	return c, nil
}

// parse checks the plugin's ExecCredential. Its errors never quote the
// output, which holds secrets.
func (p *execPlugin) parse(out []byte) (*execCredential, error) {
	var obj execCredentialObject
	if err := json.Unmarshal(out, &obj); err != nil {
		return nil, errors.New("output is not a JSON ExecCredential")
	}
	if obj.Kind != "ExecCredential" {
		return nil, fmt.Errorf("output has kind %q, want ExecCredential", obj.Kind)
	}
	if obj.APIVersion != p.cfg.APIVersion {
		return nil, fmt.Errorf("output has apiVersion %q, want %q as configured", obj.APIVersion, p.cfg.APIVersion)
	}
	s := obj.Status
	if s == nil {
		return nil, errors.New("output has no status")
	}
	c := &execCredential{token: s.Token}
	if s.ExpirationTimestamp != nil {
		c.expiry = *s.ExpirationTimestamp
	}
	switch {
	case s.ClientCertificateData != "" && s.ClientKeyData != "":
		cert, err := tls.X509KeyPair([]byte(s.ClientCertificateData), []byte(s.ClientKeyData))
		if err != nil {
			return nil, fmt.Errorf("status.clientCertificateData and clientKeyData do not make a key pair: %w", err)
		}
		c.cert = &cert
	case s.ClientCertificateData != "":
		return nil, errors.New("status.clientCertificateData is set without clientKeyData")
	case s.ClientKeyData != "":
		return nil, errors.New("status.clientKeyData is set without clientCertificateData")
	}
	if c.token == "" && c.cert == nil {
		return nil, errors.New("status has neither a token nor a client certificate")
	}
	if err := checkHeaderValue(c.token); err != nil {
		return nil, fmt.Errorf("status.token %w", err)
	}
	return c, nil
}

func sameCertificate(a, b *tls.Certificate) bool {
	if a == nil || b == nil {
		return a == b
	}
	if len(a.Certificate) != len(b.Certificate) {
		return false
	}
	for i := range a.Certificate {
		if !bytes.Equal(a.Certificate[i], b.Certificate[i]) {
			return false
		}
	}
	return true
}

// cappedBuffer keeps the first max bytes written to it and drops the rest
// without failing, so that a chatty plugin is never blocked on a pipe. (The
// buffer is a named field, not embedded: an embedded bytes.Buffer would
// lend its ReadFrom to io.Copy, which would then bypass the cap.)
type cappedBuffer struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); len(p) > room {
		b.truncated = true
		b.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *cappedBuffer) Bytes() []byte { return b.buf.Bytes() }
