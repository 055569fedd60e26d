package reflector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"k8s.io/apimachinery/pkg/version"

	"github.com/listwatch/listwatch/internal/rest"
	"github.com/listwatch/listwatch/internal/wire"
)

// Config says how to reach and authenticate to an apiserver: its URL, TLS
// material and credentials. Get one from LoadKubeconfig or InClusterConfig,
// or fill one in. Formatting or logging a Config never shows a credential.
type Config = rest.Config

// TLSConfig is the TLS part of a Config.
type TLSConfig = rest.TLSConfig

// ImpersonationConfig is the identity a Config acts as (Config.Impersonate),
// as a kubeconfig user's as, as-uid, as-groups and as-user-extra say.
type ImpersonationConfig = rest.ImpersonationConfig

// MinHTTP2PingInterval is the least Config.HTTP2ReadIdleTimeout and
// Config.HTTP2PingTimeout taken; shorter ones are raised to it.
const MinHTTP2PingInterval = rest.MinHTTP2PingInterval

// ErrNoKubeconfig is returned by LoadKubeconfig when no kubeconfig file
// exists where it looked (none was named), or those it found define
// nothing; a program may then try InClusterConfig or a default.
var ErrNoKubeconfig = rest.ErrNoKubeconfig

// ErrNotInCluster is returned by InClusterConfig outside a pod.
var ErrNotInCluster = rest.ErrNotInCluster

// LoadKubeconfig reads a kubeconfig file, as kubectl does: path, or else
// the files listed in $KUBECONFIG, or else ~/.kube/config; and the named
// context, or else the current one. It refuses what kubectl refuses (such
// as certificate-authority-data beside certificate-authority), and also a
// server without a scheme and a context naming a user that is not
// defined, which kubectl would take silently.
func LoadKubeconfig(path, context string) (*Config, error) {
	return rest.LoadKubeconfig(path, context)
}

// InClusterConfig returns the Config of the service account of the pod the
// program runs in.
func InClusterConfig() (*Config, error) { return rest.InClusterConfig() }

// Client is an HTTP client for one apiserver, shared by any number of
// ListerWatchers: they share its connections (one HTTP/2 connection for
// all watches, when the server speaks HTTP/2). Create it with NewClient; it
// is safe for concurrent use.
type Client struct {
	rest    *rest.Client
	timeout time.Duration // Config.Timeout: bounds each short request
	// strings is the table of interned strings that every ListerWatcher
	// made with this Client decodes with: informers of one resource in
	// many namespaces, or of many resources, share the strings they have
	// in common and the table's fixed cost (about 47 KiB each before).
	strings *wire.Strings
}

// NewClient returns a Client for the apiserver that cfg describes. It fails
// on a malformed URL, unreadable TLS material, or credentials that would be
// sent over plain http without cfg.AllowBearerOverHTTP.
func NewClient(cfg *Config, opts ...ClientOption) (*Client, error) {
	if cfg == nil {
		return nil, errors.New("reflector.NewClient: nil Config")
	}
	var o clientOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	rc, err := rest.NewClient(cfg, rest.WithLogger(o.logger))
	if err != nil {
		return nil, err
	}
	return &Client{rest: rc, timeout: max(cfg.Timeout, 0), strings: wire.NewStrings()}, nil
}

// ClientOption configures a Client.
type ClientOption func(*clientOptions)

type clientOptions struct {
	logger *slog.Logger // nil: discard
}

// WithClientLogger sets where the Client reports what it does on its own:
// bearer token file re-reads, exec plugin runs, client certificate
// rotations. The default discards everything. Credentials are never logged.
func WithClientLogger(l *slog.Logger) ClientOption {
	return func(o *clientOptions) { o.logger = l }
}

// ServerVersion asks the apiserver for its version (GET /version): a cheap
// way to check that it is reachable and that the credentials are accepted.
func (c *Client) ServerVersion(ctx context.Context) (*version.Info, error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	resp, err := c.get(ctx, "/version", nil, mediaJSON)
	if err != nil {
		return nil, fmt.Errorf("asking for the server version: %w", err)
	}
	defer resp.Body.Close()
	var v version.Info
	if err := json.NewDecoder(rest.LimitReader(resp.Body, 1<<20)).Decode(&v); err != nil {
		return nil, fmt.Errorf("reading the server version: %w", err)
	}
	return &v, nil
}

// CloseIdleConnections closes the connections the Client keeps open for
// reuse and is not using.
func (c *Client) CloseIdleConnections() { c.rest.CloseIdleConnections() }

// CloseConnections closes every connection the Client has open, idle or
// carrying a request: answers being read (watches) fail. Call it when done
// with the Client: an HTTP/2 connection is not idle yet right after its
// last watch was cancelled, and would stay open until the idle timeout
// (90 s). It also ends a run of an exec credential plugin under way, and
// waits for it, so that nothing the Client started is left running. The
// Client stays usable: a later request opens a new connection (one handed
// a closed connection by HTTP/2's pool is sent once more), and runs the
// plugin again if it needs a credential.
func (c *Client) CloseConnections() { c.rest.CloseConnections() }

// get sends a GET and returns the response if it is a 2xx, or the
// server's answer as an error.
func (c *Client) get(ctx context.Context, path string, q url.Values, accept string) (*http.Response, error) {
	u := c.rest.URL(path, q)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", accept)
	resp, err := c.rest.Do(req)
	if err != nil {
		return nil, err
	}
	if err := rest.CheckResponse(resp); err != nil { // it closed the body
		return nil, err
	}
	return resp, nil
}
