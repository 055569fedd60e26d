package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/reflector"
)

// A Factory of 200 informers shares two HTTP/2 connections with
// kube-apiserver, which takes 100 streams a connection: at its start, and
// when every connection is cut at once. The requests past the first
// connection's limit each dialed one of their own (101 connections in a
// review's run).
func TestFactoryOf200InformersSharesTwoConnections(t *testing.T) {
	p := proxyTo(t)
	cfg := &reflector.Config{Host: "https://" + p.Addr(), BearerToken: shared.AdminToken(),
		TLS: reflector.TLSConfig{CAData: shared.CAPEM()}}
	// Quiet: CutAll makes each of the 200 log a failure and its recovery.
	f, err := informer.NewFactory(cfg, informer.WithFactoryLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	const n = 200
	for i := range n {
		_, err := informer.For[*corev1.Pod](f, reflector.Target{Namespace: fmt.Sprint("connections-", i)})
		require.NoError(t, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	f.Start(ctx)
	defer f.Shutdown()
	require.NoError(t, f.WaitForCacheSync(ctx))
	// The watches open after the lists: give them the time to.
	assert.Never(t, func() bool { return p.Accepted() > 3 }, 3*time.Second, 50*time.Millisecond,
		"%d informers made more than 3 connections", n)
	t.Logf("%d informers: %d connections accepted, %d open", n, p.Accepted(), p.Open())

	before := p.Accepted()
	p.CutAll()
	require.Eventually(t, func() bool { return p.Open() >= 2 }, time.Minute, 50*time.Millisecond,
		"the informers did not come back after every connection was cut")
	assert.Never(t, func() bool { return p.Accepted()-before > 3 }, 5*time.Second, 50*time.Millisecond,
		"%d informers cut at once came back on more than 3 connections", n)
	t.Logf("after CutAll: %d connections accepted, %d open", p.Accepted()-before, p.Open())
}
