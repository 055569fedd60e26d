//go:build clientgo

package main

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/listwatch/listwatch/internal/bench/result"
)

// libraryFor returns the library of this build: client-go.
func libraryFor(name string) (library, error) {
	if name != "client-go" {
		return library{}, fmt.Errorf("library %q is not in this build: build without -tags clientgo", name)
	}
	return library{name: "client-go", featureGates: featureGates, newInformer: newClientGo}, nil
}

// limitThroughput is not in this build.
func limitThroughput(context.Context, config, serverInfo, *result.Run) error {
	return fmt.Errorf("the limit library is not in this build: build without -tags clientgo")
}

// featureGates reports each of client-go v0.37.2's feature gates
// (k8s.io/client-go/features) as client-go sees it: its default, unless a
// KUBE_FEATURE_* variable overrides it.
func featureGates() map[string]bool {
	known := []clientfeatures.Feature{
		clientfeatures.AtomicFIFO,
		clientfeatures.ClientsAllowCARotation,
		clientfeatures.ClientsAllowCBOR,
		clientfeatures.ClientsAllowTLSCacheGC,
		clientfeatures.ClientsPreferCBOR,
		clientfeatures.InOrderInformers,
		clientfeatures.InOrderInformersBatchProcess,
		clientfeatures.InformerResourceVersion,
		clientfeatures.UnlockWhileProcessingFIFO,
		clientfeatures.WatchListClient,
	}
	gates := clientfeatures.FeatureGates()
	out := make(map[string]bool, len(known))
	for _, f := range known {
		out[string(f)] = gates.Enabled(f)
	}
	return out
}

// clientGoInformer is an informer from client-go's SharedInformerFactory,
// used the way its documentation shows.
type clientGoInformer struct {
	factory informers.SharedInformerFactory
	inf     cache.SharedIndexInformer
	opts    []string
}

func newClientGo(s setup) (informerUnderTest, error) {
	cfg := &rest.Config{Host: s.server}
	opts := []string{"content=" + s.content}
	switch s.content {
	case "json":
		cfg.ContentType = "application/json"
	case "protobuf":
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	default:
		return nil, fmt.Errorf("unknown content type %q", s.content)
	}
	if s.sharing {
		return nil, fmt.Errorf("-sharing is a listwatch option")
	}
	if s.mode != "" {
		return nil, fmt.Errorf("client-go's list mode is its WatchListClient feature gate: set KUBE_FEATURE_WatchListClient, not -mode")
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	var inf cache.SharedIndexInformer
	switch s.resource {
	case "pods":
		inf = factory.Core().V1().Pods().Informer()
	case "configmaps":
		inf = factory.Core().V1().ConfigMaps().Informer()
	default:
		return nil, fmt.Errorf("unknown resource %q", s.resource)
	}
	if s.strip {
		opts = append(opts, "transform: managedFields=nil")
		err := inf.SetTransform(func(obj any) (any, error) {
			if m, ok := obj.(metav1.Object); ok {
				m.SetManagedFields(nil)
			}
			return obj, nil
		})
		if err != nil {
			return nil, err
		}
	}
	for _, h := range s.handlers {
		hf := cache.ResourceEventHandlerFuncs{}
		if h.add != nil {
			hf.AddFunc = func(obj any) { h.add(obj.(metav1.Object)) }
		}
		if h.update != nil {
			hf.UpdateFunc = func(oldObj, newObj any) { h.update(oldObj.(metav1.Object), newObj.(metav1.Object)) }
		}
		if _, err := inf.AddEventHandler(hf); err != nil {
			return nil, err
		}
	}
	return &clientGoInformer{factory: factory, inf: inf, opts: opts}, nil
}

func (c *clientGoInformer) start(ctx context.Context) { c.factory.StartWithContext(ctx) }

func (c *clientGoInformer) waitSynced(ctx context.Context) error {
	return c.factory.WaitForCacheSyncWithContext(ctx).AsError()
}

func (c *clientGoInformer) len() int { return len(c.inf.GetStore().ListKeys()) }

func (c *clientGoInformer) options() []string { return c.opts }
