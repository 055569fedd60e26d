package listwatchtest_test

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/listwatchtest"
	"github.com/listwatch/listwatch/processor"
	"github.com/listwatch/listwatch/reflector"
)

// An informer over a Source, as a unit test of a handler would set one up:
// the test writes, the handler hears of it.
func Example() {
	src := listwatchtest.NewSource[*corev1.Pod]()
	web, _ := src.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}})
	_, err := src.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}})
	fmt.Println("created again:", apierrors.IsAlreadyExists(err), err)

	pods := informer.New[*corev1.Pod](src)
	deleted := make(chan struct{})
	pods.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{
		AddFunc: func(pod *corev1.Pod, isInInitialList bool) {
			fmt.Printf("add %s rv=%s initial=%t\n", pod.Name, pod.ResourceVersion, isInInitialList)
		},
		UpdateFunc: func(old, pod *corev1.Pod) {
			fmt.Printf("update %s rv=%s→%s labels=%v\n", pod.Name, old.ResourceVersion, pod.ResourceVersion, pod.Labels)
		},
		DeleteFunc: func(pod *corev1.Pod, _ bool) {
			fmt.Printf("delete %s\n", pod.Name)
			close(deleted)
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- pods.Run(ctx) }()
	if err := informer.WaitForSync(ctx, pods); err != nil {
		panic(err)
	}

	web.Labels = map[string]string{"version": "2"}
	if _, err := src.Update(web); err != nil { // web has the stored resourceVersion
		panic(err)
	}
	_, err = src.Update(web) // now it has not
	if err := src.Delete("default", "web"); err != nil {
		panic(err)
	}
	<-deleted
	cancel()
	<-stopped
	fmt.Println("updated with an old resourceVersion:", apierrors.IsConflict(err))
	// Output:
	// created again: true pods "web" already exists
	// add web rv=1 initial=true
	// update web rv=1→2 labels=map[version:2]
	// delete web
	// updated with an old resourceVersion: true
}

// A Factory whose informers see what a server would serve their Targets:
// each informer of pods gets a view of the Source for its namespace and
// selectors, and a pod that stops matching leaves its cache.
func ExampleSource_For() {
	src := listwatchtest.NewSource[*corev1.Pod]()
	for _, p := range []struct{ ns, name, app string }{{"shop", "web", "web"}, {"shop", "db", "db"}, {"blog", "web", "web"}} {
		_, err := src.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: p.name, Labels: map[string]string{"app": p.app}}})
		if err != nil {
			panic(err)
		}
	}
	f, err := informer.NewFactory(nil, informer.WithListerWatcherFor(src.For))
	if err != nil {
		panic(err)
	}
	webInShop, err := informer.For[*corev1.Pod](f, reflector.Target{Namespace: "shop", LabelSelector: "app=web"})
	if err != nil {
		panic(err)
	}
	left := make(chan struct{})
	webInShop.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{
		DeleteFunc: func(pod *corev1.Pod, _ bool) {
			fmt.Printf("delete %s/%s app=%s\n", pod.Namespace, pod.Name, pod.Labels["app"])
			close(left)
		},
	})
	_, err = informer.For[*corev1.Pod](f, reflector.Target{FieldSelector: "spec.priority=1"}) // not a field pods are selected by
	fmt.Println("bad request:", apierrors.IsBadRequest(err))

	ctx, cancel := context.WithCancel(context.Background())
	defer f.Shutdown()
	defer cancel()
	f.Start(ctx)
	if err := f.WaitForCacheSync(ctx); err != nil {
		panic(err)
	}
	fmt.Println("cached:", webInShop.Indexer().ListKeys())

	web, _ := src.Get("shop", "web")
	web.Labels["app"] = "retired"
	if _, err := src.Update(web); err != nil {
		panic(err)
	}
	<-left
	fmt.Println("cached:", webInShop.Indexer().ListKeys())
	// Output:
	// bad request: true
	// cached: [shop/web]
	// delete shop/web app=web
	// cached: []
}

// A controller writes its status through /status, as against
// kube-apiserver: Update keeps the stored status, and UpdateStatus
// writes the status alone, keeping the spec and the labels.
func ExampleSource_UpdateStatus() {
	src := listwatchtest.NewSource[*appsv1.Deployment]()
	replicas := int32(1)
	d, err := src.Create(&appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Labels: map[string]string{"app": "web"}},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas},
	})
	if err != nil {
		panic(err)
	}

	d.Status.ReadyReplicas = 1
	updated, err := src.Update(d)
	if err != nil {
		panic(err)
	}
	fmt.Printf("Update: rv=%s ready=%d\n", updated.ResourceVersion, updated.Status.ReadyReplicas)

	d.Spec.Replicas = new(int32(5)) // ignored by a status write, as the labels are
	d.Labels = nil
	d.Status.ObservedGeneration = d.Generation
	written, err := src.UpdateStatus(d)
	if err != nil {
		panic(err)
	}
	fmt.Printf("UpdateStatus: rv=%s ready=%d replicas=%d labels=%v generation=%d\n",
		written.ResourceVersion, written.Status.ReadyReplicas, *written.Spec.Replicas, written.Labels, written.Generation)

	_, err = listwatchtest.NewSource[*corev1.ConfigMap]().UpdateStatus(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "c"}})
	fmt.Println("a ConfigMap has no status:", apierrors.IsNotFound(err), err)
	// Output:
	// Update: rv=1 ready=0
	// UpdateStatus: rv=2 ready=1 replicas=1 labels=map[app:web] generation=1
	// a ConfigMap has no status: true the server could not find the requested resource (put configmaps c)
}
