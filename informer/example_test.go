package informer_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/indexer"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/internal/apisim"
	"github.com/listwatch/listwatch/processor"
	"github.com/listwatch/listwatch/reflector"
)

// A typed informer for pods from a Factory, with a namespace index and a
// handler: wait for the cache, read it by namespace, see a change arrive.
func Example() {
	cluster := startCluster("default/web-1", "default/web-2", "payments/api-1")
	defer cluster.Close()
	// On a real cluster: cfg, err := reflector.LoadKubeconfig("", "")
	cfg := &reflector.Config{Host: cluster.URL()}

	factory, err := informer.NewFactory(cfg)
	if err != nil {
		panic(err)
	}
	pods, err := informer.For[*corev1.Pod](factory, reflector.Target{})
	if err != nil {
		panic(err)
	}
	// A Factory's informers have the namespace index; others may be
	// added with AddIndexers.
	added := make(chan string, 10)
	pods.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{
		AddFunc: func(pod *corev1.Pod, isInInitialList bool) {
			if !isInInitialList {
				added <- indexer.MetaNamespaceKey(pod)
			}
		},
	})

	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx)
	defer factory.Shutdown() // after cancel: waits for the informers to stop
	defer cancel()
	if err := factory.WaitForCacheSync(ctx); err != nil {
		panic(err)
	}
	fmt.Println("cached pods:", pods.Indexer().Len())
	inDefault, _ := pods.Indexer().ByIndex(indexer.NamespaceIndex, "default")
	fmt.Println("in default:", names(inDefault))

	cluster.create("payments", "api-2")
	fmt.Println("added:", <-added)
	// Output:
	// cached pods: 3
	// in default: [web-1 web-2]
	// added: payments/api-2
}

// A handler added to a running informer first gets every cached object, as
// an add with isInInitialList set, then every later change.
func ExampleSharedIndexInformer_AddEventHandler() {
	cluster := startCluster("default/a", "default/b")
	defer cluster.Close()
	factory, err := informer.NewFactory(&reflector.Config{Host: cluster.URL()})
	if err != nil {
		panic(err)
	}
	pods, err := informer.For[*corev1.Pod](factory, reflector.Target{Namespace: "default"})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx)
	defer factory.Shutdown()
	defer cancel()
	if err := factory.WaitForCacheSync(ctx); err != nil {
		panic(err)
	}

	// Added late, after the sync.
	seen := make(chan string, 10)
	pods.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{
		AddFunc: func(pod *corev1.Pod, isInInitialList bool) {
			seen <- fmt.Sprintf("add %s (initial list: %t)", pod.Name, isInInitialList)
		},
		DeleteFunc: func(pod *corev1.Pod, finalStateUnknown bool) {
			seen <- fmt.Sprintf("delete %s", pod.Name)
		},
	})
	// The replay of the cache comes in no particular order.
	replay := []string{<-seen, <-seen}
	slices.Sort(replay)
	fmt.Println(replay[0])
	fmt.Println(replay[1])

	cluster.delete("default", "a")
	fmt.Println(<-seen)
	// Output:
	// add a (initial list: true)
	// add b (initial list: true)
	// delete a
}

// In tests, a mutation detector catches a handler that changes the objects
// it is given, which are the cache's own: it should change a DeepCopy.
func ExampleWithFactoryMutationDetector() {
	cluster := startCluster("default/web-1")
	defer cluster.Close()
	reports := make(chan error, 10)
	factory, err := informer.NewFactory(&reflector.Config{Host: cluster.URL()},
		informer.WithFactoryMutationDetector(time.Hour, func(err error) { reports <- err }))
	if err != nil {
		panic(err)
	}
	pods, err := informer.For[*corev1.Pod](factory, reflector.Target{})
	if err != nil {
		panic(err)
	}
	reg := pods.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{
		AddFunc: func(pod *corev1.Pod, _ bool) {
			pod.Spec.NodeName = "node-1" // wrong: pod is the cached object
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx)
	<-reg.Synced() // the handler has seen the pod
	cancel()
	factory.Shutdown() // the detector checks once more as the informer stops
	first, _, _ := strings.Cut((<-reports).Error(), "\n")
	fmt.Println(first)
	// Output:
	// pods: cached object default/web-1 was modified after it was cached (copy an object before changing it):
}

// An informer put together by hand from a ListerWatcher, and run without a
// Factory. Run returns once everything it started has stopped.
func ExampleNew() {
	cluster := startCluster("default/web-1", "default/web-2")
	defer cluster.Close()
	client, err := reflector.NewClient(&reflector.Config{Host: cluster.URL()})
	if err != nil {
		panic(err)
	}
	lw, err := reflector.NewListerWatcher[*corev1.Pod](client, reflector.Target{Namespace: "default"},
		reflector.WithContentType(reflector.JSON))
	if err != nil {
		panic(err)
	}
	pods := informer.New(lw, informer.WithName[*corev1.Pod](`pods in "default"`))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- pods.Run(ctx) }()
	<-pods.Synced()
	fmt.Println(pods.Name(), "synced:", names(pods.Lister().List(nil)))
	cancel()
	fmt.Println("Run returned:", <-done)
	// Output:
	// pods in "default" synced: [web-1 web-2]
	// Run returned: <nil>
}

// A custom resource, with no Go type of its own, as unstructured objects.
func ExampleForResource() {
	cluster := startCluster()
	defer cluster.Close()
	cluster.createWidget("default", "w1", 3)

	factory, err := informer.NewFactory(&reflector.Config{Host: cluster.URL()})
	if err != nil {
		panic(err)
	}
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	widgets, err := informer.ForResource(factory, gvr, reflector.Target{Kind: "Widget"})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx)
	defer factory.Shutdown()
	defer cancel()
	if err := factory.WaitForCacheSync(ctx); err != nil {
		panic(err)
	}
	w, ok := widgets.Lister().Get("default", "w1")
	size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size")
	fmt.Println(ok, w.GetKind(), w.GetName(), "size", size)
	// Output:
	// true Widget w1 size 3
}

// names returns the sorted names of objs.
func names[T metav1.Object](objs []T) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	slices.Sort(out)
	return out
}

// exampleCluster is the apiserver simulator standing in for a cluster.
type exampleCluster struct{ *apisim.Server }

func exampleWidgets() apisim.Resource {
	return apisim.CustomResource("example.com", "v1", "widgets", "Widget", true)
}

// startCluster starts a simulator with pods and widgets, and the pods
// named "namespace/name".
func startCluster(pods ...string) exampleCluster {
	s := apisim.New(apisim.WithResources(apisim.Pods(), exampleWidgets()))
	if err := s.Start(); err != nil {
		panic(err)
	}
	c := exampleCluster{s}
	for _, key := range pods {
		ns, name, _ := strings.Cut(key, "/")
		c.create(ns, name)
	}
	return c
}

func (c exampleCluster) create(namespace, name string) {
	if _, err := apisim.Of[*corev1.Pod](c.Server, apisim.Pods()).Create(apisim.MakePod(namespace, name)); err != nil {
		panic(err)
	}
}

func (c exampleCluster) delete(namespace, name string) {
	if _, err := apisim.Of[*corev1.Pod](c.Server, apisim.Pods()).Delete(namespace, name); err != nil {
		panic(err)
	}
}

func (c exampleCluster) createWidget(namespace, name string, size int64) {
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"namespace": namespace, "name": name},
		"spec":     map[string]any{"size": size},
	}}
	if _, err := apisim.Of[*unstructured.Unstructured](c.Server, exampleWidgets()).Create(w); err != nil {
		panic(err)
	}
}
