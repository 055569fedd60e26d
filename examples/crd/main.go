// Crd watches a custom resource — any resource, in fact — given by group,
// version and resource (and kind, if you want objects of another kind
// refused), with no Go type for it: objects arrive as
// *unstructured.Unstructured, decoded from JSON. It prints one line per
// change with the object's status.phase and spec, then a summary.
// "DELETED?" marks an object whose deletion was noticed by a relist, not
// seen as it happened: the line shows the last state the cache had.
//
//	go run ./examples/crd -duration 10s      # widgets.example.com in the simulator
//	go run ./examples/crd -group cert-manager.io -version v1 -resource certificates -kind Certificate
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/examples/internal/demo"
	"github.com/listwatch/listwatch/indexer"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/processor"
	"github.com/listwatch/listwatch/reflector"
)

func main() { demo.Main(run) }

func run(ctx context.Context, args []string, stdout io.Writer) error {
	var flags demo.Flags
	fs := flag.NewFlagSet("crd", flag.ContinueOnError)
	flags.Register(fs)
	group := fs.String("group", "example.com", "API `group` of the resource")
	version := fs.String("version", "v1", "API `version` of the resource")
	resource := fs.String("resource", "widgets", "the resource's `plural` name, as in its URL")
	kind := fs.String("kind", "", "the `kind` of its objects; others are refused (default: any kind, as the resource serves them)")
	namespace := fs.String("namespace", "", "watch this `namespace` only (default: all namespaces)")
	if err := demo.Parse(fs, args); err != nil {
		return err
	}
	cluster, err := demo.Connect(ctx, flags, stdout, demo.Widgets())
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
	gvr := schema.GroupVersionResource{Group: *group, Version: *version, Resource: *resource}
	objects, err := informer.ForResource(factory, gvr, reflector.Target{Kind: *kind, Namespace: *namespace})
	if err != nil {
		return err
	}
	// A 404 here usually means the CustomResourceDefinition is not
	// installed; the informer keeps retrying, so say it as it happens.
	if err := objects.SetWatchErrorHandler(func(err error) {
		fmt.Fprintln(os.Stderr, "crd: (retrying)", err)
	}); err != nil {
		return err
	}

	type event struct {
		typ string
		obj *unstructured.Unstructured
	}
	runCtx, stop := context.WithCancel(ctx)
	events := make(chan event, 64)
	send := func(typ string, obj *unstructured.Unstructured) {
		select {
		case events <- event{typ, obj}:
		case <-runCtx.Done():
		}
	}
	var listed atomic.Int64 // the objects of the first list, as the handler is told of them
	reg := objects.AddEventHandler(processor.HandlerFuncs[*unstructured.Unstructured]{
		AddFunc: func(obj *unstructured.Unstructured, isInInitialList bool) {
			if isInInitialList {
				listed.Add(1)
				return
			}
			send("ADDED", obj)
		},
		UpdateFunc: func(_, obj *unstructured.Unstructured) { send("MODIFIED", obj) },
		DeleteFunc: func(obj *unstructured.Unstructured, finalStateUnknown bool) {
			if finalStateUnknown { // deleted while we were not watching: the last state we had
				send("DELETED?", obj)
				return
			}
			send("DELETED", obj)
		},
	})

	start := time.Now()
	factory.Start(runCtx)
	// Cancel runCtx first: a handler blocked sending on events returns only
	// then, and Shutdown waits for the handlers.
	defer func() { stop(); factory.Shutdown() }()

	var handled, synced int
	var syncTime time.Duration
	summary := func() {
		fmt.Fprintf(stdout, "summary: synced=%d events=%d sync=%v events/s=%.1f\n",
			synced, handled, syncTime.Round(time.Millisecond), demo.PerSecond(handled, time.Since(start)))
	}
	syncCtx, cancelSync := flags.SyncContext(ctx)
	defer cancelSync()
	if err := factory.WaitForCacheSync(syncCtx); err != nil {
		if ctx.Err() != nil { // Ctrl-C or -duration: not a failure
			fmt.Fprintln(stdout, "stopped before the first list completed")
			summary()
			return nil
		}
		return err
	}
	show := func(e event) {
		handled++
		// Unstructured objects are maps: read fields with the
		// unstructured.Nested* helpers.
		phase, _, _ := unstructured.NestedString(e.obj.Object, "status", "phase")
		spec, _, _ := unstructured.NestedMap(e.obj.Object, "spec")
		specJSON, _ := json.Marshal(spec)
		fmt.Fprintf(stdout, "%s %-8s %-30s %-9s rv=%s spec=%s\n", time.Now().Format("15:04:05.000"), e.typ,
			indexer.MetaNamespaceKey(e.obj), phase, e.obj.GetResourceVersion(), truncate(string(specJSON), 60))
	}
	// The cache has the first list; wait until the handler has counted it
	// too, taking the changes it passes on meanwhile (it would block on a
	// full channel otherwise, and never get to the end of the list).
	var early []event
	for waiting := reg.Synced(); waiting != nil; {
		select {
		case <-waiting:
			waiting = nil
		case e := <-events:
			early = append(early, e)
		case <-ctx.Done():
			summary()
			return nil
		}
	}
	synced, syncTime = int(listed.Load()), time.Since(start)
	fmt.Fprintf(stdout, "synced %d %s in %v; now watching\n", synced, gvr.GroupResource(), syncTime.Round(time.Millisecond))
	for _, e := range early {
		show(e)
	}

	for {
		select {
		case e := <-events:
			show(e)
		case <-ctx.Done():
			summary()
			return nil
		}
	}
}

// truncate cuts s to n runes, never in the middle of one.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
