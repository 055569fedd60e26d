package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/listwatch/listwatch/internal/apisim"
	"github.com/listwatch/listwatch/reflector"
)

// Cluster is the apiserver an example talks to: a real cluster from a
// kubeconfig, or the simulator. Get one from Connect (the zero value is not
// usable) and Close it once, after stopping the informers that use it.
type Cluster struct {
	// Config is what the example hands to listwatch to reach the apiserver.
	Config *reflector.Config
	// Simulated reports whether Config points at the in-process simulator.
	Simulated bool

	sim       *apisim.Server
	stopChurn context.CancelFunc
	churning  sync.WaitGroup
}

// Connect returns the cluster the example should use, and prints one line
// to out that says which it is.
//
// Unless f.Sim is set it loads the kubeconfig (f.Kubeconfig, else
// $KUBECONFIG, else ~/.kube/config) and checks that its cluster answers;
// an unreachable cluster is an error, never a reason to fall back. Only when
// no kubeconfig exists at all (and none was named with -kubeconfig or
// -context) does it start the simulator, serving workloads with their
// synthetic objects and churn, until Close.
func Connect(ctx context.Context, f Flags, out io.Writer, workloads ...Workload) (*Cluster, error) {
	if !f.Sim {
		cfg, err := reflector.LoadKubeconfig(f.Kubeconfig, f.Context)
		missing := errors.Is(err, reflector.ErrNoKubeconfig) || errors.Is(err, fs.ErrNotExist)
		switch {
		case err == nil:
			return connectReal(ctx, f, cfg, out)
		case !missing:
			return nil, err
		case f.Kubeconfig != "" || f.Context != "" || !errors.Is(err, reflector.ErrNoKubeconfig):
			return nil, fmt.Errorf("%w (use -sim for the simulator)", err)
		}
	}
	return startSim(ctx, f, out, workloads)
}

// connectReal checks that the cluster of cfg answers, and says which
// cluster it is.
func connectReal(ctx context.Context, f Flags, cfg *reflector.Config, out io.Writer) (*Cluster, error) {
	which := "the kubeconfig's current context"
	if f.Context != "" {
		which = fmt.Sprintf("kubeconfig context %q", f.Context)
	}
	host := redactedHost(cfg.Host)
	version, err := serverVersion(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil { // Ctrl-C while waiting: not the cluster's fault
			return nil, fmt.Errorf("%w: %s did not answer yet", ErrStopped, host)
		}
		return nil, fmt.Errorf("cannot reach the cluster at %s (%s): %w", host, which, err)
	}
	fmt.Fprintf(out, "cluster: %s (%s, Kubernetes %s); this example only lists and watches, it changes nothing\n",
		host, which, version)
	return &Cluster{Config: cfg}, nil
}

// redactedHost is host without the user info it may carry (a kubeconfig's
// server "https://user:pass@host" or "https://token@host", which NewClient
// refuses): a user name can be a token too.
func redactedHost(host string) string {
	u, err := url.Parse(host)
	if err != nil {
		return "(a server that is not a URL)"
	}
	if u.User != nil {
		u.User = url.User("xxxxx")
	}
	return u.String()
}

// serverVersion asks the apiserver for its /version, with the kubeconfig's
// credentials, within 15 seconds.
func serverVersion(ctx context.Context, cfg *reflector.Config) (string, error) {
	c, err := reflector.NewClient(cfg)
	if err != nil {
		return "", err
	}
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	v, err := c.ServerVersion(ctx)
	if apierrors.IsForbidden(err) { // reachable, and we are known; just not allowed to see /version
		return "version unknown", nil
	}
	if err != nil {
		return "", err
	}
	return v.GitVersion, nil
}

// startSim starts the simulator, fills it and starts the churn. A Ctrl-C
// (ctx ending) while it fills the simulator is ErrStopped.
func startSim(ctx context.Context, f Flags, out io.Writer, workloads []Workload) (*Cluster, error) {
	pods, rate := f.SimObjects, f.SimChurn
	if pods <= 0 {
		pods = 3000
	}
	if rate <= 0 {
		rate = 20
	}
	// A tick per 10 µs at most (time.NewTicker refuses 0), and per 100 s
	// at least (a longer interval would overflow a Duration).
	rate = min(max(rate, 0.01), 100_000)
	var resources []apisim.Resource
	for _, w := range workloads {
		resources = append(resources, w.Resource)
	}
	sim := apisim.New(apisim.WithResources(resources...))
	if err := sim.Start(); err != nil {
		return nil, fmt.Errorf("starting the simulator: %w", err)
	}

	why := "no kubeconfig found"
	if f.Sim {
		why = "-sim"
	}
	nss := namespaces()
	sets := make([]*liveSet, len(workloads))
	var sizes []string
	for i, w := range workloads {
		n := max(1, int(float64(pods)*w.perPod))
		sets[i] = &liveSet{w: w, target: n}
		sizes = append(sizes, fmt.Sprintf("%d %s", n, w.Name))
	}
	fmt.Fprintf(out, "simulator (%s): an in-process apiserver at %s with %s in %d namespaces, %g changes/s to each\n",
		why, sim.URL(), strings.Join(sizes, ", "), len(nss), rate)

	r := rand.New(rand.NewPCG(1, 2))
	// In chunks, to notice a Ctrl-C; of a multiple of the namespaces, so
	// that Populate's round robin over them goes on from chunk to chunk.
	chunk := 100 * len(nss)
	for _, set := range sets {
		for done := 0; done < set.target; done += chunk {
			if ctx.Err() != nil {
				sim.Close()
				return nil, fmt.Errorf("%w: the simulator was being filled", ErrStopped)
			}
			err := sim.Populate(set.w.Resource, min(chunk, set.target-done), nss, func(ns string, j int) runtime.Object {
				name := objectName(done + j)
				set.add(ns, name)
				return set.w.initial(ns, name, r)
			})
			if err != nil {
				sim.Close()
				return nil, err
			}
		}
		set.next = set.target
	}

	churnCtx, stop := context.WithCancel(context.Background())
	c := &Cluster{Config: &reflector.Config{Host: sim.URL()}, Simulated: true, sim: sim, stopChurn: stop}
	c.churning.Go(func() { churn(churnCtx, sim, sets, nss, rate, r) })
	return c, nil
}

// Close stops the simulator's churn and the simulator itself (nothing for a
// real cluster). Stop the informers first.
func (c *Cluster) Close() {
	if c.sim == nil {
		return
	}
	c.stopChurn()
	c.churning.Wait()
	c.sim.Close()
}
