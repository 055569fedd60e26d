//go:build !clientgo

package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/processor"
	"github.com/listwatch/listwatch/reflector"
)

// libraryFor returns the libraries of this build: listwatch (and limit,
// which run handles itself).
func libraryFor(name string) (library, error) {
	if name != "listwatch" {
		return library{}, fmt.Errorf("library %q is not in this build: build with -tags clientgo for client-go", name)
	}
	return library{name: "listwatch", newInformer: newListwatch}, nil
}

func newListwatch(s setup) (informerUnderTest, error) {
	switch s.resource {
	case "pods":
		return newListwatchFor[*corev1.Pod](s)
	case "configmaps":
		return newListwatchFor[*corev1.ConfigMap](s)
	}
	return nil, fmt.Errorf("unknown resource %q", s.resource)
}

// listwatchInformer is a listwatch SharedIndexInformer from a Factory,
// configured the way the README shows.
type listwatchInformer[T reflector.Object] struct {
	factory *informer.Factory
	inf     *informer.SharedIndexInformer[T]
	opts    []string
}

func newListwatchFor[T reflector.Object](s setup) (*listwatchInformer[T], error) {
	var opts []string
	var fopts []informer.FactoryOption
	httpOpts := []reflector.HTTPOption{}
	switch s.content {
	case "json":
		httpOpts = append(httpOpts, reflector.WithContentType(reflector.JSON))
	case "protobuf":
		httpOpts = append(httpOpts, reflector.WithContentType(reflector.Protobuf))
	default:
		return nil, fmt.Errorf("unknown content type %q", s.content)
	}
	opts = append(opts, "content="+s.content)
	if s.strip {
		httpOpts = append(httpOpts, reflector.WithoutManagedFields())
		opts = append(opts, "WithoutManagedFields", "transform: managedFields=nil")
	}
	if s.decodeWorkers > 0 {
		httpOpts = append(httpOpts, reflector.WithDecodeWorkers(s.decodeWorkers))
		opts = append(opts, fmt.Sprintf("WithDecodeWorkers(%d)", s.decodeWorkers))
	}
	fopts = append(fopts, informer.WithHTTPOptions(httpOpts...))
	if s.sharing {
		fopts = append(fopts, informer.WithSharing())
		opts = append(opts, "WithSharing")
	}
	switch s.mode {
	case "":
	case "auto":
		fopts = append(fopts, informer.WithListMode(reflector.Auto))
	case "listwatch":
		fopts = append(fopts, informer.WithListMode(reflector.ListWatch))
	case "watchlist":
		fopts = append(fopts, informer.WithListMode(reflector.WatchList))
	default:
		return nil, fmt.Errorf("unknown list mode %q", s.mode)
	}
	if s.mode != "" {
		opts = append(opts, "mode="+s.mode)
	}
	f, err := informer.NewFactory(&reflector.Config{Host: s.server}, fopts...)
	if err != nil {
		return nil, err
	}
	inf, err := informer.For[T](f, reflector.Target{})
	if err != nil {
		return nil, err
	}
	if s.strip {
		err := inf.SetTransform(func(obj T) (T, error) {
			obj.SetManagedFields(nil)
			return obj, nil
		})
		if err != nil {
			return nil, err
		}
	}
	for _, h := range s.handlers {
		hf := processor.HandlerFuncs[T]{}
		if h.add != nil {
			hf.AddFunc = func(obj T, _ bool) { h.add(obj) }
		}
		if h.update != nil {
			hf.UpdateFunc = func(oldObj, newObj T) { h.update(oldObj, newObj) }
		}
		inf.AddEventHandler(hf)
	}
	return &listwatchInformer[T]{factory: f, inf: inf, opts: opts}, nil
}

func (l *listwatchInformer[T]) start(ctx context.Context) { l.factory.Start(ctx) }

func (l *listwatchInformer[T]) waitSynced(ctx context.Context) error {
	return l.factory.WaitForCacheSync(ctx)
}

func (l *listwatchInformer[T]) len() int { return l.inf.Indexer().Len() }

func (l *listwatchInformer[T]) options() []string { return l.opts }
