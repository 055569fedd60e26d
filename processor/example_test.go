package processor_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/processor"
)

func examplePod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, ResourceVersion: rv}}
}

// Two handlers each get every notification, in order, on their own
// goroutines. Each reports what it saw once it sees the Delete.
func Example() {
	p := processor.New[*corev1.Pod]()

	var lines []string
	printed := make(chan struct{})
	p.AddListener(processor.HandlerFuncs[*corev1.Pod]{
		AddFunc: func(pod *corev1.Pod, isInInitialList bool) {
			lines = append(lines, fmt.Sprintf("add %s (initial list: %t)", pod.Name, isInInitialList))
		},
		UpdateFunc: func(oldPod, newPod *corev1.Pod) {
			lines = append(lines, fmt.Sprintf("update %s %s->%s", newPod.Name, oldPod.ResourceVersion, newPod.ResourceVersion))
		},
		DeleteFunc: func(pod *corev1.Pod, finalStateUnknown bool) {
			lines = append(lines, fmt.Sprintf("delete %s", pod.Name))
			close(printed)
		},
	}, processor.ListenerOptions{})

	var count int
	counted := make(chan struct{})
	p.AddListener(processor.HandlerFuncs[*corev1.Pod]{
		AddFunc:    func(*corev1.Pod, bool) { count++ },
		UpdateFunc: func(_, _ *corev1.Pod) { count++ },
		DeleteFunc: func(*corev1.Pod, bool) { count++; close(counted) },
	}, processor.ListenerOptions{})

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		p.Run(ctx)
	}()

	v1, v2 := examplePod("web", "1"), examplePod("web", "2")
	p.Distribute(processor.Notification[*corev1.Pod]{Kind: processor.Add, Key: "default/web", New: v1, IsInInitialList: true}, false)
	p.Distribute(processor.Notification[*corev1.Pod]{Kind: processor.Update, Key: "default/web", Old: v1, New: v2}, false)
	p.Distribute(processor.Notification[*corev1.Pod]{Kind: processor.Delete, Key: "default/web", Old: v2}, false)

	<-printed
	for _, l := range lines {
		fmt.Println(l)
	}
	<-counted
	fmt.Println("the other handler counted", count)

	cancel()
	<-stopped // Run returns once every listener goroutine has exited
	// Output:
	// add web (initial list: true)
	// update web 1->2
	// delete web
	// the other handler counted 3
}

// A panicking handler is recovered; the panic is reported to the error
// handler and the listener goes on with its next notification.
func ExampleWithErrorHandler() {
	errs := make(chan error, 1)
	p := processor.New[*corev1.Pod](processor.WithErrorHandler(func(err error) { errs <- err }))

	handled := make(chan string)
	p.AddListener(processor.HandlerFuncs[*corev1.Pod]{
		AddFunc: func(pod *corev1.Pod, _ bool) {
			if pod.Name == "bad" {
				panic(errors.New("cannot handle this pod"))
			}
			handled <- pod.Name
		},
	}, processor.ListenerOptions{})

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		p.Run(ctx)
	}()

	p.Distribute(processor.Notification[*corev1.Pod]{Kind: processor.Add, Key: "default/bad", New: examplePod("bad", "1")}, false)
	p.Distribute(processor.Notification[*corev1.Pod]{Kind: processor.Add, Key: "default/good", New: examplePod("good", "1")}, false)

	err := <-errs
	fmt.Println(err)
	var pe *processor.HandlerPanicError
	if errors.As(err, &pe) {
		fmt.Println("key:", pe.Key, "kind:", pe.Kind)
	}
	fmt.Println("then handled:", <-handled)

	cancel()
	<-stopped
	// Output:
	// processor: listener 1 (processor.HandlerFuncs[*k8s.io/api/core/v1.Pod]) panicked handling Add of "default/bad": cannot handle this pod
	// key: default/bad kind: Add
	// then handled: good
}

// A listener has synced once the upstream has delivered its initial list
// and the listener's handler has handled every notification of it.
func ExampleListener_HasSynced() {
	var listed atomic.Bool // the informer's HasSynced
	p := processor.New[*corev1.Pod](processor.WithUpstreamSynced(listed.Load))

	release := make(chan struct{})
	caughtUp := make(chan struct{})
	l := p.AddListener(processor.HandlerFuncs[*corev1.Pod]{
		AddFunc: func(_ *corev1.Pod, isInInitialList bool) {
			if isInInitialList {
				<-release // a slow handler
				return
			}
			close(caughtUp)
		},
	}, processor.ListenerOptions{})

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		p.Run(ctx)
	}()

	for _, name := range []string{"a", "b"} {
		p.Distribute(processor.Notification[*corev1.Pod]{Kind: processor.Add, Key: "default/" + name, New: examplePod(name, "1"), IsInInitialList: true}, false)
	}
	listed.Store(true)
	fmt.Println("initial list distributed, handler busy:", l.HasSynced())

	close(release)
	p.Distribute(processor.Notification[*corev1.Pod]{Kind: processor.Add, Key: "default/c", New: examplePod("c", "1")}, false)
	<-caughtUp // the handler is past the initial list
	fmt.Println("initial list handled:", l.HasSynced())

	cancel()
	<-stopped
	// Output:
	// initial list distributed, handler busy: false
	// initial list handled: true
}

// With MaxPending, a listener whose handler is behind merges repeated
// updates of one object: the handler skips intermediate states but sees the
// latest one, and every delete.
func ExampleListenerOptions_maxPending() {
	p := processor.New[*corev1.Pod]()

	busy := make(chan struct{})
	release := make(chan struct{})
	done := make(chan struct{})
	var lines []string
	p.AddListener(processor.HandlerFuncs[*corev1.Pod]{
		AddFunc: func(pod *corev1.Pod, _ bool) {
			lines = append(lines, "add "+pod.Name+" "+pod.ResourceVersion)
			close(busy)
			<-release
		},
		UpdateFunc: func(oldPod, newPod *corev1.Pod) {
			lines = append(lines, fmt.Sprintf("update %s %s->%s", newPod.Name, oldPod.ResourceVersion, newPod.ResourceVersion))
		},
		DeleteFunc: func(pod *corev1.Pod, _ bool) {
			lines = append(lines, "delete "+pod.Name+" "+pod.ResourceVersion)
			close(done)
		},
	}, processor.ListenerOptions{MaxPending: 1})

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		p.Run(ctx)
	}()

	p.Distribute(processor.Notification[*corev1.Pod]{Kind: processor.Add, Key: "default/web", New: examplePod("web", "1")}, false)
	<-busy // the handler is stuck on the Add
	for rv := 1; rv < 100; rv++ {
		p.Distribute(processor.Notification[*corev1.Pod]{
			Kind: processor.Update, Key: "default/web",
			Old: examplePod("web", fmt.Sprint(rv)), New: examplePod("web", fmt.Sprint(rv+1)),
		}, false)
	}
	p.Distribute(processor.Notification[*corev1.Pod]{Kind: processor.Delete, Key: "default/web", Old: examplePod("web", "100")}, false)
	close(release)
	<-done
	for _, l := range lines {
		fmt.Println(l)
	}

	cancel()
	<-stopped
	// Output:
	// add web 1
	// update web 1->100
	// delete web 100
}

// A FilteringHandler shows its handler only the pods labelled app=web: a
// pod relabelled away from web is, for that handler, deleted, and one
// relabelled to web is added.
func ExampleFilteringHandler() {
	p := processor.New[*corev1.Pod]()
	done := make(chan struct{})
	p.AddListener(processor.FilteringHandler[*corev1.Pod]{
		Filter: func(pod *corev1.Pod) bool { return pod.Labels["app"] == "web" },
		Handler: processor.HandlerFuncs[*corev1.Pod]{
			AddFunc:    func(pod *corev1.Pod, _ bool) { fmt.Println("add", pod.Name, pod.ResourceVersion) },
			UpdateFunc: func(_, pod *corev1.Pod) { fmt.Println("update", pod.Name, pod.ResourceVersion) },
			DeleteFunc: func(pod *corev1.Pod, _ bool) {
				fmt.Println("delete", pod.Name, pod.ResourceVersion)
				if pod.ResourceVersion == "4" { // the last notification
					close(done)
				}
			},
		},
	}, processor.ListenerOptions{})

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		p.Run(ctx)
	}()

	pod := func(name, rv, app string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, ResourceVersion: rv, Labels: map[string]string{"app": app}}}
	}
	web1, web2, db3, web4 := pod("web", "1", "web"), pod("web", "2", "web"), pod("web", "3", "db"), pod("web", "4", "web")
	db := pod("db", "1", "db")
	for _, n := range []processor.Notification[*corev1.Pod]{
		{Kind: processor.Add, Key: "default/web", New: web1},
		{Kind: processor.Add, Key: "default/db", New: db},
		{Kind: processor.Update, Key: "default/web", Old: web1, New: web2},
		{Kind: processor.Update, Key: "default/web", Old: web2, New: db3},
		{Kind: processor.Update, Key: "default/web", Old: db3, New: web4},
		{Kind: processor.Delete, Key: "default/db", Old: db},
		{Kind: processor.Delete, Key: "default/web", Old: web4},
	} {
		p.Distribute(n, false)
	}
	<-done
	cancel()
	<-stopped
	// Output:
	// add web 1
	// update web 2
	// delete web 2
	// add web 4
	// delete web 4
}
