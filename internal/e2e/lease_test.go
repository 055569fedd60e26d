package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/reflector"
)

// Events that expire together: kube-apiserver puts the Events created
// within min(5% of --event-ttl, 60 s), in whole seconds (1 s here), on one
// etcd lease, and etcd deletes the keys of an expired lease in one
// transaction, so a watch gets their DELETED events all at one
// resourceVersion. The Reflector applies them all, with no error and no
// relist (it took the second for a server going backwards, and listed
// again: about once a minute for an informer of Events on a busy cluster).
func TestEventsThatExpireTogether(t *testing.T) {
	t.Parallel()
	c := startCluster(t, "--event-ttl=20s")
	a := adminAPI(t, c)
	client, err := reflector.NewClient(&reflector.Config{Host: c.URL(), BearerToken: c.AdminToken(), TLS: reflector.TLSConfig{CAData: c.CAPEM()}})
	require.NoError(t, err)
	for name, mode := range map[string]reflector.Mode{"list-watch": reflector.ListWatch, "watch-list": reflector.WatchList} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := "lease-" + name
			a.createNamespace(ns)
			lw, err := reflector.NewListerWatcher[*corev1.Event](client, reflector.Target{Namespace: ns})
			require.NoError(t, err)
			store := &eventDeletes{}
			var mu sync.Mutex
			var errs []error
			r := reflector.New(lw, reflector.Store[*corev1.Event](store), reflector.WithMode[*corev1.Event](mode),
				reflector.WithErrorHandler[*corev1.Event](func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }))
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() { defer close(done); r.Run(ctx) }()
			defer func() { cancel(); <-done }()
			require.Eventually(t, func() bool { return r.LastSyncResourceVersion() != "" }, time.Minute, 10*time.Millisecond)

			// Five Events within a second or so: at most two leases, so
			// at least three expire at one revision. The check asks for
			// two, which holds with three leases too (writes that straddle
			// the reuse of one): the point is that deletions share one.
			for i := range 5 {
				a.must("POST", "/api/v1/namespaces/"+ns+"/events", map[string]any{
					"apiVersion": "v1", "kind": "Event",
					"metadata":       map[string]any{"name": fmt.Sprint("e", i)},
					"involvedObject": map[string]any{"kind": "Pod", "name": "x", "namespace": ns},
					"reason":         "Test", "message": "m", "type": "Normal",
				}, http.StatusCreated)
			}
			require.Eventually(t, func() bool { return len(store.deletedAt()) == 5 }, 90*time.Second, 100*time.Millisecond,
				"the five Events expire")
			rvs := map[string]int{}
			for _, rv := range store.deletedAt() {
				rvs[rv]++
			}
			shared := 0
			for _, n := range rvs {
				shared = max(shared, n)
			}
			require.GreaterOrEqual(t, shared, 2, "deletions at one resourceVersion: %v", store.deletedAt())
			mu.Lock()
			defer mu.Unlock()
			assert.Empty(t, errs)
			assert.Equal(t, 1, store.replaces(), "no relist")
		})
	}
}

// eventDeletes is a reflector.Store of Events that records the
// resourceVersions of the deletions and counts the Replaces.
type eventDeletes struct {
	mu      sync.Mutex
	deletes []string
	replace int
}

func (s *eventDeletes) Add(*corev1.Event) error    { return nil }
func (s *eventDeletes) Update(*corev1.Event) error { return nil }
func (s *eventDeletes) Delete(e *corev1.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deletes = append(s.deletes, e.ResourceVersion)
	return nil
}

func (s *eventDeletes) Replace([]*corev1.Event, string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replace++
	return nil
}

func (s *eventDeletes) deletedAt() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.deletes...)
}

func (s *eventDeletes) replaces() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.replace
}
