// Podwatch is a live view of pods, like `kubectl get pods -w`: it lists
// the pods, showing how many have arrived so far, then prints one line per
// change (time, type, namespace/name, phase, resourceVersion) until Ctrl-C
// or -duration, and ends with a summary line. "DELETED?" marks a pod whose
// deletion was noticed by a relist, not seen as it happened: the line shows
// the last state the cache had.
//
//	go run ./examples/podwatch                      # your cluster, or the simulator if you have no kubeconfig
//	go run ./examples/podwatch -sim -duration 10s   # the simulator, for ten seconds
//	go run ./examples/podwatch -namespace payments -selector app=web
//
// It assembles an informer by hand — a Client, an HTTP ListerWatcher for
// pods, a SharedIndexInformer with a namespace index, one handler — where
// examples/factory lets a Factory do it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/examples/internal/demo"
	"github.com/listwatch/listwatch/indexer"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/processor"
	"github.com/listwatch/listwatch/reflector"
)

func main() { demo.Main(run) }

// event is one change a handler saw, on its way to the printing loop.
type event struct {
	typ string
	pod *corev1.Pod
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	var flags demo.Flags
	fs := flag.NewFlagSet("podwatch", flag.ContinueOnError)
	flags.Register(fs)
	namespace := fs.String("namespace", "", "watch this `namespace` only (default: all namespaces)")
	selector := fs.String("selector", "", "label `selector`, such as app=web,tier!=db")
	useProtobuf := fs.Bool("protobuf", false, "ask for protobuf (the default for pods)")
	useJSON := fs.Bool("json", false, "ask for JSON")
	if err := demo.Parse(fs, args); err != nil {
		return err
	}
	contentType := reflector.AutoContentType
	switch {
	case *useProtobuf && *useJSON:
		return demo.BadUsage(fs, "-protobuf and -json exclude each other")
	case *useProtobuf:
		contentType = reflector.Protobuf
	case *useJSON:
		contentType = reflector.JSON
	}

	cluster, err := demo.Connect(ctx, flags, stdout, demo.Pods())
	if err != nil {
		return err
	}
	defer cluster.Close()
	ctx, cancel := flags.Timed(ctx)
	defer cancel()

	// 1. A ListerWatcher for pods: it sends the LIST and WATCH requests and
	//    decodes each pod as its bytes arrive. We never look at
	//    managedFields, so they are not even decoded.
	client, err := reflector.NewClient(cluster.Config)
	if err != nil {
		return err
	}
	// Its connections are ours to close once the informer has stopped (an
	// HTTP/2 connection would otherwise stay open for its idle timeout).
	defer client.CloseConnections()
	lw, err := reflector.NewListerWatcher[*corev1.Pod](client,
		reflector.Target{Namespace: *namespace, LabelSelector: *selector},
		reflector.WithContentType(contentType),
		reflector.WithoutManagedFields())
	if err != nil {
		return err
	}

	// 2. The informer: reflector → DeltaFIFO → cache (here with an index of
	//    pods by namespace) and the processor that feeds the handlers.
	pods := informer.New(lw,
		informer.WithName[*corev1.Pod]("pods"),
		informer.WithIndexers(indexer.Indexers[*corev1.Pod]{
			indexer.NamespaceIndex: indexer.NamespaceIndexFunc[*corev1.Pod],
		}))
	// The transform sees every pod as it is decoded, before the cache does:
	// counting there shows the progress of the first list.
	var decoded atomic.Int64
	if err := pods.SetTransform(func(p *corev1.Pod) (*corev1.Pod, error) {
		decoded.Add(1)
		return p, nil
	}); err != nil {
		return err
	}
	// The informer retries failed lists and watches by itself; say why.
	// Its own line: the progress line on the terminal has no newline yet.
	if err := pods.SetWatchErrorHandler(func(err error) {
		fmt.Fprintln(os.Stderr, "\npodwatch: (retrying)", err)
	}); err != nil {
		return err
	}

	// 3. One handler. It runs on its own goroutine and hands each change
	//    that is not part of the first list to the loop below; it counts
	//    the pods of the first list.
	runCtx, stop := context.WithCancel(ctx)
	var listed atomic.Int64
	events := make(chan event, 64)
	send := func(typ string, p *corev1.Pod) {
		select {
		case events <- event{typ, p}:
		case <-runCtx.Done():
		}
	}
	handler := pods.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, isInInitialList bool) {
			if isInInitialList {
				listed.Add(1)
				return
			}
			send("ADDED", p)
		},
		UpdateFunc: func(_, p *corev1.Pod) { send("MODIFIED", p) },
		DeleteFunc: func(p *corev1.Pod, finalStateUnknown bool) {
			if finalStateUnknown { // deleted while we were not watching
				send("DELETED?", p)
				return
			}
			send("DELETED", p)
		},
	})

	// 4. Run the informer until we return, and wait for its goroutines.
	var running sync.WaitGroup
	defer func() { stop(); running.Wait() }()
	start := time.Now()
	running.Go(func() { _ = pods.Run(runCtx) })

	// 5. Print the progress until the handler has had the first list, and
	//    the events. (A change to a pod of the first list may come before
	//    that: it is delivered right after that pod's add.) A select case
	//    is switched off by setting its channel to nil.
	progress := demo.NewProgress(stdout)
	defer progress.Clear() // an error returned is printed on a line of its own
	progressTick := time.NewTicker(progress.Interval())
	defer progressTick.Stop()
	tick, synced, syncDeadline := progressTick.C, handler.Synced(), flags.SyncDeadline()
	var inList, handled int
	var syncTime time.Duration
	for {
		select {
		case <-tick:
			n := int(decoded.Load())
			progress.Show("listing pods: %d so far, %.0f/s", n, demo.PerSecond(n, time.Since(start)))
		case <-synced:
			syncTime, inList = time.Since(start), int(listed.Load())
			tick, synced, syncDeadline = nil, nil, nil
			progress.Clear()
			fmt.Fprintf(stdout, "synced %d pods in %v (%.0f/s); now watching\n",
				inList, syncTime.Round(time.Millisecond), demo.PerSecond(inList, syncTime))
		case <-syncDeadline:
			if err := pods.LastError(); err != nil {
				return fmt.Errorf("pods not synced after %v: %w", flags.SyncTimeout, err)
			}
			return fmt.Errorf("pods not synced after %v, still listing (raise -sync-timeout?)", flags.SyncTimeout)
		case e := <-events:
			progress.Clear()
			handled++
			fmt.Fprintf(stdout, "%s %-8s %-40s %-9s rv=%s\n", time.Now().Format("15:04:05.000"),
				e.typ, indexer.MetaNamespaceKey(e.pod), e.pod.Status.Phase, e.pod.ResourceVersion)
		case <-ctx.Done():
			progress.Clear()
			if synced != nil {
				fmt.Fprintln(stdout, "stopped before the first list completed")
			}
			fmt.Fprintf(stdout, "summary: synced=%d events=%d sync=%v events/s=%.1f\n",
				inList, handled, syncTime.Round(time.Millisecond), demo.PerSecond(handled, time.Since(start)))
			return nil
		}
	}
}
