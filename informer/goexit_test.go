package informer_test

import (
	"context"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/internal/fakelw"
	"github.com/listwatch/listwatch/listwatchtest"
	"github.com/listwatch/listwatch/processor"
)

// User code that ends the reflector's goroutine with runtime.Goexit (a
// transform or an error handler that calls t.FailNow, in a test) stops the
// informer, and Run says why. It ran on with nothing to fill the cache:
// never synced, and Run returned only when its context ended.
func TestGoexitOnTheReflectorsGoroutineStopsTheInformer(t *testing.T) {
	for name, set := range map[string]func(*informer.SharedIndexInformer[*corev1.Pod], func()) error{
		"transform": func(inf *informer.SharedIndexInformer[*corev1.Pod], exit func()) error {
			return inf.SetTransform(func(p *corev1.Pod) (*corev1.Pod, error) { exit(); return p, nil })
		},
		"error handler": func(inf *informer.SharedIndexInformer[*corev1.Pod], exit func()) error {
			return inf.SetWatchErrorHandler(func(error) { exit() })
		},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := listwatchtest.NewSource[*corev1.Pod]()
				_, err := src.Create(pod("ns", "a"))
				require.NoError(t, err)
				src.FailWatch(context.DeadlineExceeded) // for the error handler (a streaming list)
				src.FailList(context.DeadlineExceeded)  // (a list)
				inf := informer.New[*corev1.Pod](src)
				var once atomic.Bool
				require.NoError(t, set(inf, func() {
					if once.CompareAndSwap(false, true) {
						runtime.Goexit()
					}
				}))
				done := make(chan error, 1)
				go func() { done <- inf.Run(t.Context()) }()
				time.Sleep(time.Hour)
				synctest.Wait()
				select {
				case err := <-done:
					assert.ErrorContains(t, err, "informer: the reflector stopped: runtime.Goexit was called on its goroutine")
				default:
					t.Fatalf("an hour on, Run has not returned; synced %v, last error %v", inf.HasSynced(), inf.LastError())
				}
			})
		})
	}
}

// A logger that ends the processor's goroutine with runtime.Goexit (as it
// logs that the processor runs) stops the informer too, and Run says why:
// its handlers would get nothing more. The processor's listeners ran on
// after Run had returned, and their registrations never stopped.
func TestGoexitOnTheProcessorsGoroutineStopsTheInformer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := listwatchtest.NewSource[*corev1.Pod]()
		_, err := src.Create(pod("ns", "a"))
		require.NoError(t, err)
		logger := slog.New(goexitLog{on: "processor: running"})
		inf := informer.New[*corev1.Pod](src, informer.WithLogger[*corev1.Pod](logger))
		reg := inf.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{})
		done := make(chan error, 1)
		go func() { done <- inf.Run(t.Context()) }()
		synctest.Wait()
		select {
		case err := <-done:
			assert.ErrorContains(t, err, "informer: the processor stopped: runtime.Goexit was called on its goroutine")
		default:
			t.Fatal("Run has not returned")
		}
		<-reg.Stopped() // in the bubble, a hang fails the test
	})
}

// A logger that ends the processor's goroutine as it logs that a listener
// stopped does not make Run return while a handler call it started is
// still in progress: Run returned at once, as the processor skipped its
// wait for the listeners' goroutines.
func TestGoexitInTheLoggerAsAListenerStopsLetsRunWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := listwatchtest.NewSource[*corev1.Pod]()
		_, err := src.Create(pod("ns", "a"))
		require.NoError(t, err)
		inf := informer.New[*corev1.Pod](src,
			informer.WithLogger[*corev1.Pod](slog.New(goexitLog{on: "processor: listener stopped"})))
		entered, release := make(chan struct{}), make(chan struct{})
		var returned atomic.Bool
		inf.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{AddFunc: func(*corev1.Pod, bool) {
			close(entered)
			<-release
			returned.Store(true)
		}})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- inf.Run(ctx) }()
		<-entered
		cancel()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Run returned (%v) while the handler call it started was in progress", err)
		default:
		}
		close(release)
		assert.NoError(t, <-done)
		assert.True(t, returned.Load())
	})
}

// An informer that cannot run (here, nothing to list and watch with)
// closes Stopped even when the logger ends Run's goroutine as its
// processor logs that it stopped: Stopped stayed open, and WaitForSync
// waited for it until its context ended.
func TestGoexitInTheLoggerOfAnInformerThatCannotRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf := informer.New[*corev1.Pod](nil,
			informer.WithLogger[*corev1.Pod](slog.New(goexitLog{on: "processor: stopped"})))
		go inf.Run(t.Context())
		<-inf.Stopped() // in the bubble, a hang fails the test
	})
}

// A metadata getter of a type of one's own that ends Run's goroutine
// (runtime.Goexit) while a change is stored leaves the informer usable for
// what it still serves: a handler added after that is not blocked for
// ever. The lock that makes a late handler wait for the change under way
// was left locked.
func TestGoexitInAGetterWhileAChangeIsStored(t *testing.T) {
	// Not in a synctest bubble: a goroutine blocked on a mutex is not
	// durably blocked there, so a hang would not be seen as one.
	src := fakelw.New(func() *goexitUIDPod { return &goexitUIDPod{} })
	src.Create(&goexitUIDPod{Pod: *pod("ns", "a")})
	inf := informer.New[*goexitUIDPod](src)
	go inf.Run(t.Context())
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	require.NoError(t, informer.WaitForSync(ctx, inf))
	boom := &goexitUIDPod{Pod: *pod("ns", "a")}
	boom.Labels = map[string]string{"goexit": "yes"}
	src.Update(boom)
	select {
	case <-inf.Stopped():
	case <-ctx.Done():
		t.Fatal("the informer did not stop")
	}
	added := make(chan struct{})
	go func() {
		defer close(added)
		inf.AddEventHandler(processor.HandlerFuncs[*goexitUIDPod]{})
	}()
	select {
	case <-added:
	case <-time.After(10 * time.Second):
		t.Fatal("AddEventHandler blocked")
	}
}

// goexitUIDPod is a Pod whose GetUID ends its caller's goroutine if the
// Pod has the label goexit.
type goexitUIDPod struct{ corev1.Pod }

func (p *goexitUIDPod) GetUID() types.UID {
	if p.Labels["goexit"] != "" {
		runtime.Goexit()
	}
	return p.Pod.GetUID()
}

func (p *goexitUIDPod) DeepCopyObject() kruntime.Object {
	return &goexitUIDPod{Pod: *p.Pod.DeepCopy()}
}

// goexitLog is a slog.Handler that ends its caller's goroutine with
// runtime.Goexit on the record whose message is on.
type goexitLog struct{ on string }

func (h goexitLog) Enabled(context.Context, slog.Level) bool { return true }
func (h goexitLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.on {
		runtime.Goexit()
	}
	return nil
}
func (h goexitLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h goexitLog) WithGroup(string) slog.Handler      { return h }
