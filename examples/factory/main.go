// Factory watches several resources — pods, deployments and config maps —
// through one informer Factory: one HTTP client and connection pool, one
// Start, one WaitForCacheSync that says which cache did not sync and why.
// Its handlers are added only after the caches have synced, to show that a
// late handler misses nothing: it first gets every cached object as an add
// (isInInitialList set), then every change.
//
//	go run ./examples/factory -duration 10s
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/listwatch/listwatch/examples/internal/demo"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/processor"
	"github.com/listwatch/listwatch/reflector"
)

func main() { demo.Main(run) }

func run(ctx context.Context, args []string, stdout io.Writer) error {
	var flags demo.Flags
	fs := flag.NewFlagSet("factory", flag.ContinueOnError)
	flags.Register(fs)
	if err := demo.Parse(fs, args); err != nil {
		return err
	}
	cluster, err := demo.Connect(ctx, flags, stdout, demo.Pods(), demo.Deployments(), demo.ConfigMaps())
	if err != nil {
		return err
	}
	defer cluster.Close()
	ctx, cancel := flags.Timed(ctx)
	defer cancel()

	// One factory, one informer per resource. Asking again for the same
	// type and target returns the same informer: that is the "shared".
	factory, err := informer.NewFactory(cluster.Config)
	if err != nil {
		return err
	}
	pods, err := informer.For[*corev1.Pod](factory, reflector.Target{})
	if err != nil {
		return err
	}
	deployments, err := informer.For[*appsv1.Deployment](factory, reflector.Target{})
	if err != nil {
		return err
	}
	configMaps, err := informer.For[*corev1.ConfigMap](factory, reflector.Target{})
	if err != nil {
		return err
	}

	start := time.Now()
	factory.Start(ctx)
	defer factory.Shutdown() // stops every informer, waits for its goroutines, closes the connections

	// Wait for all three caches. On failure (an RBAC rule missing, a
	// resource the server does not serve) the error names each informer
	// that did not sync and its last error.
	syncCtx, cancelSync := flags.SyncContext(ctx)
	defer cancelSync()
	if err := factory.WaitForCacheSync(syncCtx); err != nil {
		if ctx.Err() != nil { // Ctrl-C or -duration: not a failure
			fmt.Fprintln(stdout, "stopped before the first lists completed")
			fmt.Fprintln(stdout, "summary: synced=0 events=0")
			return nil
		}
		return err
	}
	syncTime := time.Since(start)
	nPods, nDeployments, nConfigMaps := pods.Indexer().Len(), deployments.Indexer().Len(), configMaps.Indexer().Len()
	synced := nPods + nDeployments + nConfigMaps
	fmt.Fprintf(stdout, "synced in %v: %d pods, %d deployments, %d config maps\n", syncTime.Round(time.Millisecond),
		nPods, nDeployments, nConfigMaps)

	// A Lister reads the cache with label selectors.
	web := labels.SelectorFromSet(labels.Set{"app": "web"})
	fmt.Fprintf(stdout, "pods with app=web: %d, of which in kube-system: %d\n",
		len(pods.Lister().List(web)), len(pods.Lister().ByNamespace("kube-system", web)))

	// Handlers added now, late: each first gets the cache's contents as
	// adds, then the changes. Its registration's Synced channel closes when
	// it has handled the adds of everything that was cached.
	counters := []*counter{{name: "pods"}, {name: "deployments"}, {name: "configmaps"}}
	unsynced := []<-chan struct{}{
		pods.AddEventHandler(handler[*corev1.Pod](counters[0])).Synced(),
		deployments.AddEventHandler(handler[*appsv1.Deployment](counters[1])).Synced(),
		configMaps.AddEventHandler(handler[*corev1.ConfigMap](counters[2])).Synced(),
	}
	fmt.Fprintln(stdout, "added 3 handlers; every second, what each was told: cached objects replayed, then +added ~updated -deleted")

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		var next <-chan struct{} // the first registration not yet synced; nil: none left
		if len(unsynced) > 0 {
			next = unsynced[0]
		}
		select {
		case <-next:
			if unsynced = unsynced[1:]; len(unsynced) == 0 {
				fmt.Fprintln(stdout, "the late handlers have handled every object that was cached when they were added")
			}
		case now := <-tick.C:
			var parts []string
			for _, c := range counters {
				parts = append(parts, c.String())
			}
			fmt.Fprintf(stdout, "%s %s\n", now.Format("15:04:05"), strings.Join(parts, "  "))
		case <-ctx.Done():
			var events, replayed int64
			for _, c := range counters {
				events += c.added.Load() + c.updated.Load() + c.deleted.Load()
				replayed += c.replayed.Load()
			}
			fmt.Fprintf(stdout, "summary: synced=%d events=%d replayed=%d sync=%v events/s=%.1f\n",
				synced, events, replayed, syncTime.Round(time.Millisecond), demo.PerSecond(int(events), time.Since(start)))
			return nil
		}
	}
}

// counter counts what one handler was told. Its fields are atomic: the
// handler writes them on its own goroutine while the main loop reads them.
type counter struct {
	name                    string
	replayed                atomic.Int64 // adds of objects cached before the handler was added
	added, updated, deleted atomic.Int64
}

// handler returns a handler of T that counts into c.
func handler[T metav1.Object](c *counter) processor.HandlerFuncs[T] {
	return processor.HandlerFuncs[T]{
		AddFunc: func(_ T, isInInitialList bool) {
			if isInInitialList {
				c.replayed.Add(1)
			} else {
				c.added.Add(1)
			}
		},
		UpdateFunc: func(_, _ T) { c.updated.Add(1) },
		DeleteFunc: func(_ T, _ bool) { c.deleted.Add(1) },
	}
}

func (c *counter) String() string {
	return fmt.Sprintf("%s %d replayed, +%d ~%d -%d", c.name,
		c.replayed.Load(), c.added.Load(), c.updated.Load(), c.deleted.Load())
}
