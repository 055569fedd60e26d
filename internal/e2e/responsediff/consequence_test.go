package responsediff

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/processor"
	"github.com/listwatch/listwatch/reflector"
)

// TestListWithoutItemsInAnInformer follows one expected difference, "a 2xx
// JSON list without an items key", into an informer of each library, for
// the comparison in the README. A server (a proxy in its place) lists two
// pods, ends the watch with 410 Expired, answers the relist with {} and the
// next one with the two pods again. client-go takes the {} as an empty
// list: its cache empties and its handler is told both pods were deleted;
// with no resourceVersion to watch from, it watches from none, which on
// kube-apiserver starts with an ADDED event for each object, so its
// handler is told both were added again. listwatch refuses the {}, lists
// again after its backoff, and its handler hears nothing.
func TestListWithoutItemsInAnInformer(t *testing.T) {
	t.Run("listwatch", func(t *testing.T) {
		srv, lists := noItemsServer(t)
		client, err := reflector.NewClient(&reflector.Config{Host: srv.URL})
		require.NoError(t, err)
		lw, err := reflector.NewListerWatcher[*corev1.Pod](client, reflector.Target{Namespace: "ns"}, reflector.WithContentType(reflector.JSON))
		require.NoError(t, err)
		refused := make(chan error, 10)
		inf := informer.New(lw, informer.WithReflectorOptions(
			reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithBackoff[*corev1.Pod](time.Millisecond, 10*time.Millisecond)))
		require.NoError(t, inf.SetWatchErrorHandler(func(err error) {
			select {
			case refused <- err:
			default:
			}
		}))
		var adds, deletes atomic.Int32
		inf.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{
			AddFunc:    func(*corev1.Pod, bool) { adds.Add(1) },
			DeleteFunc: func(*corev1.Pod, bool) { deletes.Add(1) },
		})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); _ = inf.Run(ctx) }()
		defer func() { cancel(); <-done }()
		require.Eventually(t, func() bool { return lists.Load() >= 3 }, 10*time.Second, time.Millisecond, "the relists")
		require.Eventually(t, func() bool { return inf.Indexer().Len() == 2 }, 10*time.Second, time.Millisecond)
		assert.Equal(t, int32(0), deletes.Load(), "deletes")
		assert.Equal(t, int32(2), adds.Load(), "adds")
		var reported []string
		for len(refused) > 0 {
			reported = append(reported, (<-refused).Error())
		}
		assert.Contains(t, reported, `listing pods in "ns": malformed data from the server: JSON list: no "items" key: not a list, not even an empty one`)
	})
	t.Run("client-go", func(t *testing.T) {
		srv, _ := noItemsServer(t)
		cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
		require.NoError(t, err)
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
				return cs.CoreV1().Pods("ns").List(ctx, opts)
			},
			WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				return cs.CoreV1().Pods("ns").Watch(ctx, opts)
			},
		}
		inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
		var adds, deletes atomic.Int32
		_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { adds.Add(1) },
			DeleteFunc: func(any) { deletes.Add(1) },
		})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); inf.RunWithContext(ctx) }()
		defer func() { cancel(); <-done }()
		require.Eventually(t, func() bool { return adds.Load() == 4 }, 20*time.Second, time.Millisecond, "added again")
		assert.Equal(t, int32(2), deletes.Load(), "deletes")
		assert.Len(t, inf.GetStore().List(), 2)
	})
}

// noItemsServer answers LISTs of pods in ns with two pods, then {}, then
// the two pods again; a streaming list (sendInitialEvents) with 400 Bad
// Request, so that client-go falls back to LIST; a watch from no
// resourceVersion with an ADDED event for each pod, as kube-apiserver does;
// the first other watch with an ERROR event 410 Expired, as kube-apiserver
// ends a watch it cannot serve; the next ones with nothing until the
// client goes away. It counts LISTs.
func noItemsServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	const (
		list = `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[` +
			`{"metadata":{"namespace":"ns","name":"a","resourceVersion":"4"}},` +
			`{"metadata":{"namespace":"ns","name":"b","resourceVersion":"5"}}]}`
		expired = `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure",` +
			`"message":"too old resource version: 5 (7)","reason":"Expired","code":410}}` + "\n"
		badRequest = `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"no streaming lists here","reason":"BadRequest","code":400}`
	)
	var lists, watches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		q := r.URL.Query()
		switch {
		case r.URL.Path != "/api/v1/namespaces/ns/pods":
			w.WriteHeader(http.StatusNotFound)
		case q.Get("watch") == "" && lists.Add(1) == 2:
			_, _ = w.Write([]byte(`{}`))
		case q.Get("watch") == "":
			_, _ = w.Write([]byte(list))
		case q.Get("sendInitialEvents") == "true":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(badRequest))
		case q.Get("resourceVersion") == "":
			// kube-apiserver starts such a watch with an ADDED event
			// for every object.
			for _, name := range []string{"a", "b"} {
				_, _ = fmt.Fprintf(w, `{"type":"ADDED","object":{"metadata":{"namespace":"ns","name":%q,"resourceVersion":"5"}}}`+"\n", name)
			}
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case watches.Add(1) == 1:
			_, _ = w.Write([]byte(expired))
		default:
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &lists
}
