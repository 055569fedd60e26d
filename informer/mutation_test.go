package informer_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/listwatch/listwatch/indexer"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/internal/apisim"
	"github.com/listwatch/listwatch/internal/fakelw"
	"github.com/listwatch/listwatch/listwatchtest"
	"github.com/listwatch/listwatch/processor"
	"github.com/listwatch/listwatch/reflector"
)

// reports collects what a mutation detector reports.
type reports struct {
	mu   sync.Mutex
	errs []*informer.MutationError
}

func (r *reports) add(err error) {
	var m *informer.MutationError
	if !errors.As(err, &m) {
		panic("not a MutationError: " + err.Error())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, m)
}

func (r *reports) keys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.errs {
		out = append(out, e.Key)
	}
	return out
}

func (r *reports) all() []*informer.MutationError {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*informer.MutationError(nil), r.errs...)
}

// The tests change cached objects only where the change happens before the
// detector's next read (the race detector would rightly object otherwise):
// before an event that the informer then handles, or before Run returns.

func TestMutationDetectorReportsAChangedObjectOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a"))
		src.Create(pod("ns", "b"))
		var got reports
		inf := informer.New[*corev1.Pod](src, informer.WithName[*corev1.Pod]("pods"),
			informer.WithMutationDetector[*corev1.Pod](time.Second, got.add))
		defer start(t, inf)()
		synctest.Wait()
		b, _ := inf.Indexer().GetByKey("ns/b")
		b.Labels = map[string]string{"touched": "yes"} // the bug it is for
		src.Create(pod("ns", "c"))
		synctest.Wait()
		assert.Empty(t, got.keys(), "before the first check")

		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, []string{"ns/b"}, got.keys())
		e := got.all()[0]
		assert.Equal(t, "pods", e.Resource)
		assert.Contains(t, e.Diff, `+   "touched": "yes"`)
		assert.Contains(t, e.Error(), "pods: cached object ns/b was modified")

		time.Sleep(10 * time.Second)
		synctest.Wait()
		assert.Len(t, got.keys(), 1, "a change is reported once")
	})
}

// A change that leaves an object impossible to copy (a handler that puts
// a Go int into an Unstructured, whose DeepCopy panics on it) is reported
// once too. The detector kept its old copy and reported the same change at
// every check.
func TestMutationDetectorReportsAChangeItCannotCopyOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := listwatchtest.NewSource[*unstructured.Unstructured]()
		widget := func(name string) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
				"metadata": map[string]any{"namespace": "ns", "name": name}}}
		}
		_, err := src.Create(widget("a"))
		require.NoError(t, err)
		var got reports
		inf := informer.New[*unstructured.Unstructured](src,
			informer.WithMutationDetector[*unstructured.Unstructured](time.Second, got.add))
		defer start(t, inf)()
		synctest.Wait()
		a, ok := inf.Lister().Get("ns", "a")
		require.True(t, ok)
		a.Object["spec"] = map[string]any{"size": 3} // a Go int
		_, err = src.Create(widget("b"))
		require.NoError(t, err)
		synctest.Wait()

		time.Sleep(10 * time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"ns/a"}, got.keys(), "a change is reported once")
	})
}

// Objects that leave the cache stay checked for a while: a handler may
// change the old side of an update, or a deleted object, after the cache let
// go of it.
func TestMutationDetectorChecksReplacedAndDeletedObjects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a"))
		src.Create(pod("ns", "b"))
		var got reports
		inf := informer.New[*corev1.Pod](src, informer.WithMutationDetector[*corev1.Pod](time.Hour, got.add))
		stop := start(t, inf)
		synctest.Wait()
		a, _ := inf.Indexer().GetByKey("ns/a")
		b, _ := inf.Indexer().GetByKey("ns/b")
		src.Update(pod("ns", "a"))
		src.Delete("ns/b")
		synctest.Wait()
		a.Annotations = map[string]string{"seen": "old"}
		b.Annotations = map[string]string{"seen": "deleted"}
		stop()
		assert.ElementsMatch(t, []string{"ns/a", "ns/b"}, got.keys())
	})
}

// An object changed while it was cached, then replaced and deleted more
// than a minute before the next check (a period above a minute), is
// reported at that check: it used to drop the objects retired for a
// minute before it compared them.
func TestMutationDetectorChecksObjectsRetiredLongBeforeTheCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a"))
		src.Create(pod("ns", "b"))
		var got reports
		inf := informer.New[*corev1.Pod](src, informer.WithMutationDetector[*corev1.Pod](5*time.Minute, got.add))
		stop := start(t, inf)
		defer stop()
		synctest.Wait()
		a, _ := inf.Indexer().GetByKey("ns/a")
		b, _ := inf.Indexer().GetByKey("ns/b")
		a.Labels = map[string]string{"touched": "while cached"}
		b.Labels = map[string]string{"touched": "while cached"}
		src.Update(pod("ns", "a"))
		src.Delete("ns/b")
		synctest.Wait()
		time.Sleep(6 * time.Minute) // one check, at 5 minutes
		synctest.Wait()
		assert.ElementsMatch(t, []string{"ns/a", "ns/b"}, got.keys())
	})
}

// A cache nobody changes is never reported, through adds, updates,
// deletes, resyncs and relists.
func TestMutationDetectorQuietWithoutChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a"))
		src.Create(pod("ns", "b"))
		var got reports
		inf := informer.New[*corev1.Pod](src,
			informer.WithMutationDetector[*corev1.Pod](time.Second, got.add),
			informer.WithReflectorOptions(reflector.WithMode[*corev1.Pod](reflector.ListWatch)))
		v := newView(t)
		inf.AddEventHandler(v, informer.WithHandlerResync(2*time.Second))
		defer start(t, inf)()
		synctest.Wait()
		src.Update(pod("ns", "a"))
		src.Delete("ns/b")
		src.Create(pod("ns", "c"))
		src.CloseWatches()
		src.Update(pod("ns", "c"))
		src.Compact() // a relist
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		assert.Empty(t, got.keys())
		assert.Equal(t, sourceKeys(src), cacheKeys(inf))
		assert.Equal(t, sourceKeys(src), v.keys())
	})
}

// Printing a Quantity caches its text in the Quantity, which changes the
// cached object without changing what it says: not reported.
func TestMutationDetectorIgnoresQuantityText(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		p := pod("ns", "a")
		q := resource.MustParse("1000Mi")
		p.Spec.Volumes = []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &q},
		}}}
		src.Create(p)
		var got reports
		inf := informer.New[*corev1.Pod](src, informer.WithMutationDetector[*corev1.Pod](time.Hour, got.add))
		stop := start(t, inf)
		synctest.Wait()
		cached, _ := inf.Indexer().GetByKey("ns/a")
		assert.Equal(t, "1000Mi", cached.Spec.Volumes[0].EmptyDir.SizeLimit.String())
		stop()
		assert.Empty(t, got.keys())
	})
}

// The last check runs when Run returns, after the handlers have: a change
// made just before the informer stops is still reported.
func TestMutationDetectorChecksWhenRunReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a"))
		var got reports
		inf := informer.New[*corev1.Pod](src, informer.WithMutationDetector[*corev1.Pod](time.Hour, got.add))
		inf.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{AddFunc: func(p *corev1.Pod, _ bool) {
			p.Spec.NodeName = "changed"
		}})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- inf.Run(ctx) }()
		synctest.Wait()
		assert.Empty(t, got.keys())
		cancel()
		require.NoError(t, <-done)
		assert.Equal(t, []string{"ns/a"}, got.keys())
	})
}

func TestMutationDetectorLogsWithoutReport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a"))
		var buf bytes.Buffer // written by the informer's goroutines only, read after Run returned
		logger := slog.New(slog.NewTextHandler(&buf, nil))
		inf := informer.New[*corev1.Pod](src, informer.WithLogger[*corev1.Pod](logger),
			informer.WithMutationDetector[*corev1.Pod](time.Hour, nil))
		inf.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{AddFunc: func(p *corev1.Pod, _ bool) {
			p.Spec.NodeName = "changed"
		}})
		stop := start(t, inf)
		synctest.Wait()
		stop()
		assert.Contains(t, buf.String(), "cached object modified")
		assert.Contains(t, buf.String(), "ns/a")
	})
}

// A report that panics is logged, and the detector goes on: every change is
// still reported, and the informer's goroutines are not taken down.
func TestMutationDetectorSurvivesAPanickingReport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a"))
		src.Create(pod("ns", "b"))
		var buf bytes.Buffer // written by the informer's goroutines only, read after Run returned
		logger := slog.New(slog.NewTextHandler(&buf, nil))
		var calls atomic.Int32
		inf := informer.New[*corev1.Pod](src, informer.WithLogger[*corev1.Pod](logger),
			informer.WithMutationDetector[*corev1.Pod](time.Hour, func(err error) {
				calls.Add(1)
				panic("report: " + err.Error())
			}))
		inf.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{AddFunc: func(p *corev1.Pod, _ bool) {
			p.Spec.NodeName = "changed"
		}})
		stop := start(t, inf)
		synctest.Wait()
		stop() // the last check: both changes, in one call of check
		assert.EqualValues(t, 2, calls.Load())
		assert.Contains(t, buf.String(), "report function panicked")
		assert.Contains(t, buf.String(), "ns/a")
		assert.Contains(t, buf.String(), "ns/b")
	})
}

// With WithSharing, cached objects share their identical parts, so code
// that changes one object's labels changes every object with the same
// labels; the detector reports each of them. (The change is made while the
// informer is idle and checked when it stops: made while a handler or the
// detector reads, it would be a data race as well.)
func TestMutationDetectorSeesSharedParts(t *testing.T) {
	sim := startSim(t)
	pods := apisim.Of[*corev1.Pod](sim, apisim.Pods())
	for _, name := range []string{"a", "b", "c"} {
		p := apisim.MakePod("ns", name)
		p.Labels = map[string]string{"app": "web"}
		_, err := pods.Create(p)
		require.NoError(t, err)
	}
	var got reports
	f, err := informer.NewFactory(simConfig(sim), informer.WithSharing(),
		informer.WithFactoryMutationDetector(time.Hour, got.add))
	require.NoError(t, err)
	inf, err := informer.For[*corev1.Pod](f, reflector.Target{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f.Start(ctx)
	require.NoError(t, f.WaitForCacheSync(ctx))

	a, ok := inf.Indexer().GetByKey("ns/a")
	require.True(t, ok)
	a.Labels["app"] = "db" // the bug it is for
	f.Shutdown()
	assert.ElementsMatch(t, []string{"ns/a", "ns/b", "ns/c"}, got.keys())
}

// oddPod's DeepCopyObject returns another type, so the detector cannot
// keep a copy of it.
type oddPod struct{ corev1.Pod }

func (p *oddPod) DeepCopyObject() runtime.Object { return p.Pod.DeepCopy() }

// An object the detector cannot copy is reported, and cached all the same:
// the detector never changes what the cache holds.
func TestMutationDetectorCachesWhatItCannotCopy(t *testing.T) {
	checkUncopyableIsCached(t, func() *oddPod { return &oddPod{} }, &oddPod{Pod: *pod("ns", "a")},
		"mutation detector cannot check ns/a: DeepCopyObject of *informer_test.oddPod returned a *v1.Pod")
}

// panickyPod's DeepCopyObject panics, as Unstructured.DeepCopy does on a
// value that is not JSON.
type panickyPod struct{ corev1.Pod }

func (p *panickyPod) DeepCopyObject() runtime.Object { panic("cannot deep copy func()") }

// A copy that panics is reported like one that fails; the informer goes on.
func TestMutationDetectorSurvivesAPanickingCopy(t *testing.T) {
	checkUncopyableIsCached(t, func() *panickyPod { return &panickyPod{} }, &panickyPod{Pod: *pod("ns", "a")},
		"panicked: cannot deep copy func()")
}

// checkUncopyableIsCached runs an informer with the mutation detector over
// obj (newObj makes an empty T), which the detector cannot copy: obj must
// be cached, and one error containing want reported.
func checkUncopyableIsCached[T reflector.Object](t *testing.T, newObj func() T, obj T, want string) {
	synctest.Test(t, func(t *testing.T) {
		src := fakelw.New(newObj)
		src.Create(obj)
		var mu sync.Mutex
		var errs []error
		inf := informer.New[T](src, informer.WithMutationDetector[T](time.Hour, func(err error) {
			mu.Lock()
			defer mu.Unlock()
			errs = append(errs, err)
		}))
		stop := start(t, inf)
		synctest.Wait()
		_, ok := inf.Indexer().GetByKey("ns/a")
		assert.True(t, ok, "cached")
		stop()
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, errs, 1)
		assert.Contains(t, errs[0].Error(), want)
	})
}

// flakyPod cannot be copied when it has the annotation "nocopy".
type flakyPod struct {
	corev1.Pod
}

func (p *flakyPod) DeepCopyObject() runtime.Object {
	if p.Annotations["nocopy"] != "" {
		panic("cannot copy")
	}
	return &flakyPod{Pod: *p.Pod.DeepCopy()}
}

// WithMutationDetector says report runs on the detector's goroutine, or on
// Run's for the last check, never two at once: a copy failure is reported
// by the next check (it was reported from the goroutine applying deltas,
// under the informer's lock, while the detector could be reporting too).
func TestMutationReportsNeverOverlap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := fakelw.New(func() *flakyPod { return &flakyPod{} })
		a := &flakyPod{Pod: *pod("ns", "a")}
		src.Create(a)
		var inside atomic.Int32
		var overlapped atomic.Bool
		inCheck := make(chan struct{})
		copyFailed := make(chan struct{})
		bHandled := make(chan struct{})
		report := func(err error) {
			if inside.Add(1) > 1 {
				overlapped.Store(true)
			}
			defer inside.Add(-1)
			var m *informer.MutationError
			if errors.As(err, &m) {
				close(inCheck)
				select { // stay in report until the informer has handled b
				case <-bHandled:
				case <-time.After(time.Minute):
				}
				return
			}
			close(copyFailed)
		}
		inf := informer.New[*flakyPod](src, informer.WithMutationDetector[*flakyPod](time.Second, report))
		inf.AddEventHandler(processor.HandlerFuncs[*flakyPod]{AddFunc: func(p *flakyPod, _ bool) {
			if p.Name == "b" {
				close(bHandled)
			}
		}})
		stop := start(t, inf)
		synctest.Wait()
		cached, _ := inf.Indexer().GetByKey("ns/a")
		cached.Labels = map[string]string{"x": "y"} // a mutation for the next check
		src.Create(&flakyPod{Pod: *pod("ns", "c")}) // orders the change before the detector's read
		<-inCheck
		b := &flakyPod{Pod: *pod("ns", "b")}
		b.Annotations = map[string]string{"nocopy": "1"}
		src.Create(b)
		synctest.Wait()
		stop()
		if overlapped.Load() {
			t.Error("report called concurrently from two goroutines")
		}
		select {
		case <-copyFailed:
		default:
			t.Error("the object that cannot be copied was not reported")
		}
	})
}

// hiddenPod has an unexported field, which DeepCopyObject copies fine.
type hiddenPod struct {
	corev1.Pod
	cache string
}

func (p *hiddenPod) DeepCopyObject() runtime.Object {
	return &hiddenPod{Pod: *p.Pod.DeepCopy(), cache: p.cache}
}

// equality.Semantic.DeepEqual panics on an unexported field: the detector
// compares such objects with reflect.DeepEqual (its check panicked, on the
// detector's goroutine, which crashes the process, or for the last check
// on Run's).
func TestMutationDetectorComparesUnexportedFields(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := fakelw.New(func() *hiddenPod { return &hiddenPod{} })
		src.Create(&hiddenPod{Pod: *pod("ns", "a")})
		src.Create(&hiddenPod{Pod: *pod("ns", "b")})
		var reports []error
		inf := informer.New[*hiddenPod](src, informer.WithMutationDetector[*hiddenPod](time.Hour, func(err error) { reports = append(reports, err) }))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan any, 1)
		go func() {
			defer func() { done <- recover() }()
			_ = inf.Run(ctx)
		}()
		synctest.Wait()
		b, ok := inf.Indexer().GetByKey("ns/b")
		if !ok {
			t.Fatal("not cached")
		}
		b.cache = "changed"
		cancel()
		if r := <-done; r != nil {
			t.Fatalf("Run panicked in the mutation detector's last check: %.120v", r)
		}
		var m *informer.MutationError
		if len(reports) != 1 || !errors.As(reports[0], &m) || m.Key != "ns/b" {
			t.Errorf("reports = %v, want one MutationError for ns/b", reports)
		}
	})
}

// The fallback for types with unexported fields compares them field by
// field, semantically where it can: a Quantity whose String() filled its
// cache is not a change (reflect.DeepEqual over the whole object said it
// was).
func TestMutationDetectorFallbackIgnoresQuantityReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := fakelw.New(func() *hiddenPod { return &hiddenPod{} })
		p := &hiddenPod{Pod: *pod("ns", "a")}
		p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: resource.NewQuantity(1<<30, resource.BinarySI)},
		}}}
		src.Create(p)
		var reports []error
		inf := informer.New[*hiddenPod](src, informer.WithMutationDetector[*hiddenPod](time.Hour,
			func(err error) { reports = append(reports, err) }))
		inf.AddEventHandler(processor.HandlerFuncs[*hiddenPod]{AddFunc: func(p *hiddenPod, _ bool) {
			_ = p.Spec.Volumes[0].EmptyDir.SizeLimit.String() // a read
		}})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- inf.Run(ctx) }()
		synctest.Wait()
		cancel()
		<-done
		if len(reports) != 0 {
			t.Errorf("a read reported as a mutation: %v", reports)
		}
	})
}

// The detector watches what the cache holds: an update the indexer refuses
// leaves the old object cached, and checked for as long as it is cached,
// not only for the minute a replaced object is.
func TestMutationDetectorKeepsCheckingWhenAnUpdateIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a"))
		var got reports
		inf := informer.New[*corev1.Pod](src,
			informer.WithMutationDetector[*corev1.Pod](time.Hour, got.add),
			informer.WithIndexers(indexer.Indexers[*corev1.Pod]{"refusing": func(p *corev1.Pod) ([]string, error) {
				if p.Labels["refuse"] == "yes" {
					return nil, errors.New("refused")
				}
				return nil, nil
			}}))
		require.NoError(t, inf.SetWatchErrorHandler(func(error) {}))
		stop := start(t, inf)
		synctest.Wait()
		cached, _ := inf.Indexer().GetByKey("ns/a")
		refused := pod("ns", "a")
		refused.Labels = map[string]string{"refuse": "yes"}
		src.Update(refused)
		synctest.Wait()
		still, _ := inf.Indexer().GetByKey("ns/a")
		require.Same(t, cached, still, "the refused update left the cached object")
		time.Sleep(2 * time.Minute) // past the minute a replaced object stays checked
		cached.Annotations = map[string]string{"changed": "later"}
		stop()
		assert.Equal(t, []string{"ns/a"}, got.keys())
	})
}

// An index function that changes the object it is given changes what the
// cache and every handler hold: the detector copies the object before the
// index functions see it, and reports the change.
func TestMutationDetectorSeesAnIndexFunctionsChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource()
		src.Create(pod("ns", "a"))
		var got reports
		inf := informer.New[*corev1.Pod](src,
			informer.WithMutationDetector[*corev1.Pod](time.Hour, got.add),
			informer.WithIndexers(indexer.Indexers[*corev1.Pod]{"changing": func(p *corev1.Pod) ([]string, error) {
				if p.Labels == nil {
					p.Labels = map[string]string{"changed-by": "an index function"}
				}
				return nil, nil
			}}))
		stop := start(t, inf)
		synctest.Wait()
		stop()
		assert.Equal(t, []string{"ns/a"}, got.keys())
	})
}

// A mutation report lands in test logs and CI output: a Secret's values
// are redacted in its diff, which still tells which keys changed. It
// showed them, as cached and as found (base64 in the JSON).
func TestMutationDetectorRedactsSecrets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := fakelw.New(func() *corev1.Secret { return &corev1.Secret{} })
		src.Create(&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"},
			Data:       map[string][]byte{"password": []byte("hunter2-cached"), "user": []byte("admin-kept")},
		})
		var got reports
		inf := informer.New[*corev1.Secret](src, informer.WithName[*corev1.Secret]("secrets"),
			informer.WithMutationDetector[*corev1.Secret](time.Second, got.add))
		defer start(t, inf)()
		synctest.Wait()
		s, _ := inf.Indexer().GetByKey("ns/db")
		s.Data["password"] = []byte("hunter2-found") // the bug it is for
		s.Data["token"] = []byte("token-added")
		src.Create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other"}}) // after the change, for the race detector
		time.Sleep(time.Second)
		synctest.Wait()
		require.Len(t, got.all(), 1)
		d := got.all()[0].Diff
		for _, secret := range []string{"hunter2-cached", "hunter2-found", "admin-kept", "token-added"} {
			assert.NotContains(t, d, secret)
			assert.NotContains(t, d, base64.StdEncoding.EncodeToString([]byte(secret)))
		}
		assert.Contains(t, d, `-  "password": "REDACTED (as cached)"`)
		assert.Contains(t, d, `+  "password": "REDACTED (as found)"`)
		assert.Contains(t, d, `+  "token": "REDACTED (as found)"`)
		assert.Contains(t, d, `"user": "REDACTED"`)
	})
}
