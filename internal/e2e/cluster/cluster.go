package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options configure Start. The zero value is not enough: Binaries is
// required.
type Options struct {
	// Binaries is the folder holding the kube-apiserver and etcd
	// executables (see LocateBinaries).
	Binaries string
	// APIServerFlags are appended to the default kube-apiserver flags, so
	// a flag given here overrides a default one (for list flags, it adds
	// to it), e.g. "--watch-cache=false" or "--etcd-compaction-interval=2s".
	APIServerFlags []string
	// EtcdFlags are appended to the default etcd flags.
	EtcdFlags []string
	// StartTimeout bounds the wait for each server to become ready; zero
	// means 90 seconds.
	StartTimeout time.Duration
	// KeepDir keeps the temporary folder (logs, certificates, etcd data)
	// after Stop, for debugging.
	KeepDir bool
	// Audit makes kube-apiserver log every LIST and WATCH request it
	// receives, read back with AuditEvents: the only way to count one
	// client's requests.
	Audit bool
}

// Cluster is one etcd and one kube-apiserver on 127.0.0.1, started by Start
// and torn down by Stop. Its methods are safe for concurrent use, but
// starting and stopping the apiserver from several goroutines at once makes
// little sense.
type Cluster struct {
	opts     Options
	dir      string
	creds    credentials
	etcdPort int
	peerPort int
	apiPort  int
	client   *http.Client // trusts our CA, no credentials
	audit    []string     // the audit flags, when Options.Audit

	mu      sync.Mutex
	etcd    *process
	api     *process // nil while the apiserver is stopped
	stopped bool
}

// Start creates a temporary folder, writes the PKI and token file into it,
// starts etcd and kube-apiserver on free 127.0.0.1 ports and returns once
// /readyz answers 200. On failure it stops whatever it started and returns
// an error that carries the tail of both logs.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Binaries == "" {
		return nil, errors.New("cluster.Start: Options.Binaries is empty; use LocateBinaries")
	}
	if err := checkBinaries(opts.Binaries); err != nil {
		return nil, fmt.Errorf("cluster.Start: %w", err)
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 90 * time.Second
	}
	dir, err := os.MkdirTemp("", "listwatch-e2e-")
	if err != nil {
		return nil, fmt.Errorf("creating the cluster folder: %w", err)
	}
	c := &Cluster{opts: opts, dir: dir}
	if err := c.start(ctx); err != nil {
		logs := c.LogTail(40)
		_ = c.Stop()
		return nil, fmt.Errorf("%w\n%s", err, logs)
	}
	return c, nil
}

// start does Start's work on a Cluster that has its folder.
func (c *Cluster) start(ctx context.Context) error {
	var err error
	if c.creds, err = writePKI(c.dir); err != nil {
		return err
	}
	if c.opts.Audit {
		if c.audit, err = c.auditArgs(); err != nil {
			return err
		}
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.creds.caPEM)
	c.client = &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool},
		ForceAttemptHTTP2: true,
	}}
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	c.etcdPort, c.peerPort, c.apiPort = ports[0], ports[1], ports[2]

	if err := c.StartEtcd(ctx); err != nil {
		return err
	}
	return c.StartAPIServer(ctx)
}

// etcdArgs are etcd's flags: the same on every start, so that a restarted
// etcd serves the same data dir on the same ports.
func (c *Cluster) etcdArgs() []string {
	return append([]string{
		"--name=listwatch-e2e",
		"--data-dir=" + c.etcdDataDir(),
		"--listen-client-urls=" + c.EtcdURL(),
		"--advertise-client-urls=" + c.EtcdURL(),
		"--listen-peer-urls=http://127.0.0.1:" + strconv.Itoa(c.peerPort),
		"--initial-advertise-peer-urls=http://127.0.0.1:" + strconv.Itoa(c.peerPort),
		"--initial-cluster=listwatch-e2e=http://127.0.0.1:" + strconv.Itoa(c.peerPort),
		"--unsafe-no-fsync",
		"--log-level=warn",
	}, c.opts.EtcdFlags...)
}

// apiserverArgs are the kube-apiserver flags: DESIGN.md's set, our PKI,
// no priority and fairness (faster start), no ServiceAccount admission (so
// pods can be created without the token controller), the audit log if
// asked for, then Options'.
func (c *Cluster) apiserverArgs() []string {
	args := append([]string{
		"--etcd-servers=" + c.EtcdURL(),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(c.apiPort),
		"--cert-dir=" + filepath.Join(c.dir, "cert-dir"),
		"--tls-cert-file=" + c.creds.certFile,
		"--tls-private-key-file=" + c.creds.keyFile,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + c.creds.saPub,
		"--service-account-signing-key-file=" + c.creds.saKey,
		"--token-auth-file=" + c.creds.tokenFile,
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.96.0.0/16",
		"--endpoint-reconciler-type=none",
		"--enable-priority-and-fairness=false",
		"--disable-admission-plugins=ServiceAccount",
		"--profiling=false",
	}, c.audit...)
	return append(args, c.opts.APIServerFlags...)
}

// StartAPIServer starts kube-apiserver on the cluster's port (the same one
// across restarts) and waits for /readyz. It fails if the apiserver is
// already running.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return errors.New("cluster is stopped")
	}
	if c.api != nil {
		c.mu.Unlock()
		return errors.New("kube-apiserver is already running")
	}
	api, err := startProcess("kube-apiserver", filepath.Join(c.opts.Binaries, "kube-apiserver"), c.apiserverArgs(), c.apiserverLog())
	if err != nil {
		c.mu.Unlock()
		return err
	}
	c.api = api
	c.mu.Unlock()
	if err := c.waitReady(ctx, api, c.URL()+"/readyz", c.creds.adminToken); err != nil {
		return fmt.Errorf("kube-apiserver did not become ready: %w", err)
	}
	return nil
}

// StopAPIServer terminates kube-apiserver gracefully (SIGTERM, then SIGKILL
// after 15 s) while etcd keeps running. It does nothing if the apiserver
// is not running.
func (c *Cluster) StopAPIServer() error {
	return c.stopAPIServer(syscall.SIGTERM, 15*time.Second)
}

// KillAPIServer kills kube-apiserver at once (SIGKILL), as a crash would:
// open connections are reset without any goodbye.
func (c *Cluster) KillAPIServer() error {
	return c.stopAPIServer(syscall.SIGKILL, 0)
}

func (c *Cluster) stopAPIServer(sig syscall.Signal, grace time.Duration) error {
	c.mu.Lock()
	api := c.api
	c.api = nil
	c.mu.Unlock()
	if api == nil {
		return nil
	}
	return api.stop(sig, grace)
}

// RestartAPIServer stops kube-apiserver gracefully and starts it again on
// the same port; etcd keeps its data, so resource versions carry on.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	if err := c.StopAPIServer(); err != nil {
		return err
	}
	return c.StartAPIServer(ctx)
}

// Stop terminates kube-apiserver and etcd with their process groups
// (SIGTERM, then SIGKILL after 5 s) and removes the temporary folder
// (unless Options.KeepDir). It is safe to call more than once.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	api, etcd := c.api, c.etcd
	c.api, c.etcd = nil, nil
	already := c.stopped
	c.stopped = true
	c.mu.Unlock()
	if already {
		return nil
	}
	var errs []error
	if api != nil {
		errs = append(errs, api.stop(syscall.SIGTERM, 5*time.Second))
	}
	if etcd != nil {
		errs = append(errs, etcd.stop(syscall.SIGTERM, 5*time.Second))
	}
	if c.client != nil {
		c.client.CloseIdleConnections()
	}
	if !c.opts.KeepDir {
		errs = append(errs, os.RemoveAll(c.dir))
	}
	return errors.Join(errs...)
}

// waitReady polls url (with the bearer token, if any) until it answers
// 200, the process exits, ctx ends or Options.StartTimeout passes.
func (c *Cluster) waitReady(ctx context.Context, p *process, url, token string) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%s: %s: %s", url, resp.Status, bytes.TrimSpace(body))
		} else {
			last = err.Error()
		}
		select {
		case <-p.exited():
			return fmt.Errorf("%s exited: %v (last answer: %s)", p.name, p.err, last)
		case <-ctx.Done():
			return fmt.Errorf("%w (last answer: %s)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// freePorts returns n distinct free TCP ports on 127.0.0.1, below the
// kernel's ephemeral range, and never one it returned before in this
// process. The kernel takes the local ports of outgoing connections and of
// listeners on port 0 (other tests' servers) from that range, so a port
// found free there could be taken before the server binds it: a
// kube-apiserver once failed with "address already in use". Below the
// range only an explicit bind can take it.
func freePorts(n int) ([]int, error) {
	low := ephemeralLow()
	portsMu.Lock()
	defer portsMu.Unlock()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries == 1000 {
			return nil, fmt.Errorf("finding %d free ports in 10000-%d: none free after 1000 tries", n, low-1)
		}
		p := 10000 + rand.IntN(low-10000)
		if handedOut[p] {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		l.Close()
		handedOut[p] = true
		ports = append(ports, p)
	}
	return ports, nil
}

var (
	portsMu   sync.Mutex
	handedOut = map[int]bool{} // the ports freePorts returned
)

// ephemeralLow returns the first port of the kernel's ephemeral range, or
// Linux's default, 32768, if it cannot be read or starts too low to leave
// room below it (ports may then fall inside the range, as before).
func ephemeralLow() int {
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > 11000 {
				return v
			}
		}
	}
	return 32768
}
