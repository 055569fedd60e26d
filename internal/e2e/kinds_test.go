package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/internal/apisim"
	"github.com/listwatch/listwatch/reflector"
)

// kind is one resource the scenarios write and watch: how to build its
// objects (as unstructured, so one writer serves every kind on both
// servers) and how to get a listwatch informer of its Go type.
type kind struct {
	name     string // the plural, e.g. "pods"
	gvr      schema.GroupVersionResource
	sim      apisim.Resource
	protobuf bool // has a protobuf form (built-in types)
	// object builds a new object with the given labels.
	object func(ns, name string, labels map[string]string) *unstructured.Unstructured
	// fromFactory returns the factory's informer for target, wrapped.
	fromFactory func(f *informer.Factory, target reflector.Target, label string) (*watched, error)
	// standalone builds an informer of its own (informer.New) through c.
	standalone func(c *reflector.Client, target reflector.Target, label string, http []reflector.HTTPOption, refl reflectorTuning) (*watched, error)
}

// reflectorTuning is what a standalone informer's Reflector is given.
type reflectorTuning struct {
	mode            reflector.Mode
	minWatchTimeout time.Duration // 0: the default
}

var (
	pods = kind{
		name: "pods", gvr: corev1.SchemeGroupVersion.WithResource("pods"), sim: apisim.Pods(), protobuf: true,
		object: func(ns, name string, labels map[string]string) *unstructured.Unstructured {
			return newObject("v1", "Pod", ns, name, labels, map[string]any{
				"spec": map[string]any{"containers": []any{map[string]any{"name": "main", "image": "registry.k8s.io/pause:3.10"}}},
			})
		},
		fromFactory: fromFactory[*corev1.Pod],
		standalone:  standalone[*corev1.Pod],
	}
	configMaps = kind{
		name: "configmaps", gvr: corev1.SchemeGroupVersion.WithResource("configmaps"), sim: apisim.ConfigMaps(), protobuf: true,
		object: func(ns, name string, labels map[string]string) *unstructured.Unstructured {
			return newObject("v1", "ConfigMap", ns, name, labels, map[string]any{"data": map[string]any{"k": "v"}})
		},
		fromFactory: fromFactory[*corev1.ConfigMap],
		standalone:  standalone[*corev1.ConfigMap],
	}
	deployments = kind{
		name: "deployments", gvr: appsv1.SchemeGroupVersion.WithResource("deployments"), sim: apisim.Deployments(), protobuf: true,
		object: func(ns, name string, labels map[string]string) *unstructured.Unstructured {
			sel := map[string]any{"app": name}
			return newObject("apps/v1", "Deployment", ns, name, labels, map[string]any{"spec": map[string]any{
				"replicas": int64(1),
				"selector": map[string]any{"matchLabels": sel},
				"template": map[string]any{
					"metadata": map[string]any{"labels": sel},
					"spec":     map[string]any{"containers": []any{map[string]any{"name": "main", "image": "registry.k8s.io/pause:3.10"}}},
				},
			}})
		},
		fromFactory: fromFactory[*appsv1.Deployment],
		standalone:  standalone[*appsv1.Deployment],
	}
	// widgets are the objects of a CustomResourceDefinition: JSON only,
	// watched as unstructured.
	widgets = kind{
		name: "widgets", gvr: widgetsGVR,
		sim: apisim.CustomResource("example.com", "v1", "widgets", "Widget", true),
		object: func(ns, name string, labels map[string]string) *unstructured.Unstructured {
			return newObject("example.com/v1", "Widget", ns, name, labels, map[string]any{"spec": map[string]any{"size": int64(1)}})
		},
		fromFactory: func(f *informer.Factory, target reflector.Target, label string) (*watched, error) {
			inf, err := informer.ForResource(f, widgetsGVR, target)
			if err != nil {
				return nil, err
			}
			return wrap(label, target, inf)
		},
		standalone: func(c *reflector.Client, target reflector.Target, label string, http []reflector.HTTPOption, refl reflectorTuning) (*watched, error) {
			target.Resource = widgetsGVR
			return standalone[*unstructured.Unstructured](c, target, label, http, refl)
		},
	}
	allKinds   = []kind{pods, configMaps, deployments, widgets}
	widgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

// inFactory returns the factory's informer of k for target, with a
// recording oracle; label prefixes its name in failure messages.
func (k kind) inFactory(t *testing.T, f *informer.Factory, target reflector.Target, label string) *watched {
	t.Helper()
	w, err := k.fromFactory(f, target, label)
	if err != nil {
		t.Fatalf("informer for %s %+v: %v", k.name, target, err)
	}
	w.k = k
	return w
}

// alone returns an informer of k of its own (informer.New), for the
// Reflector options a factory does not pass; start it with runStandalone.
func (k kind) alone(t *testing.T, c *reflector.Client, target reflector.Target, label string, http []reflector.HTTPOption, refl reflectorTuning) *watched {
	t.Helper()
	w, err := k.standalone(c, target, label, http, refl)
	if err != nil {
		t.Fatalf("informer for %s %+v: %v", k.name, target, err)
	}
	w.k = k
	return w
}

// newObject builds an unstructured object with extra top-level fields.
func newObject(apiVersion, kind, ns, name string, labels map[string]string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	for k, v := range fields {
		u.Object[k] = v
	}
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(labels)
	return u
}

// watched is one informer under test, of any object type: its oracle
// handler, the errors it reported, and read access to its cache.
type watched struct {
	label  string
	k      kind
	target reflector.Target
	rec    *oracle
	errs   *errorLog
	cache  func() []metav1.Object
	synced <-chan struct{}
	lastRV func() string
	// run runs a standalone informer (nil for a factory's).
	run func(ctx context.Context) error
}

// wrap registers an oracle and an error log on inf, which must not be
// running yet.
func wrap[T metav1.Object](label string, target reflector.Target, inf *informer.SharedIndexInformer[T]) (*watched, error) {
	w := &watched{
		label:  label + " " + inf.Name(),
		target: target,
		errs:   &errorLog{},
		synced: inf.Synced(),
		lastRV: inf.LastSyncResourceVersion,
		cache: func() []metav1.Object {
			var out []metav1.Object
			for _, o := range inf.Indexer().List() {
				out = append(out, o)
			}
			return out
		},
	}
	w.rec = newOracle(w.label)
	w.rec.noSelector = target.LabelSelector == "" && target.FieldSelector == ""
	if err := inf.SetWatchErrorHandler(w.errs.add); err != nil {
		return nil, err
	}
	w.rec.registrationSynced = inf.AddEventHandler(handlerOf[T]{w.rec}).HasSynced
	return w, nil
}

func fromFactory[T reflector.Object](f *informer.Factory, target reflector.Target, label string) (*watched, error) {
	inf, err := informer.For[T](f, target)
	if err != nil {
		return nil, err
	}
	return wrap(label, target, inf)
}

func standalone[T reflector.Object](c *reflector.Client, target reflector.Target, label string, http []reflector.HTTPOption, refl reflectorTuning) (*watched, error) {
	lw, err := reflector.NewListerWatcher[T](c, target, http...)
	if err != nil {
		return nil, err
	}
	opts := []reflector.Option[T]{reflector.WithMode[T](refl.mode)}
	if refl.minWatchTimeout > 0 {
		opts = append(opts, reflector.WithMinWatchTimeout[T](refl.minWatchTimeout))
	}
	inf := informer.New[T](lw, informer.WithName[T](describeTarget(lw.Resource(), target)), informer.WithReflectorOptions(opts...))
	w, err := wrap(label, target, inf)
	if err != nil {
		return nil, err
	}
	w.run = inf.Run
	return w, nil
}

// describeTarget names a standalone informer as the factory would.
func describeTarget(gvr schema.GroupVersionResource, t reflector.Target) string {
	s := gvr.Resource
	if t.Namespace != "" {
		s += fmt.Sprintf(" in %q", t.Namespace)
	}
	if t.LabelSelector != "" {
		s += " (" + t.LabelSelector + ")"
	}
	return s
}

// runStandalone runs standalone informers until the test ends and waits
// for them to sync.
func runStandalone(t *testing.T, ws ...*watched) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, len(ws))
	for _, w := range ws {
		go func() {
			defer func() { done <- struct{}{} }()
			_ = w.run(ctx)
		}()
	}
	t.Cleanup(func() {
		cancel()
		for range ws {
			<-done
		}
	})
	waitSynced(t, time.Minute, ws...)
}

// waitSynced waits until every informer has synced.
func waitSynced(t *testing.T, within time.Duration, ws ...*watched) {
	t.Helper()
	deadline := time.After(within)
	for _, w := range ws {
		select {
		case <-w.synced:
		case <-deadline:
			t.Fatalf("%s did not sync within %s; errors: %v", w.label, within, w.errs)
		}
	}
}

// inNamespaces returns a key filter that keeps the keys of objects in one
// of nss: a cache of all namespaces on the shared cluster also holds other
// tests' objects.
func inNamespaces(nss ...string) func(key string) bool {
	return func(key string) bool {
		for _, ns := range nss {
			if len(key) > len(ns) && key[:len(ns)+1] == ns+"/" {
				return true
			}
		}
		return false
	}
}

// cacheLines returns w's cache as sorted "key@rv#uid" lines.
func (w *watched) cacheLines(keep func(string) bool) []string {
	return linesOf(w.cache(), keep)
}

// converge waits until the cache and the handler's view of every w equal
// what a fresh LIST of the server returns (restricted to namespaces nss),
// and fails the test on an ordering violation. It returns how long it
// took. The LIST is made once: the scenario must have finished writing.
func converge(t *testing.T, srv server, within time.Duration, nss []string, ws ...*watched) time.Duration {
	t.Helper()
	keep := inNamespaces(nss...)
	want := make([][]string, len(ws))
	for i, w := range ws {
		want[i] = linesOf(srv.list(t, w.k, w.target.Namespace, w.target.LabelSelector), keep)
	}
	start := time.Now()
	for {
		var bad []string
		for i, w := range ws {
			if got := w.cacheLines(keep); !slices.Equal(want[i], got) {
				bad = append(bad, w.label+" cache: "+diff(want[i], got))
			} else if got := w.rec.lines(keep); !slices.Equal(want[i], got) {
				bad = append(bad, w.label+" handler: "+diff(want[i], got))
			}
		}
		if len(bad) == 0 {
			break
		}
		if time.Since(start) > within {
			for i, b := range bad {
				if i == 10 {
					t.Errorf("... and %d more", len(bad)-10)
					break
				}
				t.Errorf("not converged after %s: %s", within, b)
			}
			for _, w := range ws {
				if s := w.errs.String(); s != "" {
					t.Logf("%s reported:%s", w.label, s)
				}
				for _, p := range w.rec.problems() {
					t.Error(p) // often the cause: say it before giving up
				}
			}
			t.FailNow()
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, w := range ws {
		for _, p := range w.rec.problems() {
			t.Error(p)
		}
	}
	return time.Since(start)
}
