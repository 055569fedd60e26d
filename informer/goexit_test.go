package informer_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/listwatchtest"
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
