package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/reflector"
)

// Resources that come and go, on kube-apiserver: the CustomResourceDefinition
// of the objects the informers watch is created after they start, stops
// serving their version and serves it again, or is deleted (while they
// watch, or while they are cut off) and created again. The informers must
// say what is missing (a 404 naming the resource, its group and version),
// back off rather than spin while it is missing, and converge to the
// server's state once it is back (the oracle of the scenarios).

// TestLifecycleNotServed: informers of widgets start before their CRD
// exists; each reports a 404 that names what is missing and asks again
// after a growing backoff; once the CRD exists they sync. Then the CRD
// serves v2 only: they report a 404 naming v1; an object deleted and one
// created through v2 meanwhile reach them once v1 is served again.
func TestLifecycleNotServed(t *testing.T) {
	t.Parallel()
	const ns = "not-served"
	srv := startReal(t, false)
	srv.createNamespace(t, ns)
	start := time.Now()
	ws, fs := widgetInformers(t, srv, srv.addr(), reflector.Target{Namespace: ns})
	for _, f := range fs {
		runFactory(t, f)
	}
	for i, errs := range waitNotFound(t, ws, start, 3) {
		assertNotServed(t, ws[i], errs[0].err, "v1")
		// The backoff's first two waits: at least 0.4 and 0.8 s (0.8 and
		// 1.6 s, halved at worst by the jitter).
		assert.GreaterOrEqual(t, errs[2].at.Sub(errs[0].at), 1200*time.Millisecond, "%s: asked again without backing off:%v", ws[i].label, ws[i].errs)
	}
	// What WaitForCacheSync tells a user who gives up.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := fs[0].WaitForCacheSync(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "404", "WaitForCacheSync names the 404")
	assert.Contains(t, err.Error(), "is widgets.example.com served in version v1?")

	srv.install(t, widgets)
	w := newWriter(t, srv)
	w.createN(widgets, ns, 3)
	waitSynced(t, time.Minute, ws...)
	converge(t, srv, time.Minute, []string{ns}, ws...)

	unserved := time.Now()
	setVersions(t, srv, map[string]bool{"v1": false, "v2": true})
	v2 := widgets
	v2.gvr.Version = "v2"
	for i, errs := range waitNotFound(t, ws, unserved, 1) {
		assertNotServed(t, ws[i], errs[0].err, "v1")
	}
	srv.remove(t, v2, ns, "o0")
	srv.create(t, v2, newObject("example.com/v2", "Widget", ns, "o3", nil, nil))
	setVersions(t, srv, map[string]bool{"v1": true, "v2": true})
	took := converge(t, srv, time.Minute, []string{ns}, ws...)
	t.Logf("caught up %s after v1 was served again", took.Round(time.Millisecond))
	for _, x := range ws {
		assert.Equal(t, []bool{true}, x.rec.deletesOf(ns+"/o0"), "%s: the delete made while v1 was not served, delivered after a list (final state unknown)", x.label)
	}
}

// TestLifecycleCRDDeleted: the CRD of 300 widgets in two namespaces is
// deleted while some informers watch and others are cut off (a proxy's
// black hole), and then created again with objects of some of the same
// names (new uids). The informers that watch get every DELETED before
// their watch ends: their caches empty. Those cut off keep what they held
// while the resource answers 404. Once it is back, all converge: the cut
// off ones learn of the deletes from a list (final state unknown), and a
// name created again comes as Delete then Add.
func TestLifecycleCRDDeleted(t *testing.T) {
	t.Parallel()
	const nsA, nsB = "crd-deleted-a", "crd-deleted-b"
	nss := []string{nsA, nsB}
	srv := startReal(t, false)
	srv.install(t, widgets)
	w := newWriter(t, srv)
	for _, ns := range nss {
		srv.createNamespace(t, ns)
		w.createN(widgets, ns, 150)
	}
	p := proxyFor(t, srv)
	watching, fs := widgetInformers(t, srv, srv.addr(), reflector.Target{Namespace: nsA})
	all, allFs := widgetInformers(t, srv, srv.addr(), reflector.Target{})
	watching = append(watching, all...)
	cut, cutFs := widgetInformers(t, srv, p.Addr(), reflector.Target{Namespace: nsA})
	for _, f := range append(append(fs, allFs...), cutFs...) {
		startFactory(t, f)
	}
	converge(t, srv, time.Minute, nss, append(watching, cut...)...)

	p.BlackHole()
	p.CutAll()
	deleted := time.Now()
	uninstall(t, srv, widgets)
	waitEmpty(t, 30*time.Second, nss, watching...)
	t.Logf("the watching informers' caches empty %s after the delete", time.Since(deleted).Round(time.Millisecond))
	for i, errs := range waitNotFound(t, watching, deleted, 1) {
		assertNotServed(t, watching[i], errs[0].err, "v1")
	}
	resumed := time.Now()
	p.Resume()
	for i, errs := range waitNotFound(t, cut, resumed, 1) {
		assertNotServed(t, cut[i], errs[0].err, "v1")
		assert.Len(t, cut[i].cacheLines(inNamespaces(nsA)), 150, "%s: the cache keeps what it held while the resource answers 404", cut[i].label)
	}

	srv.install(t, widgets)
	w.create(widgets, nsA, "o1", "a")
	w.create(widgets, nsB, "o1", "a")
	w.create(widgets, nsA, "new", "b")
	took := converge(t, srv, time.Minute, nss, append(watching, cut...)...)
	t.Logf("caught up %s after the CRD was created again", took.Round(time.Millisecond))
	for _, x := range watching {
		assert.Equal(t, []bool{false}, x.rec.deletesOf(nsA+"/o1"), "%s: deleted by its watch, then added again", x.label)
	}
	for _, x := range cut {
		assert.Equal(t, []bool{true}, x.rec.deletesOf(nsA+"/o0"), "%s: a delete missed while cut off, learnt from a list", x.label)
		assert.Equal(t, []bool{true}, x.rec.deletesOf(nsA+"/o1"), "%s: a name created again while cut off: Delete, then Add", x.label)
	}
}

// widgetInformers returns informers of widgets for target through the
// apiserver at addr, as objects and as metadata, with streaming lists and
// with LIST then WATCH, and their two factories, not started.
func widgetInformers(t *testing.T, srv *realServer, addr string, target reflector.Target) ([]*watched, []*informer.Factory) {
	t.Helper()
	var ws []*watched
	var fs []*informer.Factory
	for _, c := range []struct {
		label string
		mode  reflector.Mode
	}{{"watch-list", reflector.WatchList}, {"list-watch", reflector.ListWatch}} {
		f := newFactory(t, srv.config(addr, false), informer.WithListMode(c.mode))
		meta, err := informer.ForMetadata(f, widgets.gvr, target)
		require.NoError(t, err)
		m, err := wrap(c.label+" metadata", target, meta)
		require.NoError(t, err)
		m.k = widgets
		ws = append(ws, widgets.inFactory(t, f, target, c.label), m)
		fs = append(fs, f)
	}
	return ws, fs
}

// assertNotServed checks that err, a 404 reported by w, says which
// resource and version are not served.
func assertNotServed(t *testing.T, w *watched, err error, version string) {
	t.Helper()
	assert.Contains(t, err.Error(), fmt.Sprintf("is widgets.example.com served in version %s? A CRD missing, deleted, or not serving that version answers 404", version), w.label)
}

// waitNotFound waits until each informer has reported at least n errors
// that apierrors.IsNotFound recognizes as a 404 since t0, and returns
// them.
func waitNotFound(t *testing.T, ws []*watched, t0 time.Time, n int) [][]loggedError {
	t.Helper()
	out := make([][]loggedError, len(ws))
	deadline := time.Now().Add(time.Minute)
	for i, w := range ws {
		for len(out[i]) < n {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d errors since %s recognized as a 404, want %d; errors:%v", w.label, len(out[i]), t0.Format("15:04:05.000"), n, w.errs)
			}
			time.Sleep(20 * time.Millisecond)
			out[i] = out[i][:0]
			for _, e := range w.errs.since(t0) {
				if apierrors.IsNotFound(e.err) {
					out[i] = append(out[i], e)
				}
			}
		}
	}
	return out
}

// waitEmpty waits until the cache and the handler's view of every w hold
// nothing in namespaces nss, and fails the test on an ordering violation.
func waitEmpty(t *testing.T, within time.Duration, nss []string, ws ...*watched) {
	t.Helper()
	keep := inNamespaces(nss...)
	deadline := time.Now().Add(within)
	for _, w := range ws {
		for len(w.cacheLines(keep)) > 0 || len(w.rec.lines(keep)) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: after %s, the cache still holds %d objects, the handler's view %d; errors:%v",
					w.label, within, len(w.cacheLines(keep)), len(w.rec.lines(keep)), w.errs)
			}
			time.Sleep(50 * time.Millisecond)
		}
		for _, p := range w.rec.problems() {
			t.Error(p)
		}
	}
}

// uninstall deletes the CustomResourceDefinition of k and waits until it
// is gone (its objects deleted first), so that install creates it again.
func uninstall(t *testing.T, srv *realServer, k kind) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := k.gvr.Resource + "." + k.gvr.Group
	require.NoError(t, srv.dyn.Resource(crds).Delete(ctx, name, metav1.DeleteOptions{}))
	start := time.Now()
	for {
		_, err := srv.dyn.Resource(crds).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		require.NoError(t, ctx.Err(), "the CustomResourceDefinition %s is not gone (last answer: %v)", name, err)
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("CustomResourceDefinition %s gone after %s", name, time.Since(start).Round(time.Millisecond))
	srv.mu.Lock()
	defer srv.mu.Unlock()
	delete(srv.installed, k.name)
}

// setVersions makes the CustomResourceDefinition of widgets (installed at
// v1) have the versions given, served or not, v2 the storage version, and
// waits until the served ones can be listed.
func setVersions(t *testing.T, srv *realServer, served map[string]bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := widgets.gvr.Resource + "." + widgets.gvr.Group
	var versions []any
	for _, v := range []string{"v1", "v2"} {
		versions = append(versions, map[string]any{
			"name": v, "served": served[v], "storage": v == "v2",
			"schema": map[string]any{"openAPIV3Schema": map[string]any{
				"type": "object", "x-kubernetes-preserve-unknown-fields": true,
			}},
		})
	}
	for {
		crd, err := srv.dyn.Resource(crds).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		require.NoError(t, unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"))
		if _, err = srv.dyn.Resource(crds).Update(ctx, crd, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
			require.NoError(t, err)
			break
		}
	}
	for v, on := range served {
		gvr := widgets.gvr
		gvr.Version = v
		for on {
			if _, err := srv.dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
				break
			}
			require.NoError(t, ctx.Err(), "%s not served", gvr)
			time.Sleep(100 * time.Millisecond)
		}
	}
}
