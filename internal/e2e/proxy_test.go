package e2e

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/listwatch/listwatch/internal/e2e/cluster"
	"github.com/listwatch/listwatch/internal/e2e/tcpproxy"
)

// proxyTo starts a tcpproxy in front of the shared apiserver, closed at
// the end of the test.
func proxyTo(t *testing.T) *tcpproxy.Proxy {
	t.Helper()
	p, err := tcpproxy.New(shared.Host())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p
}

// clientGoVia returns a client-go clientset for the admin that talks to
// the apiserver through p, with client-go's defaults (HTTP/2, health
// check after 30 s without a frame, 15 s PING timeout), configured from a
// kubeconfig the harness wrote.
func clientGoVia(t *testing.T, p *tcpproxy.Proxy) *kubernetes.Clientset {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, shared.WriteKubeconfig(path, cluster.AdminUser, "https://"+p.Addr()))
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return cs
}

// rawVia returns an api whose requests go through p, with a transport of
// its own (Go's defaults: no HTTP/2 health check).
func rawVia(t *testing.T, p *tcpproxy.Proxy) *api {
	client := shared.HTTPClient(shared.AdminToken())
	t.Cleanup(client.CloseIdleConnections)
	return &api{t: t, base: "https://" + p.Addr(), client: client}
}

// TestProxyFaults checks that the proxy's faults reach real clients: a cut
// ends watches at once, a stall silences them without ending them, a black
// hole swallows new connections, and a client-go informer recovers from a
// cut.
func TestProxyFaults(t *testing.T) {
	t.Parallel()
	const ns = "proxy-faults"
	admin := adminAPI(t, shared)
	admin.createNamespace(ns)

	t.Run("CutAll ends a raw watch with an error", func(t *testing.T) {
		p := proxyTo(t)
		a := rawVia(t, p)
		w := a.watch("/api/v1/namespaces/"+ns+"/pods?watch=true&resourceVersion="+admin.listRV(ns), "")
		require.Equal(t, http.StatusOK, w.status)
		cut := time.Now()
		p.CutAll()
		_, end := w.collect(10*time.Second, nil)
		require.Contains(t, end, "error:", "a cut stream must end with an error, not a clean EOF")
		recordTiming(t, "raw HTTP/2 watch: end after CutAll", time.Since(cut))
	})

	t.Run("CutAll closes a client-go watch", func(t *testing.T) {
		p := proxyTo(t)
		cs := clientGoVia(t, p)
		w, err := cs.CoreV1().Pods(ns).Watch(t.Context(), metav1.ListOptions{ResourceVersion: admin.listRV(ns)})
		require.NoError(t, err)
		defer w.Stop()
		cut := time.Now()
		p.CutAll()
		select {
		case _, ok := <-w.ResultChan():
			for ok {
				_, ok = <-w.ResultChan()
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the client-go watch did not end within 10 s of the cut")
		}
		recordTiming(t, "client-go watch: ResultChan closed after CutAll", time.Since(cut))
	})

	t.Run("Stall silences a watch until Resume", func(t *testing.T) {
		p := proxyTo(t)
		a := rawVia(t, p)
		w := a.watch("/api/v1/namespaces/"+ns+"/pods?watch=true&resourceVersion="+admin.listRV(ns), "")
		require.Equal(t, http.StatusOK, w.status)
		p.Stall()
		admin.createPod(ns, "during-stall", nil)
		_, ok := w.next(3 * time.Second)
		require.False(t, ok, "an event went through a stalled proxy")
		p.Resume()
		ev, ok := w.next(10 * time.Second)
		require.True(t, ok, "the event did not arrive after Resume")
		require.Equal(t, "ADDED", ev.Type)
	})

	t.Run("BlackHole swallows new connections", func(t *testing.T) {
		p := proxyTo(t)
		p.BlackHole()
		client := shared.HTTPClient(shared.AdminToken())
		defer client.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, "GET", "https://"+p.Addr()+"/readyz", nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, 1, p.Accepted())
	})

	t.Run("a client-go informer recovers from CutAll", func(t *testing.T) {
		p := proxyTo(t)
		cs := clientGoVia(t, p)
		factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
		inf := factory.Core().V1().Pods().Informer()
		seen := make(chan string, 100)
		_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
			seen <- obj.(*corev1.Pod).Name
		}})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		factory.Start(ctx.Done())
		defer func() {
			cancel()
			factory.Shutdown()
		}()
		require.True(t, cache.WaitForCacheSync(ctx.Done(), inf.HasSynced))
		before := p.Accepted()
		cut := time.Now()
		p.CutAll()
		admin.createPod(ns, "after-cut", nil)
		deadline := time.After(30 * time.Second)
		for name := ""; name != "after-cut"; {
			select {
			case name = <-seen:
			case <-deadline:
				t.Fatal("the informer did not see the pod created after the cut within 30 s")
			}
		}
		recordTiming(t, "client-go informer: a pod created after CutAll delivered after", time.Since(cut))
		assert.Greater(t, p.Accepted(), before, "the informer reconnected")
	})
}

// TestClientGoStallDetection measures how long client-go v0.37.2, with its
// default configuration, takes to notice that its watch connection went
// silent (a stalled proxy: TCP alive, no bytes). Its HTTP/2 health check
// sends a PING after 30 s without a frame and gives up 15 s later, so
// about 45 s is expected; DESIGN.md asks listwatch for 15 s.
func TestClientGoStallDetection(t *testing.T) {
	t.Parallel()
	const ns = "proxy-stall"
	admin := adminAPI(t, shared)
	admin.createNamespace(ns)
	p := proxyTo(t)
	cs := clientGoVia(t, p)
	w, err := cs.CoreV1().Pods(ns).Watch(t.Context(), metav1.ListOptions{ResourceVersion: admin.listRV(ns)})
	require.NoError(t, err)
	defer w.Stop()

	p.Stall()
	stalled := time.Now()
	var errorEvent *watch.Event
	timeout := time.After(2 * time.Minute)
	for done := false; !done; {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				done = true
				break
			}
			if ev.Type == watch.Error {
				errorEvent = &ev
			}
		case <-timeout:
			t.Fatal("client-go did not notice a stalled connection within 2 minutes")
		}
	}
	took := time.Since(stalled)
	recordTiming(t, "client-go watch: ResultChan closed after Stall (HTTP/2 health check)", took)
	if errorEvent != nil {
		t.Logf("client-go delivered an ERROR event first: %v", errorEvent.Object)
	}
	assert.Greater(t, took, 30*time.Second, "sooner than client-go's 30 s read-idle timeout: was the proxy really stalled?")
	assert.Less(t, took, 60*time.Second)
	p.Resume()
}
