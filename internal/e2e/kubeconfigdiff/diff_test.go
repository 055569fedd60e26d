package kubeconfigdiff

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/rest"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/transport"
)

// defaultSeeds is how many random kubeconfigs TestKubeconfigMatchesClientcmd
// tries.
const defaultSeeds = 300

// numSeeds is defaultSeeds, or LISTWATCH_KCDIFF_SEEDS=N for a longer run
// (6,000 take about 30 s).
func numSeeds(t *testing.T) uint64 {
	s := os.Getenv("LISTWATCH_KCDIFF_SEEDS")
	if s == "" {
		return defaultSeeds
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 {
		t.Fatalf("LISTWATCH_KCDIFF_SEEDS=%q: want a positive number", s)
	}
	return n
}

// requestTimeout bounds one GET; every server is local.
const requestTimeout = 10 * time.Second

// TestKubeconfigMatchesClientcmd loads random kubeconfigs with client-go's
// clientcmd and with rest.LoadKubeconfig, sends a GET through each
// library's client, and compares what each server recorded.
func TestKubeconfigMatchesClientcmd(t *testing.T) {
	env := newEnv(t)
	for _, ed := range edges {
		t.Run(strings.ReplaceAll(ed.name, " ", "_"), func(t *testing.T) {
			env.check(t, ed.name, ed.write(t, env, t.TempDir()))
		})
	}
	for seed := range numSeeds(t) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			g := &generator{r: rand.New(rand.NewPCG(seed, 0x6b63646966)), pki: env.pki, srv: env.srv, plugin: env.plugin}
			s := g.generate(t, t.TempDir())
			env.check(t, fmt.Sprintf("seed %d", seed), s)
		})
	}
	env.checkDifferencesSeen(t)
}

// env is what every case shares: the certificates, the servers, the
// plugin, and how often each expected difference was seen.
type env struct {
	pki    *pki
	srv    *servers
	plugin string
	runs   atomic.Int64
	seen   map[string]int // expected difference → cases that showed it
	stages map[string]int // "client-go stage/listwatch stage" → cases
}

func newEnv(t *testing.T) *env {
	t.Helper()
	plugin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := newPKI(t)
	return &env{pki: p, srv: startServers(t, p), plugin: plugin, seen: map[string]int{}, stages: map[string]int{}}
}

// outcome is how far one library got with a kubeconfig, and what the
// server saw.
type outcome struct {
	// stage is "config" (refused before sending: the kubeconfig did not
	// load or the client was not built), "request" (the GET failed) or
	// "sent" (the server answered it). clientcmd reads the files a
	// kubeconfig names when it loads it, listwatch when it builds the
	// Client: both are "config".
	stage string
	where string // finer: load, client, request, status
	err   error
	url   string // the URL requested
	ns    string // the namespace, when it was known
	hasNS bool
	rec   record
	// ignoresDisableCompression: client-go's client is made of
	// http.DefaultTransport, whatever DisableCompression says (see
	// clientGoIgnoresDisableCompression).
	ignoresDisableCompression bool
}

func (o outcome) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "stage %s", o.stage)
	if o.err != nil {
		fmt.Fprintf(&b, " (%s: %v)", o.where, o.err)
	}
	if o.hasNS {
		fmt.Fprintf(&b, ", namespace %q", o.ns)
	}
	if o.stage == "sent" {
		fmt.Fprintf(&b, ", server saw %+v", o.rec)
	}
	return b.String()
}

// send GETs u with do and returns what the server recorded of it.
func (e *env) send(o outcome, do func(*http.Request) (*http.Response, error), u *url.URL, id string) outcome {
	o.url = u.String()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		o.stage, o.where, o.err = "request", "request", err
		return o
	}
	resp, err := do(req)
	if err != nil {
		o.stage, o.where, o.err = "request", "request", err
		return o
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	rec, ok := e.srv.rec.take(id)
	switch {
	case resp.StatusCode != http.StatusOK:
		o.stage, o.where, o.err = "request", "status", fmt.Errorf("%s", resp.Status)
	case !ok:
		o.stage, o.where, o.err = "request", "status", fmt.Errorf("200 OK from a server that recorded nothing")
	default:
		o.stage, o.rec = "sent", rec
	}
	return o
}

// runClientGo loads s as kubectl does and sends a GET with client-go.
func (e *env) runClientGo(s *scenario, id string) outcome {
	rules := &clientcmd.ClientConfigLoadingRules{}
	if s.explicit {
		rules.ExplicitPath = s.files[0]
	} else {
		rules.Precedence = s.files
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: s.context})
	var o outcome
	if ns, _, err := cc.Namespace(); err == nil {
		o.ns, o.hasNS = ns, true
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		o.stage, o.where, o.err = "config", "load", err
		return o
	}
	hc, err := restclient.HTTPClientFor(cfg)
	if err != nil {
		o.stage, o.where, o.err = "config", "client", err
		return o
	}
	defer hc.CloseIdleConnections()
	if cfg.DisableCompression && cfg.Proxy == nil && cfg.Dial == nil {
		tc, err := cfg.TransportConfig()
		if err != nil {
			o.stage, o.where, o.err = "config", "client", err
			return o
		}
		tlsConfig, err := transport.TLSConfigFor(tc)
		o.ignoresDisableCompression = err == nil && tlsConfig == nil
	}
	base, _, err := restclient.DefaultServerUrlFor(cfg)
	if err != nil {
		o.stage, o.where, o.err = "config", "client", err
		return o
	}
	return e.send(o, hc.Do, base.JoinPath("kcdiff", id), id)
}

// runListwatch loads s with rest.LoadKubeconfig and sends a GET with
// rest.Client.
func (e *env) runListwatch(t *testing.T, s *scenario, id string) outcome {
	path := s.files[0]
	if !s.explicit {
		path = ""
		t.Setenv("KUBECONFIG", strings.Join(s.files, string(filepath.ListSeparator)))
	}
	var o outcome
	cfg, err := rest.LoadKubeconfig(path, s.context)
	if err != nil {
		o.stage, o.where, o.err = "config", "load", err
		return o
	}
	o.ns, o.hasNS = cfg.Namespace, true
	c, err := rest.NewClient(cfg)
	if err != nil {
		o.stage, o.where, o.err = "config", "client", err
		return o
	}
	defer c.CloseConnections()
	return e.send(o, c.Do, c.URL("/kcdiff/"+id, nil), id)
}

// check runs s through both libraries and compares them.
func (e *env) check(t *testing.T, name string, s *scenario) {
	t.Helper()
	n := e.runs.Add(1)
	cg := e.runClientGo(s, fmt.Sprint(n, "-client-go"))
	lw := e.runListwatch(t, s, fmt.Sprint(n, "-listwatch"))
	e.stages[cg.stage+"/"+lw.stage]++
	if r := refusalFor(cg, lw); r != nil {
		e.seen[r.name]++
		return
	}
	var note string
	orig, cur := cg, s
	for round := 1; ; round++ {
		rs, ok := readingsFor(cg, lw)
		if !ok {
			break
		}
		rewritten, changed := cur.rewrite(t, rs)
		if !changed {
			note += "; the rewriting changed nothing"
			break
		}
		// clientcmd refused what listwatch reads in a way a reading
		// names: client-go again, on the kubeconfig so rewritten (in
		// rounds: clientcmd stops at a file that does not decode before
		// it validates the rest).
		for _, r := range rs {
			e.seen[r.name]++
			note += "; " + r.name
		}
		cur = rewritten
		cg = e.runClientGo(cur, fmt.Sprint(n, "-client-go-rewritten-", round))
	}
	if note != "" {
		note = fmt.Sprintf(" (client-go ran on the kubeconfig rewritten as listwatch reads it%s; it refused the original: %v)", note, orig.err)
	}
	if cg.ignoresDisableCompression && cg.stage == "sent" && lw.stage == "sent" &&
		cg.rec.AcceptEncoding == "gzip" && lw.rec.AcceptEncoding == "" {
		e.seen[clientGoIgnoresDisableCompression]++
		cg.rec.AcceptEncoding = ""
	}
	var diffs []string
	if cg.stage != lw.stage {
		diffs = append(diffs, "how far they got")
	}
	if cg.hasNS && lw.hasNS && cg.ns != lw.ns {
		diffs = append(diffs, "the namespace")
	}
	if cg.stage == "sent" && lw.stage == "sent" && fmt.Sprint(cg.rec) != fmt.Sprint(lw.rec) {
		diffs = append(diffs, "what the server saw")
	}
	if len(diffs) > 0 {
		desc := s.describe()
		if cur != s {
			desc += "rewritten for client-go as:\n" + cur.describe()
		}
		t.Errorf("%s: listwatch and client-go differ in %s%s\nclient-go: %v\nlistwatch: %v\n%s",
			name, strings.Join(diffs, ", "), note, cg, lw, desc)
	}
}
