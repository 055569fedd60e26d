package e2e

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/internal/e2e/cluster"
	"github.com/listwatch/listwatch/reflector"
)

// TestListOnlyRole: a role that may list pods but not watch them.
// kube-apiserver answers the watch, and the streaming list (a watch), with
// 403 Forbidden. The informer syncs with LIST, in both modes, and follows
// the server by listing again after each forbidden watch, as client-go's
// does, rather than never sync (Auto) or keep its first list (ListWatch).
func TestListOnlyRole(t *testing.T) {
	admin := adminAPI(t, shared)
	const ns = "list-only-role"
	admin.createNamespace(ns)
	admin.must("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/"+ns+"/roles", map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
		"metadata": map[string]any{"name": "list-pods"},
		"rules": []any{map[string]any{
			"apiGroups": []any{""}, "resources": []any{"pods"}, "verbs": []any{"get", "list"},
		}},
	}, http.StatusCreated)
	admin.must("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/"+ns+"/rolebindings", map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
		"metadata": map[string]any{"name": "list-pods"},
		"subjects": []any{map[string]any{
			"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": cluster.UnprivilegedUser,
		}},
		"roleRef": map[string]any{"kind": "Role", "apiGroup": "rbac.authorization.k8s.io", "name": "list-pods"},
	}, http.StatusCreated)
	admin.createPod(ns, "first", nil)
	cfg := &reflector.Config{Host: shared.URL(), BearerToken: shared.UnprivilegedToken(), TLS: reflector.TLSConfig{CAData: shared.CAPEM()}}

	for name, mode := range map[string]reflector.Mode{"auto": reflector.Auto, "list-watch": reflector.ListWatch} {
		t.Run(name, func(t *testing.T) {
			f, err := informer.NewFactory(cfg, informer.WithListMode(mode))
			require.NoError(t, err)
			pods, err := informer.For[*corev1.Pod](f, reflector.Target{Namespace: ns})
			require.NoError(t, err)
			errs := &errorLog{}
			require.NoError(t, pods.SetWatchErrorHandler(errs.add))
			ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
			defer cancel()
			f.Start(ctx)
			defer f.Shutdown()
			require.NoError(t, f.WaitForCacheSync(ctx), "synced with LIST")
			_, ok := pods.Lister().Get(ns, "first")
			require.True(t, ok)

			name := "after-sync-" + name
			admin.createPod(ns, name, nil)
			for {
				if _, ok := pods.Lister().Get(ns, name); ok {
					break
				}
				select {
				case <-ctx.Done():
					t.Fatalf("%s never reached the cache: %v", name, pods.LastError())
				case <-time.After(100 * time.Millisecond):
				}
			}
			forbidden := 0
			for _, e := range errs.since(time.Time{}) {
				if strings.Contains(e.err.Error(), "403") {
					forbidden++
				}
			}
			assert.Positive(t, forbidden, "the forbidden watches are reported")
		})
	}
}

// TestListOnlyResource: componentstatuses, which kube-apiserver lists but
// does not watch (405, the streaming list too), and lists without a
// resourceVersion, on the list and on its objects. The informer syncs with
// LIST in both modes, typed, unstructured and metadata-only, caches the
// objects as they are, and lists again on a timer rather than watch from
// nothing; nothing is reported. It used to never sync, where client-go's
// caches them.
func TestListOnlyResource(t *testing.T) {
	cfg := &reflector.Config{Host: shared.URL(), BearerToken: shared.AdminToken(), TLS: reflector.TLSConfig{CAData: shared.CAPEM()}}
	gvr := corev1.SchemeGroupVersion.WithResource("componentstatuses")
	for name, mode := range map[string]reflector.Mode{"auto": reflector.Auto, "list-watch": reflector.ListWatch} {
		t.Run(name, func(t *testing.T) {
			f, err := informer.NewFactory(cfg, informer.WithListMode(mode))
			require.NoError(t, err)
			typed, err := informer.For[*corev1.ComponentStatus](f, reflector.Target{})
			require.NoError(t, err)
			unstructured, err := informer.ForResource(f, gvr, reflector.Target{})
			require.NoError(t, err)
			metadata, err := informer.ForMetadata(f, gvr, reflector.Target{})
			require.NoError(t, err)
			errs := &errorLog{}
			for _, inf := range []interface{ SetWatchErrorHandler(func(error)) error }{typed, unstructured, metadata} {
				require.NoError(t, inf.SetWatchErrorHandler(errs.add))
			}
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			f.Start(ctx)
			defer f.Shutdown()
			require.NoError(t, f.WaitForCacheSync(ctx))
			etcd := cachedListOnly(t, typed, "typed")
			assert.NotEmpty(t, etcd.Conditions)
			cachedListOnly(t, unstructured, "unstructured")
			cachedListOnly(t, metadata, "metadata")
			assert.Empty(t, errs.since(time.Time{}), "nothing to report")
		})
	}
	// What the informers above cannot show within a test: the timer. With
	// an interval of 1 s, the Reflector lists again every second or so and,
	// once synced, never opens a watch (one from "" would start at the
	// newest state).
	for name, mode := range map[string]reflector.Mode{"auto/timer": reflector.Auto, "list-watch/timer": reflector.ListWatch} {
		t.Run(name, func(t *testing.T) {
			client, err := reflector.NewClient(cfg)
			require.NoError(t, err)
			lw, err := reflector.NewListerWatcher[*corev1.ComponentStatus](client, reflector.Target{})
			require.NoError(t, err)
			counted := &countingLW{ListerWatcher: lw}
			inf := informer.New[*corev1.ComponentStatus](counted, informer.WithReflectorOptions(
				reflector.WithMode[*corev1.ComponentStatus](mode), reflector.WithRelistInterval[*corev1.ComponentStatus](time.Second)))
			errs := &errorLog{}
			require.NoError(t, inf.SetWatchErrorHandler(errs.add))
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			done := make(chan struct{})
			go func() { defer close(done); inf.Run(ctx) }()
			defer func() { cancel(); <-done }()
			require.NoError(t, informer.WaitForSync(ctx, inf))
			listed, watched := counted.lists.Load(), counted.watches.Load() // Auto's first attempt streams: 405
			require.Eventually(t, func() bool { return counted.lists.Load()-listed >= 2 }, 10*time.Second, 50*time.Millisecond,
				"not listed again twice within 10 s, with an interval of 1 s to 1.1 s")
			assert.Equal(t, watched, counted.watches.Load(), "a watch opened for a resource listed without a resourceVersion")
			assert.Empty(t, errs.since(time.Time{}), "nothing to report")
		})
	}
}

// countingLW counts the List and Watch calls of a ListerWatcher.
type countingLW struct {
	reflector.ListerWatcher[*corev1.ComponentStatus]
	lists, watches atomic.Int64
}

func (c *countingLW) List(ctx context.Context, opts reflector.ListOptions, add func(*corev1.ComponentStatus) error) (reflector.ListMeta, error) {
	c.lists.Add(1)
	return c.ListerWatcher.List(ctx, opts, add)
}

func (c *countingLW) Watch(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.ComponentStatus], error) {
	c.watches.Add(1)
	return c.ListerWatcher.Watch(ctx, opts)
}

// cachedListOnly checks that inf, an informer of componentstatuses, holds
// etcd-0 without a resourceVersion, and has nothing to watch from.
func cachedListOnly[T reflector.Object](t *testing.T, inf *informer.SharedIndexInformer[T], form string) T {
	t.Helper()
	etcd, ok := inf.Lister().Get("", "etcd-0")
	require.True(t, ok, "%s: etcd-0 cached; the cache holds %d objects", form, len(inf.Lister().List(labels.Everything())))
	assert.Empty(t, etcd.GetResourceVersion(), form)
	assert.Empty(t, inf.LastSyncResourceVersion(), form)
	assert.NoError(t, inf.LastError(), form)
	return etcd
}
