// Deployments keeps a view of a cluster's deployments by namespace and
// prints it as it changes: one line per namespace at the start, then, every
// second, a line for each namespace whose deployments changed.
//
//	go run ./examples/deployments -duration 10s
//
// This is the DeploymentMap of the article that listwatch started from,
// done with what the informer already has. That example kept its own global
// map of namespace → []*Deployment next to the informer, updated from the
// handlers with Load-then-Store sequences that race, slices shared between
// readers and writers, and an Update that fails when the add has not been
// seen. None of that is needed: the informer's cache already holds every
// deployment, current and safe to read from any goroutine, and a namespace
// index on it answers "the deployments of namespace X" without a scan. The
// handler here only says which namespace to look at again.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/listwatch/listwatch/examples/internal/demo"
	"github.com/listwatch/listwatch/indexer"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/processor"
	"github.com/listwatch/listwatch/reflector"
)

func main() { demo.Main(run) }

func run(ctx context.Context, args []string, stdout io.Writer) error {
	var flags demo.Flags
	fs := flag.NewFlagSet("deployments", flag.ContinueOnError)
	flags.Register(fs)
	if err := demo.Parse(fs, args); err != nil {
		return err
	}
	cluster, err := demo.Connect(ctx, flags, stdout, demo.Deployments())
	if err != nil {
		return err
	}
	defer cluster.Close()
	ctx, cancel := flags.Timed(ctx)
	defer cancel()

	factory, err := informer.NewFactory(cluster.Config)
	if err != nil {
		return err
	}
	deployments, err := informer.For[*appsv1.Deployment](factory, reflector.Target{})
	if err != nil {
		return err
	}
	// The view: the cache's namespace index, which every informer of a
	// Factory has (as client-go's do).
	cache := deployments.Indexer()

	// The handler only passes on which namespace changed.
	runCtx, stop := context.WithCancel(ctx)
	changed := make(chan string, 64)
	note := func(d *appsv1.Deployment) {
		select {
		case changed <- d.Namespace:
		case <-runCtx.Done():
		}
	}
	var listed atomic.Int64 // the deployments of the first list
	reg := deployments.AddEventHandler(processor.HandlerFuncs[*appsv1.Deployment]{
		AddFunc: func(d *appsv1.Deployment, isInInitialList bool) {
			if isInInitialList {
				listed.Add(1)
				return
			}
			note(d)
		},
		UpdateFunc: func(_, d *appsv1.Deployment) { note(d) },
		DeleteFunc: func(d *appsv1.Deployment, _ bool) { note(d) },
	})

	start := time.Now()
	factory.Start(runCtx)
	// Cancel runCtx first: a handler blocked sending on changed returns only
	// then, and Shutdown waits for the handlers.
	defer func() { stop(); factory.Shutdown() }()

	syncCtx, cancelSync := flags.SyncContext(ctx)
	defer cancelSync()
	var events int
	summary := func(synced int, syncTime time.Duration) {
		fmt.Fprintf(stdout, "summary: synced=%d events=%d namespaces=%d sync=%v events/s=%.1f\n",
			synced, events, len(cache.ListIndexFuncValues(indexer.NamespaceIndex)),
			syncTime.Round(time.Millisecond), demo.PerSecond(events, time.Since(start)))
	}
	if err := factory.WaitForCacheSync(syncCtx); err != nil {
		if ctx.Err() != nil { // Ctrl-C or -duration: not a failure
			fmt.Fprintln(stdout, "stopped before the first list completed")
			summary(0, 0)
			return nil
		}
		return err
	}
	// Wait until the handler has counted the first list too, taking the
	// namespaces it passes on meanwhile (it would block on a full channel
	// otherwise, and never get to the end of the list).
	dirty := map[string]bool{}
	take := func(ns string) { // a change the handler passed on: counted, and shown at the next tick
		events++
		dirty[ns] = true
	}
	for waiting := reg.Synced(); waiting != nil; {
		select {
		case <-waiting:
			waiting = nil
		case ns := <-changed:
			take(ns)
		case <-ctx.Done():
			summary(0, 0)
			return nil
		}
	}
	synced, syncTime := int(listed.Load()), time.Since(start)
	fmt.Fprintf(stdout, "synced %d deployments in %v:\n", synced, syncTime.Round(time.Millisecond))
	namespaces := cache.ListIndexFuncValues(indexer.NamespaceIndex)
	slices.Sort(namespaces)
	for _, ns := range namespaces {
		fmt.Fprintln(stdout, "  "+describe(cache, ns))
	}

	// Every second, show the namespaces that changed. A namespace changed
	// ten times in that second is shown once, as it is now.
	show := func(now time.Time) {
		for _, ns := range slices.Sorted(maps.Keys(dirty)) {
			fmt.Fprintf(stdout, "%s %s\n", now.Format("15:04:05"), describe(cache, ns))
		}
		clear(dirty)
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case ns := <-changed:
			take(ns)
		case now := <-tick.C:
			show(now)
		case <-ctx.Done():
			// The changes of the last second too, and those passed on
			// already: every change the summary counts has been shown.
			for drained := false; !drained; {
				select {
				case ns := <-changed:
					take(ns)
				default:
					drained = true
				}
			}
			show(time.Now())
			summary(synced, syncTime)
			return nil
		}
	}
}

// describe summarizes the deployments of one namespace, read from the
// cache through the namespace index.
func describe(cache *indexer.Indexer[*appsv1.Deployment], namespace string) string {
	deps, err := cache.ByIndex(indexer.NamespaceIndex, namespace)
	if err != nil {
		return fmt.Sprintf("%-12s %v", namespace, err)
	}
	var want, ready int32
	var notReady []string
	for _, d := range deps {
		n := int32(1) // the API's default when spec.replicas is unset
		if d.Spec.Replicas != nil {
			n = *d.Spec.Replicas
		}
		want += n
		ready += d.Status.ReadyReplicas
		if d.Status.ReadyReplicas < n {
			notReady = append(notReady, fmt.Sprintf("%s %d/%d", d.Name, d.Status.ReadyReplicas, n))
		}
	}
	line := fmt.Sprintf("%-12s %3d deployments, %4d/%d replicas ready", namespace, len(deps), ready, want)
	if len(notReady) > 0 {
		slices.Sort(notReady)
		if len(notReady) > 3 {
			notReady = append(notReady[:3], "…")
		}
		line += "; waiting for " + strings.Join(notReady, ", ")
	}
	return line
}
