package reflector_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/internal/fakelw"
	"github.com/listwatch/listwatch/reflector"
)

// Answers a proxy between the client and kube-apiserver may make up or
// mix up, which kube-apiserver never sends. Taken, each would leave the
// cache silently wrong; each is refused (or the cache repaired) and
// reported.

// madeUpNextPage answers the first continue request with an empty page of
// its own at resourceVersion rv and without a continue token, as a proxy
// answering from another list would; the rest goes to the Source.
type madeUpNextPage struct {
	*fakelw.Source[*corev1.Pod]
	rv   string
	done bool
}

func (m *madeUpNextPage) List(ctx context.Context, opts reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
	if opts.Continue != "" && !m.done {
		m.done = true
		return reflector.ListMeta{ResourceVersion: m.rv}, nil
	}
	return m.Source.List(ctx, opts, add)
}

// A next page at a resourceVersion other than the first page's, or at none
// (a proxy's made-up {"items":[]}), is no page of the list: kube-apiserver
// gives them all the first's. Taken, it ended the list there, and the
// Store lost the objects of the pages not sent for good (the watch from
// the first page's resourceVersion never sends them). The one at none was
// found by the chaos test (seed 769).
func TestNextPageAtAnotherResourceVersionIsRefused(t *testing.T) {
	for rv, this := range map[string]string{
		"":  "no resourceVersion",
		"3": "resourceVersion 3", // older than the list's 5
		"9": "resourceVersion 9", // newer
	} {
		t.Run("rv="+rv, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src, store := newSource(), newRecorder()
				for i := range 5 {
					src.Create(pod(fmt.Sprint("p", i)))
				}
				lw := &madeUpNextPage{Source: src, rv: rv}
				var errs []error
				r := reflector.New[*corev1.Pod](lw, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
					reflector.WithPageSize[*corev1.Pod](2), reflector.WithErrorHandler[*corev1.Pod](func(err error) { errs = append(errs, err) }))
				defer run(t, r)()
				synctest.Wait()
				time.Sleep(time.Minute)
				synctest.Wait()
				assert.Equal(t, sourceKeys(src), store.keys(), "calls: %v", store.calls())
				assert.Equal(t, "replace 5@5", store.calls()[0])
				require.NotEmpty(t, errs)
				assert.ErrorContains(t, errs[0], "a next page of the list is not at the first page's resourceVersion: the first page was at 5, this one at "+this)
			})
		})
	}
}

// serveJSON answers every request with body, as a proxy might.
func serveJSON(t *testing.T, body string) *reflector.HTTPListerWatcher[*corev1.Pod] {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	client, err := reflector.NewClient(&reflector.Config{Host: srv.URL})
	require.NoError(t, err)
	lw, err := reflector.NewListerWatcher[*corev1.Pod](client, reflector.Target{Namespace: "default"}, reflector.WithContentType(reflector.JSON))
	require.NoError(t, err)
	return lw
}

func item(namespace, name string) string {
	return `{"metadata":{"name":"` + name + `","namespace":"` + namespace + `","resourceVersion":"5"}}`
}

// A page that says items remain (remainingItemCount) but gives no continue
// token to fetch them (a proxy dropped it) contradicts itself:
// kube-apiserver counts the items left only on a page with a continue
// token. Taken as the last page, it emptied the Store of every object not
// on it.
func TestPageWithItemsLeftButNoContinueTokenIsRefused(t *testing.T) {
	lw := serveJSON(t, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"5","remainingItemCount":3},"items":[`+
		item("default", "a")+`,`+item("default", "b")+`]}`)
	_, err := lw.List(t.Context(), reflector.ListOptions{Limit: 2}, func(*corev1.Pod) error { return nil })
	assert.ErrorIs(t, err, reflector.ErrMalformed)
	assert.ErrorContains(t, err, "list page says 3 items remain but has no continue token")
}

// A list or a watch of one namespace that gets an object of another (a
// proxy that mixed up its answers) refuses it: cached, it stayed there,
// and the handlers were told of an object the namespace never had. An
// object without a namespace is taken as it comes.
func TestObjectOfAnotherNamespaceIsRefused(t *testing.T) {
	list := serveJSON(t, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[`+
		item("default", "a")+`,`+item("other", "x")+`]}`)
	_, err := list.List(t.Context(), reflector.ListOptions{}, func(*corev1.Pod) error { return nil })
	assert.ErrorIs(t, err, reflector.ErrMalformed)
	assert.ErrorContains(t, err, `list item x in namespace "other", not the namespace listed, "default"`)

	var got []string
	list = serveJSON(t, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[`+item("", "a")+`]}`)
	_, err = list.List(t.Context(), reflector.ListOptions{}, func(p *corev1.Pod) error { got = append(got, p.Name); return nil })
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, got)

	watch := serveJSON(t, `{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"x","namespace":"other","resourceVersion":"6"}}}`+"\n"+
		`{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"default","resourceVersion":"7"}}}`+"\n")
	w, err := watch.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: "5"})
	require.NoError(t, err)
	defer w.Close()
	_, err = w.Next()
	assert.ErrorIs(t, err, reflector.ErrSkipped, "the stream goes on")
	assert.ErrorContains(t, err, `ADDED event for x in namespace "other", not the namespace watched, "default"`)
	ev, err := w.Next()
	require.NoError(t, err)
	assert.Equal(t, "a", ev.Object.Name)
}

// An event of another kind (a proxy that mixed up its streams) is skipped,
// and the stream goes on, unless it is a DELETED: whatever it deleted, an
// object it meant would stay cached for good. That one ends the watch and
// relists, as a DELETED without a resourceVersion does
// (TestDeleteWithoutResourceVersionIsNotLost).
func TestDeleteOfAnotherKindIsNotSkipped(t *testing.T) {
	watch := serveJSON(t, `{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x","namespace":"default","resourceVersion":"6"}}}`+"\n"+
		`{"type":"DELETED","object":{"kind":"Pod","apiVersion":"v2","metadata":{"name":"a","namespace":"default","resourceVersion":"7"}}}`+"\n"+
		`{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"b","namespace":"default","resourceVersion":"8"}}}`+"\n")
	w, err := watch.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: "5"})
	require.NoError(t, err)
	defer w.Close()
	_, err = w.Next()
	assert.ErrorIs(t, err, reflector.ErrSkipped, "an ADDED of another kind: the stream goes on")
	_, err = w.Next()
	require.Error(t, err)
	assert.NotErrorIs(t, err, reflector.ErrSkipped, "a DELETED of another kind")
	assert.ErrorContains(t, err, "a DELETED event could not be applied (listing again)")
	assert.ErrorContains(t, err, "got Pod v2, want Pod v1")
}

// stripDeleteRV passes the Source's watches through, with the
// resourceVersion taken off the object of the first DELETED event, as a
// proxy that rewrites objects might.
type stripDeleteRV struct {
	*fakelw.Source[*corev1.Pod]
	mu   sync.Mutex
	done bool
}

func (s *stripDeleteRV) Watch(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	w, err := s.Source.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &stripDeleteRVWatcher{Watcher: w, s: s}, nil
}

type stripDeleteRVWatcher struct {
	reflector.Watcher[*corev1.Pod]
	s *stripDeleteRV
}

func (w *stripDeleteRVWatcher) Next() (reflector.Event[*corev1.Pod], error) {
	ev, err := w.Watcher.Next()
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if err == nil && ev.Type == reflector.Deleted && !w.s.done {
		w.s.done = true
		ev.Object = ev.Object.DeepCopy()
		ev.Object.ResourceVersion = ""
	}
	return ev, err
}

// A DELETED event whose object lost its resourceVersion cannot be applied
// as it came, but must not be skipped as other such events are: the
// deleted object would stay in the cache for good, as it cannot change
// again to repair it. The watch ends, and a relist takes the object out.
func TestDeleteWithoutResourceVersionIsNotLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newSource(), newRecorder()
		src.Create(pod("a"))
		src.Create(pod("b"))
		lw := &stripDeleteRV{Source: src}
		var errs []error
		r := reflector.New[*corev1.Pod](lw, store, reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithErrorHandler[*corev1.Pod](func(err error) { errs = append(errs, err) }))
		defer run(t, r)()
		synctest.Wait()
		src.Delete("ns/a")
		synctest.Wait()
		src.Create(pod("c"))
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, sourceKeys(src), store.keys(), "calls %v; errors %v", store.calls(), errs)
		require.NotEmpty(t, errs)
		assert.ErrorContains(t, errs[0], "a DELETED event could not be applied (listing again)")
	})
}
