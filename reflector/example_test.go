package reflector_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/internal/apisim"
	"github.com/listwatch/listwatch/reflector"
)

// printStore is a Store that describes each call on a channel. An informer
// uses a deltafifo.FIFO here.
type printStore struct{ calls chan string }

func (s printStore) Add(p *corev1.Pod) error    { s.calls <- "Add " + p.Name; return nil }
func (s printStore) Update(p *corev1.Pod) error { s.calls <- "Update " + p.Name; return nil }
func (s printStore) Delete(p *corev1.Pod) error { s.calls <- "Delete " + p.Name; return nil }
func (s printStore) Replace(list []*corev1.Pod, _ string) error {
	var names []string
	for _, p := range list {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	s.calls <- fmt.Sprintf("Replace %v", names)
	return nil
}

// A Reflector lists the pods into its Store with one Replace, then turns
// each watch event into an Add, Update or Delete.
func Example() {
	server, pods := startServer("web-1", "web-2")
	defer server.Close()
	// On a real cluster: cfg, err := reflector.LoadKubeconfig("", "")
	cfg := &reflector.Config{Host: server.URL()}

	client, err := reflector.NewClient(cfg)
	if err != nil {
		panic(err)
	}
	lw, err := reflector.NewListerWatcher[*corev1.Pod](client, reflector.Target{Namespace: "default"})
	if err != nil {
		panic(err)
	}
	store := printStore{calls: make(chan string, 10)}
	r := reflector.New(lw, reflector.Store[*corev1.Pod](store))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	fmt.Println(<-store.calls)

	p, _ := pods.Get("default", "web-1")
	p.Labels["version"] = "2"
	_, _ = pods.Update(p)
	_, _ = pods.Delete("default", "web-2")
	fmt.Println(<-store.calls)
	fmt.Println(<-store.calls)

	cancel()
	<-done
	// Output:
	// Replace [web-1 web-2]
	// Update web-1
	// Delete web-2
}

// A ListerWatcher can be used on its own: one page of a LIST, decoded one
// item at a time.
func ExampleNewListerWatcher() {
	server, _ := startServer("a", "b", "c")
	defer server.Close()
	client, err := reflector.NewClient(&reflector.Config{Host: server.URL()})
	if err != nil {
		panic(err)
	}
	lw, err := reflector.NewListerWatcher[*corev1.Pod](client, reflector.Target{Namespace: "default"},
		reflector.WithContentType(reflector.Protobuf))
	if err != nil {
		panic(err)
	}
	fmt.Println("resource:", lw.Resource().Resource, lw.Resource().Version)
	meta, err := lw.List(context.Background(), reflector.ListOptions{Limit: 2}, func(p *corev1.Pod) error {
		fmt.Println("item:", p.Name)
		return nil
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("more pages:", meta.Continue != "")
	// Output:
	// resource: pods v1
	// item: a
	// item: b
	// more pages: true
}

// LoadKubeconfig reads a kubeconfig as kubectl does. Printing the Config
// never shows a credential.
func ExampleLoadKubeconfig() {
	dir, err := os.MkdirTemp("", "kubeconfig")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "config")
	err = os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters:
- name: dev
  cluster: {server: "https://dev.example.com:6443"}
users:
- name: me
  user: {token: "s3cr3t"}
contexts:
- name: dev
  context: {cluster: dev, user: me, namespace: payments}
current-context: dev
`), 0o600)
	if err != nil {
		panic(err)
	}

	cfg, err := reflector.LoadKubeconfig(path, "")
	if err != nil {
		panic(err)
	}
	fmt.Println(cfg.Host, cfg.Namespace)
	fmt.Println("token shown:", strings.Contains(fmt.Sprint(cfg), "s3cr3t"))

	// A file named but missing is an error of its own, not ErrNoKubeconfig
	// (which says that no default kubeconfig exists at all).
	_, err = reflector.LoadKubeconfig(filepath.Join(dir, "missing"), "")
	fmt.Println("missing:", errors.Is(err, fs.ErrNotExist), "no kubeconfig:", errors.Is(err, reflector.ErrNoKubeconfig))
	// Output:
	// https://dev.example.com:6443 payments
	// token shown: false
	// missing: true no kubeconfig: false
}

// startServer starts the apiserver simulator with the pods of default
// named names.
func startServer(names ...string) (*apisim.Server, apisim.Objects[*corev1.Pod]) {
	s := apisim.New(apisim.WithResources(apisim.Pods()))
	if err := s.Start(); err != nil {
		panic(err)
	}
	pods := apisim.Of[*corev1.Pod](s, apisim.Pods())
	for _, name := range names {
		if _, err := pods.Create(apisim.MakePod("default", name)); err != nil {
			panic(err)
		}
	}
	return s, pods
}
