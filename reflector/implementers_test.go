package reflector_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/fakelw"
	"github.com/listwatch/listwatch/reflector"
)

// One's own ListerWatcher, written carelessly: the Reflector stays correct,
// or fails with an error that says what the ListerWatcher did.

// ownLW is a ListerWatcher whose List and Watch the test supplies.
type ownLW struct {
	list    func(ctx context.Context, opts reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error)
	watch   func(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error)
	lists   atomic.Int64
	watches atomic.Int64
	spin    fakelw.SpinGuard
}

func (l *ownLW) List(ctx context.Context, opts reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
	l.lists.Add(1)
	l.spin.Asked(ctx)
	if l.list == nil {
		return reflector.ListMeta{ResourceVersion: "1"}, add(withRV(pod("a"), "1"))
	}
	return l.list(ctx, opts, add)
}

func (l *ownLW) Watch(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	l.spin.Asked(ctx)
	l.watches.Add(1)
	return l.watch(ctx, opts)
}

// closeOnly is a Watcher that ends when closed, but does not watch any
// context: its Next blocks until Close.
type closeOnly struct {
	done chan struct{}
	once sync.Once
}

func newCloseOnly() *closeOnly { return &closeOnly{done: make(chan struct{})} }

func (w *closeOnly) Next() (reflector.Event[*corev1.Pod], error) {
	<-w.done
	return reflector.Event[*corev1.Pod]{}, errors.New("closed")
}

func (w *closeOnly) Close() error { w.once.Do(func() { close(w.done) }); return nil }

func ownReflector(lw *ownLW, errs *errorLog, mode reflector.Mode) (*reflector.Reflector[*corev1.Pod], *recorder) {
	store := newRecorder()
	return reflector.New[*corev1.Pod](lw, store, reflector.WithMode[*corev1.Pod](mode),
		reflector.WithErrorHandler[*corev1.Pod](errs.add)), store
}

func errorsContaining(errs []error, s string) int {
	n := 0
	for _, err := range errs {
		if strings.Contains(err.Error(), s) {
			n++
		}
	}
	return n
}

// A Watch that returns neither a Watcher nor an error fails the watch,
// which is tried again after a backoff; Run used to panic.
func TestWatchReturningNothingFailsTheWatch(t *testing.T) {
	for _, mode := range []reflector.Mode{reflector.ListWatch, reflector.WatchList} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lw := &ownLW{watch: func(context.Context, reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
					return nil, nil
				}}
				var errs errorLog
				r, _ := ownReflector(lw, &errs, mode)
				defer run(t, r)()
				time.Sleep(time.Minute)
				synctest.Wait()
				assert.NotZero(t, errorsContaining(errs.all(), "returned no Watcher and no error"))
				assert.Less(t, lw.watches.Load(), int64(20), "tried again after a backoff")
			})
		})
	}
}

// Run returns when its ctx ends, also with a Watcher that does not watch
// the ctx it was opened with: the Reflector closes it.
func TestRunClosesAWatcherThatIgnoresCtx(t *testing.T) {
	for _, mode := range []reflector.Mode{reflector.ListWatch, reflector.WatchList} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lw := &ownLW{watch: func(_ context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
					return newCloseOnly(), nil
				}}
				var errs errorLog
				r, _ := ownReflector(lw, &errs, mode)
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan struct{})
				go func() {
					defer close(done)
					r.Run(ctx)
				}()
				synctest.Wait()
				require.Equal(t, int64(1), lw.watches.Load(), "watching")
				cancel()
				synctest.Wait()
				select {
				case <-done:
				default:
					t.Fatal("Run did not return when its ctx ended")
				}
			})
		})
	}
}

// zeroEvents is a Watcher whose source is gone: a receive from a closed
// channel, a zero Event and no error, for ever.
type zeroEvents struct {
	ch chan reflector.Event[*corev1.Pod]
}

func (w zeroEvents) Next() (reflector.Event[*corev1.Pod], error) { return <-w.ch, nil }
func (w zeroEvents) Close() error                                { return nil }

// A zero Event ends the watch as a failure, so a Watcher that sends them
// for ever is watched again after a backoff; it used to spin, reporting
// "unknown event type" thousands of times a second.
func TestZeroEventsEndTheWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ch := make(chan reflector.Event[*corev1.Pod])
		close(ch)
		lw := &ownLW{watch: func(context.Context, reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
			return zeroEvents{ch: ch}, nil
		}}
		var errs errorLog
		r, _ := ownReflector(lw, &errs, reflector.ListWatch)
		defer run(t, r)()
		time.Sleep(time.Minute)
		synctest.Wait()
		all := errs.all()
		assert.Less(t, len(all), 40, "one error a watch, with a backoff between watches")
		assert.Equal(t, len(all), errorsContaining(all, "without a type (a zero Event)"), "errors: %v", all)
	})
}

// A page that gives back the continue token it was asked with fails the
// list, which is tried again after a backoff; it used to page for ever
// without a word, and without noticing ctx.
func TestRepeatedContinueTokenFailsTheList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var pages atomic.Int64
		lw := &ownLW{
			list: func(_ context.Context, opts reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
				n := pages.Add(1)
				if err := add(withRV(pod(fmt.Sprint("p", n)), "1")); err != nil {
					return reflector.ListMeta{}, err
				}
				return reflector.ListMeta{ResourceVersion: "1", Continue: "same-token"}, nil
			},
			watch: func(context.Context, reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
				return newCloseOnly(), nil
			},
		}
		var errs errorLog
		r, store := ownReflector(lw, &errs, reflector.ListWatch)
		defer run(t, r)()
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Less(t, pages.Load(), int64(60), "two pages a list, with a backoff between lists")
		assert.NotZero(t, errorsContaining(errs.all(), "gave back its own continue token"))
		assert.Empty(t, store.calls(), "nothing half-listed is stored")
	})
}

// Pages without items, each with a new continue token, for ever: after
// 100 in a row, each next page waits the backoff, and the wait is
// reported; the list asked for them as fast as it could (70,000 in 200 ms
// of a test), with no word.
func TestEmptyPagesWithNewTokensArePaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var pages atomic.Int64
		lw := &ownLW{
			list: func(context.Context, reflector.ListOptions, func(*corev1.Pod) error) (reflector.ListMeta, error) {
				return reflector.ListMeta{ResourceVersion: "1", Continue: fmt.Sprint("token-", pages.Add(1))}, nil
			},
			watch: func(context.Context, reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
				return newCloseOnly(), nil
			},
		}
		var errs errorLog
		r, store := ownReflector(lw, &errs, reflector.ListWatch)
		defer run(t, r)()
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.GreaterOrEqual(t, pages.Load(), int64(101), "100 pages without a pause")
		assert.Less(t, pages.Load(), int64(120), "then one a backoff")
		assert.NotZero(t, errorsContaining(errs.all(), "list pages without items keep coming"))
		assert.Contains(t, r.LastError().Error(), "in a row", "WaitForCacheSync says why")
		assert.Empty(t, store.calls(), "nothing half-listed is stored")
	})
}

// A server that filters after it pages sends pages of no items, each with
// a continue token, before the ones with items: up to 100 in a row are
// asked for without a pause and without an error.
func TestEmptyPagesBeforeTheItemsAreListed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var pages atomic.Int64
		lw := &ownLW{
			list: func(_ context.Context, _ reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
				n := pages.Add(1)
				switch {
				case n%101 == 0: // a page with an item after 100 empty ones
					return reflector.ListMeta{ResourceVersion: "1", Continue: fmt.Sprint("token-", n)}, add(withRV(pod(fmt.Sprint("p", n)), "1"))
				case n < 303:
					return reflector.ListMeta{ResourceVersion: "1", Continue: fmt.Sprint("token-", n)}, nil
				}
				return reflector.ListMeta{ResourceVersion: "1"}, nil // the last page, empty
			},
			watch: func(context.Context, reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
				return newCloseOnly(), nil
			},
		}
		var errs errorLog
		r, store := ownReflector(lw, &errs, reflector.ListWatch)
		start := time.Now()
		defer run(t, r)()
		synctest.Wait()
		assert.Zero(t, time.Since(start), "no page waited")
		assert.Equal(t, int64(304), pages.Load(), "three runs of 100 empty pages, each before a page of one item, and the last")
		assert.Equal(t, []string{"replace 3@1"}, store.calls())
		assert.Empty(t, errs.all())
	})
}

// A list without a resourceVersion is of a resource that is listed but not
// watched (kube-apiserver's componentstatuses), whose objects have none
// either: they are cached, and, as a watch from "" would start at the
// server's newest state and miss what was deleted in between, the resource
// is listed again every 30 s (the backoff's cap), with consistent reads,
// without an error. A list with a resourceVersion again is watched from it.
// Such a list used to fail, and the informer never synced.
func TestListWithoutResourceVersionIsListedOnATimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		names, listRV := []string{"a", "b"}, ""
		var asked []reflector.ListOptions
		lw := &ownLW{
			list: func(_ context.Context, opts reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
				mu.Lock()
				defer mu.Unlock()
				asked = append(asked, opts)
				for _, n := range names {
					if err := add(withRV(pod(n), listRV)); err != nil {
						return reflector.ListMeta{}, err
					}
				}
				return reflector.ListMeta{ResourceVersion: listRV}, nil
			},
			watch: func(context.Context, reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
				return newCloseOnly(), nil
			},
		}
		var errs errorLog
		r, store := ownReflector(lw, &errs, reflector.ListWatch)
		defer run(t, r)()
		synctest.Wait()
		assert.Equal(t, []string{"replace 2@"}, store.calls())
		assert.Equal(t, []string{"a@", "b@"}, store.keys())
		assert.Empty(t, r.LastSyncResourceVersion())

		mu.Lock()
		names = []string{"a", "c"}
		mu.Unlock()
		time.Sleep(29 * time.Second)
		synctest.Wait()
		assert.Len(t, store.calls(), 1, "listed again before 30 s")
		time.Sleep(5 * time.Second) // past 33 s: 30 s and up to a tenth more
		synctest.Wait()
		assert.Equal(t, []string{"replace 2@", "replace 2@"}, store.calls())
		assert.Equal(t, []string{"a@", "c@"}, store.keys(), "b deleted, c created")
		assert.Zero(t, lw.watches.Load(), "nothing to watch from")
		assert.Empty(t, errs.all())
		assert.NoError(t, r.LastError())

		mu.Lock()
		listRV = "7"
		mu.Unlock()
		time.Sleep(34 * time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"replace 2@", "replace 2@", "replace 2@7"}, store.calls())
		assert.Equal(t, int64(1), lw.watches.Load(), "watched from the list's resourceVersion")
		assert.Equal(t, "7", r.LastSyncResourceVersion())
		mu.Lock()
		defer mu.Unlock()
		for i, opts := range asked {
			assert.Empty(t, opts.ResourceVersion, "list %d: a consistent read", i)
		}
	})
}

// The interval of a resource listed without a resourceVersion is at least a
// second, as WithRelistInterval's is, even with a backoff capped far below.
func TestUnversionedIntervalIsAtLeastASecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &ownLW{list: func(_ context.Context, _ reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
			return reflector.ListMeta{}, add(pod("a"))
		}}
		r := reflector.New[*corev1.Pod](lw, newRecorder(), reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithBackoff[*corev1.Pod](time.Millisecond, time.Millisecond))
		defer run(t, r)()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		assert.LessOrEqual(t, lw.lists.Load(), int64(11), "lists in 10 s")
		assert.GreaterOrEqual(t, lw.lists.Load(), int64(9), "lists in 10 s")
	})
}

// In a list with a resourceVersion, an item without one is rejected, as in
// a watch, and the rest of the list cached; in a list without one, it is
// cached, also when its page was asked for again.
func TestListItemsWithoutResourceVersion(t *testing.T) {
	for _, tc := range []struct {
		name, listRV string
		want         []string
		rejected     int
	}{
		{"the list has one", "5", []string{"a@5", "c@5"}, 1},
		{"the list has none", "", []string{"a@5", "b@", "c@5"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				second := 0
				lw := &ownLW{
					list: func(_ context.Context, opts reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
						if opts.Continue == "" {
							return reflector.ListMeta{ResourceVersion: tc.listRV, Continue: "next"}, add(withRV(pod("a"), "5"))
						}
						if err := add(pod("b")); err != nil {
							return reflector.ListMeta{}, err
						}
						if second++; second == 1 { // the page fails after b: asked for again
							return reflector.ListMeta{}, apierrors.NewServiceUnavailable("busy")
						}
						return reflector.ListMeta{ResourceVersion: tc.listRV}, add(withRV(pod("c"), "5"))
					},
					watch: func(context.Context, reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
						return newCloseOnly(), nil
					},
				}
				var errs errorLog
				r, store := ownReflector(lw, &errs, reflector.ListWatch)
				defer run(t, r)()
				time.Sleep(5 * time.Second) // past the page's backoff
				synctest.Wait()
				assert.Equal(t, []string{fmt.Sprintf("replace %d@%s", len(tc.want), tc.listRV)}, store.calls())
				assert.Equal(t, tc.want, store.keys())
				rejected := 0
				for _, err := range errs.all() {
					if errors.Is(err, reflector.ErrRejected) {
						rejected++
						assert.ErrorContains(t, err, "ns/b has no metadata.resourceVersion")
					}
				}
				assert.Equal(t, tc.rejected, rejected)
			})
		})
	}
}

// An add made after List returned is refused and reported: the object
// would be missing from the cache without a word.
func TestAddAfterListReturnedIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		late := make(chan error, 1)
		lw := &ownLW{
			list: func(_ context.Context, _ reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
				if err := add(withRV(pod("a"), "1")); err != nil {
					return reflector.ListMeta{}, err
				}
				go func() {
					time.Sleep(time.Second)
					late <- add(withRV(pod("late"), "1"))
				}()
				return reflector.ListMeta{ResourceVersion: "1"}, nil
			},
			watch: func(context.Context, reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
				return newCloseOnly(), nil
			},
		}
		var errs errorLog
		r, store := ownReflector(lw, &errs, reflector.ListWatch)
		defer run(t, r)()
		err := <-late
		synctest.Wait()
		assert.ErrorContains(t, err, "called add after it returned")
		assert.Equal(t, 1, errorsContaining(errs.all(), "called add after it returned"))
		assert.Equal(t, []string{"a@1"}, store.keys())
	})
}

// closedChanWatcher's Next receives from a channel that Close closes: after
// Close, Next gives the zero Event and no error.
type closedChanWatcher struct {
	ch   chan reflector.Event[*corev1.Pod]
	once sync.Once
}

func newClosedChanWatcher() *closedChanWatcher {
	return &closedChanWatcher{ch: make(chan reflector.Event[*corev1.Pod])}
}

func (w *closedChanWatcher) Next() (reflector.Event[*corev1.Pod], error) { return <-w.ch, nil }
func (w *closedChanWatcher) Close() error {
	w.once.Do(func() { close(w.ch) })
	return nil
}

// The zero Event after the relist timer closed the watch is that relist,
// not a failure (it was taken for one, and the relist never came).
func TestRelistDueWithAChannelWatcher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &ownLW{watch: func(context.Context, reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
			return newClosedChanWatcher(), nil
		}}
		var errs errorLog
		r := reflector.New[*corev1.Pod](lw, newRecorder(),
			reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithRelistInterval[*corev1.Pod](time.Minute),
			reflector.WithErrorHandler[*corev1.Pod](errs.add))
		defer run(t, r)()
		time.Sleep(10*time.Minute + time.Second)
		synctest.Wait()
		assert.GreaterOrEqual(t, lw.lists.Load(), int64(10), "a relist every minute")
		assert.Zero(t, errorsContaining(errs.all(), "zero Event"), "a relist that is due is no failure")
	})
}

// A zero Event in a streaming list, before its initial-events-end bookmark,
// is the end of the stream, as io.EOF is: the Reflector lists with LIST and
// syncs. (It was first taken for "streaming unsupported" in its message,
// then for a failure that retried streaming for ever, never syncing.)
func TestZeroEventInAStreamingListEndsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var streamed atomic.Int64
		lw := &ownLW{watch: func(_ context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
			if opts.SendInitialEvents {
				streamed.Add(1)
			}
			w := newClosedChanWatcher()
			w.Close() // the source is gone at once
			return w, nil
		}}
		var errs errorLog
		r, store := ownReflector(lw, &errs, reflector.Auto)
		defer run(t, r)()
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		assert.Equal(t, []string{"a@1"}, store.keys(), "synced from a LIST")
		assert.LessOrEqual(t, streamed.Load(), int64(2), "streaming given up after the second cut, as for io.EOF")
	})
}

// scriptedEvents gives its events, then blocks until closed.
type scriptedEvents struct {
	events []reflector.Event[*corev1.Pod] // Next's only
	done   chan struct{}
	once   sync.Once
}

func (w *scriptedEvents) Next() (reflector.Event[*corev1.Pod], error) {
	if len(w.events) > 0 {
		ev := w.events[0]
		w.events = w.events[1:]
		return ev, nil
	}
	<-w.done
	return reflector.Event[*corev1.Pod]{}, errors.New("closed")
}

func (w *scriptedEvents) Close() error { w.once.Do(func() { close(w.done) }); return nil }

// An event with an object but no type is skipped and reported, and the
// watch goes on: only the zero Event ends it.
func TestEventWithoutATypeIsSkipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &ownLW{watch: func(context.Context, reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
			return &scriptedEvents{done: make(chan struct{}), events: []reflector.Event[*corev1.Pod]{
				{Object: withRV(pod("b"), "2")}, // no Type
				{Type: reflector.Added, Object: withRV(pod("c"), "3")},
			}}, nil
		}}
		var errs errorLog
		r, store := ownReflector(lw, &errs, reflector.ListWatch)
		defer run(t, r)()
		synctest.Wait()
		assert.Equal(t, []string{"a@1", "c@3"}, store.keys())
		assert.Equal(t, int64(1), lw.watches.Load())
	})
}

// skipsAt is a Watcher that skips Watcher's event number skip (from 1), as
// the HTTP Watcher does one with an object of another kind: Next returns
// ErrSkipped in its place.
type skipsAt struct {
	reflector.Watcher[*corev1.Pod]
	skip, n int
}

func (w *skipsAt) Next() (reflector.Event[*corev1.Pod], error) {
	ev, err := w.Watcher.Next()
	if err == nil {
		if w.n++; w.n == w.skip {
			return reflector.Event[*corev1.Pod]{}, fmt.Errorf("%w: %s is of another kind", reflector.ErrSkipped, ev.Object.Name)
		}
	}
	return ev, err
}

// An event the Watcher skips (ErrSkipped) is reported, and the watch goes
// on: ending it would resume from the same resourceVersion, and the server
// would send the same event again, and end the watch again.
func TestSkippedWatchEventKeepsTheWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &ownLW{watch: func(context.Context, reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
			return &skipsAt{skip: 1, Watcher: &scriptedEvents{done: make(chan struct{}), events: []reflector.Event[*corev1.Pod]{
				{Type: reflector.Added, Object: withRV(pod("b"), "2")},
				{Type: reflector.Added, Object: withRV(pod("c"), "3")},
			}}}, nil
		}}
		var errs errorLog
		r, store := ownReflector(lw, &errs, reflector.ListWatch)
		defer run(t, r)()
		synctest.Wait()
		assert.Equal(t, []string{"a@1", "c@3"}, store.keys())
		assert.Equal(t, int64(1), lw.watches.Load())
		require.Len(t, errs.all(), 1)
		assert.ErrorIs(t, errs.all()[0], reflector.ErrSkipped)
	})
}

// A streaming list one of whose initial events the Watcher skipped is not
// stored: a list without that object would delete it from the cache. It
// is tried again after the backoff, and the whole one is stored.
func TestStreamingListWithASkippedEventIsNotStored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var streams atomic.Int64
		lw := &ownLW{watch: func(context.Context, reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
			end := withRV(&corev1.Pod{}, "5")
			end.Annotations = map[string]string{reflector.InitialEventsEndAnnotation: "true"}
			w := &scriptedEvents{done: make(chan struct{}), events: []reflector.Event[*corev1.Pod]{
				{Type: reflector.Added, Object: withRV(pod("a"), "3")},
				{Type: reflector.Added, Object: withRV(pod("b"), "4")},
				{Type: reflector.Bookmark, Object: end},
			}}
			if streams.Add(1) == 1 {
				return &skipsAt{skip: 2, Watcher: w}, nil // b skipped, the first time
			}
			return w, nil
		}}
		var errs errorLog
		r, store := ownReflector(lw, &errs, reflector.WatchList)
		defer run(t, r)()
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, []string{"replace 2@5"}, store.calls(), "only the whole list is stored")
		assert.Equal(t, int64(2), streams.Load())
		assert.Equal(t, 1, errorsContaining(errs.all(), "incomplete, so listed again"), "%v", errs.all())
	})
}

// An add under way when List returns is waited for and kept; before, it
// was lost without a word, and its transform and sharing raced with Run's
// goroutine.
func TestAddStraddlingListsReturnIsKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		entered, release := make(chan struct{}), make(chan struct{})
		lateErr := make(chan error, 1)
		lw := &ownLW{
			list: func(_ context.Context, _ reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
				if err := add(withRV(pod("a"), "1")); err != nil {
					return reflector.ListMeta{}, err
				}
				go func() { lateErr <- add(withRV(pod("late"), "1")) }()
				<-entered // the late add is in the transform
				return reflector.ListMeta{ResourceVersion: "1"}, nil
			},
			watch: func(context.Context, reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
				return newCloseOnly(), nil
			},
		}
		var errs errorLog
		store := newRecorder()
		r := reflector.New[*corev1.Pod](lw, store,
			reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithErrorHandler[*corev1.Pod](errs.add),
			reflector.WithTransform(func(p *corev1.Pod) (*corev1.Pod, error) {
				if p.Name == "late" {
					close(entered)
					<-release
				}
				return p, nil
			}))
		defer run(t, r)()
		synctest.Wait() // List returned; the Reflector waits for the late add
		assert.Empty(t, store.calls(), "nothing stored while an add is under way")
		close(release)
		require.NoError(t, <-lateErr)
		synctest.Wait()
		assert.Empty(t, errs.all())
		assert.Equal(t, []string{"a@1", "late@1"}, store.keys())
	})
}

// Under Auto, a ListerWatcher that ignores SendInitialEvents never sends
// the initial-events-end bookmark, and the Reflector waits for it as long
// as the stream is open; after a minute, LastError says what it waits for
// (it said nothing, and WaitForCacheSync only "still listing").
func TestAwaitedBookmarkShowsInLastError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &ownLW{watch: func(context.Context, reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
			return newCloseOnly(), nil
		}}
		var errs errorLog
		r, store := ownReflector(lw, &errs, reflector.Auto)
		stop := run(t, r)
		time.Sleep(59 * time.Second)
		synctest.Wait()
		assert.NoError(t, r.LastError(), "not yet")
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.ErrorContains(t, r.LastError(), "no initial-events-end bookmark yet after 1m0s")
		assert.ErrorContains(t, r.LastError(), "WithMode(ListWatch)")
		assert.Empty(t, errs.all(), "no failure to report")
		assert.Empty(t, store.calls())
		stop()
		assert.NoError(t, r.LastError(), "nothing is awaited once Run has returned")
	})
}

// A server that does not page as its continue tokens say, ignoring them or
// sending them round in a circle, would keep one list going for ever,
// collecting the same objects again and again. A page that begins with the
// object an earlier page of the list began with fails the list, which is
// reported and tried again after a backoff.
func TestListPagesThatRepeatFailTheList(t *testing.T) {
	pages := map[string]struct {
		items []string
		next  string
	}{
		"":  {[]string{"a", "b"}, "A"},
		"A": {[]string{"c", "d"}, "B"},
		"B": {[]string{"e"}, "A"},
	}
	for name, list := range map[string]func(n int64, opts reflector.ListOptions) ([]string, string){
		"continue ignored": func(n int64, _ reflector.ListOptions) ([]string, string) {
			return []string{"a", "b"}, fmt.Sprint("token-", n) // a new token, the first page again
		},
		"tokens in a circle": func(_ int64, opts reflector.ListOptions) ([]string, string) {
			p := pages[opts.Continue]
			return p.items, p.next
		},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lw := &ownLW{watch: func(ctx context.Context, _ reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
					<-ctx.Done()
					return nil, ctx.Err()
				}}
				lw.list = func(_ context.Context, opts reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
					items, next := list(lw.lists.Load(), opts)
					for _, name := range items {
						if err := add(withRV(pod(name), "5")); err != nil {
							return reflector.ListMeta{}, err
						}
					}
					return reflector.ListMeta{ResourceVersion: "10", Continue: next}, nil
				}
				var errs errorLog
				r, store := ownReflector(lw, &errs, reflector.ListWatch)
				defer run(t, r)()
				time.Sleep(time.Minute)
				synctest.Wait()
				assert.Empty(t, store.calls(), "no list that never ended reached the Store")
				failed := errorsContaining(errs.all(), "the list page began where an earlier page did")
				assert.Positive(t, failed)
				assert.Len(t, errs.all(), failed, "no other error")
				assert.Less(t, lw.lists.Load(), int64(100), "tried again after a backoff, a few pages each time")
			})
		})
	}
}

// A streaming list whose server ignores timeoutSeconds and never sends the
// initial-events-end bookmark is cut 30 s after the timeout it asked for,
// rather than waited for (and its events held) for ever; Auto then lists
// with LIST. A Watcher whose Close ends it with the zero Event is cut
// alike, and said to be.
func TestStreamingListWithoutEndIsCut(t *testing.T) {
	for name, stream := range map[string]func() reflector.Watcher[*corev1.Pod]{
		"an error once closed": func() reflector.Watcher[*corev1.Pod] {
			return &scriptedEvents{done: make(chan struct{}), events: []reflector.Event[*corev1.Pod]{
				{Type: reflector.Added, Object: withRV(pod("b"), "2")},
			}}
		},
		"the zero Event once closed": func() reflector.Watcher[*corev1.Pod] { return newClosedChanWatcher() },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var asked atomic.Int64 // the timeoutSeconds of the streaming list
				lw := &ownLW{watch: func(_ context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
					if !opts.SendInitialEvents {
						return newCloseOnly(), nil
					}
					asked.Store(opts.TimeoutSeconds)
					return stream(), nil
				}}
				var errs errorLog
				r := reflector.New[*corev1.Pod](lw, newRecorder(), reflector.WithMode[*corev1.Pod](reflector.Auto),
					reflector.WithErrorHandler[*corev1.Pod](errs.add), reflector.WithMinWatchTimeout[*corev1.Pod](time.Minute))
				defer run(t, r)()
				synctest.Wait()
				require.Positive(t, asked.Load())
				limit := time.Duration(asked.Load())*time.Second + 30*time.Second
				time.Sleep(limit - time.Second)
				synctest.Wait()
				assert.Zero(t, lw.lists.Load(), "still waiting for the bookmark")
				time.Sleep(2 * time.Second)
				synctest.Wait()
				assert.Equal(t, int64(1), lw.lists.Load(), "listed with LIST once the stream was cut")
				assert.Equal(t, 1, errorsContaining(errs.all(), "no initial-events-end bookmark within "+limit.String()))
			})
		})
	}
}

// A streaming list that sends one object twice holds it once, with the
// greater resourceVersion (the later if they do not compare, as the
// DeltaFIFO's Replace chooses), so that what it holds is bounded by the
// objects the server has.
func TestStreamingListKeepsTheLaterOfTwins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &ownLW{watch: func(_ context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
			end := withRV(&corev1.Pod{}, "4")
			end.Annotations = map[string]string{reflector.InitialEventsEndAnnotation: "true"}
			return &scriptedEvents{done: make(chan struct{}), events: []reflector.Event[*corev1.Pod]{
				{Type: reflector.Added, Object: withRV(pod("a"), "3")},
				{Type: reflector.Added, Object: withRV(pod("b"), "2")},
				{Type: reflector.Added, Object: withRV(pod("a"), "1")},
				{Type: reflector.Added, Object: withRV(pod("c"), "1")},
				{Type: reflector.Added, Object: withRV(pod("c"), "x")},
				{Type: reflector.Bookmark, Object: end},
			}}, nil
		}}
		var errs errorLog
		r, store := ownReflector(lw, &errs, reflector.WatchList)
		defer run(t, r)()
		synctest.Wait()
		assert.Equal(t, []string{"replace 3@4"}, store.calls())
		assert.Equal(t, []string{"a@3", "b@2", "c@x"}, store.keys())
		assert.Empty(t, errs.all())
	})
}

// A relist refused with 410 asks for the server's latest state; one older
// than the cache is refused like any list older than the cache, and taken
// only once the server has been behind for two minutes (it was taken at
// once, with a report saying the server had been behind for minutes).
func TestOlderStateAfterA410IsTakenAfterTwoMinutes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var lists, watches atomic.Int64
		lw := &ownLW{
			list: func(_ context.Context, opts reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
				switch lists.Add(1) {
				case 1:
					return reflector.ListMeta{ResourceVersion: "10"}, add(withRV(pod("a"), "10"))
				case 2: // the relist, at least as new as 12
					return reflector.ListMeta{}, apierrors.NewResourceExpired("too old resource version")
				default: // the latest state: older than the cache
					return reflector.ListMeta{ResourceVersion: "7"}, add(withRV(pod("a"), "7"))
				}
			},
			watch: func(_ context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
				if watches.Add(1) == 1 {
					return &scriptedEvents{done: make(chan struct{}), events: []reflector.Event[*corev1.Pod]{
						{Type: reflector.Modified, Object: withRV(pod("a"), "12")},
						{Type: reflector.Error, Status: &metav1.Status{Code: http.StatusGone, Reason: metav1.StatusReasonExpired}},
					}}, nil
				}
				return newCloseOnly(), nil
			},
		}
		var errs errorLog
		r, store := ownReflector(lw, &errs, reflector.ListWatch)
		defer run(t, r)()
		backInTime := func() (n int) {
			for _, err := range errs.all() {
				if errors.Is(err, reflector.ErrBackInTime) {
					n++
				}
			}
			return n
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, []string{"a@12"}, store.keys(), "an older state is not taken at once")
		assert.Zero(t, backInTime())
		time.Sleep(3 * time.Minute)
		synctest.Wait()
		assert.Equal(t, []string{"a@7"}, store.keys(), "but after two minutes")
		assert.Equal(t, 1, backInTime())
	})
}

// The objects of a streaming list that the transform fails on are held
// once per object too (the Store keeps what it has for them: only their
// keys are used), so that a server that sends one of them for ever takes
// no more memory.
func TestStreamingListHoldsOneLeftOutPerObject(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 1000
		lw := &ownLW{watch: func(_ context.Context, opts reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
			var evs []reflector.Event[*corev1.Pod]
			for i := range n {
				evs = append(evs, reflector.Event[*corev1.Pod]{Type: reflector.Added, Object: withRV(pod("bad"), fmt.Sprint(i+1))})
			}
			end := withRV(&corev1.Pod{}, fmt.Sprint(n+1))
			end.Annotations = map[string]string{reflector.InitialEventsEndAnnotation: "true"}
			evs = append(evs, reflector.Event[*corev1.Pod]{Type: reflector.Bookmark, Object: end})
			return &scriptedEvents{done: make(chan struct{}), events: evs}, nil
		}}
		store := &keepCounter{recorder: newRecorder()}
		r := reflector.New[*corev1.Pod](lw, store, reflector.WithMode[*corev1.Pod](reflector.WatchList),
			reflector.WithErrorHandler[*corev1.Pod](func(error) {}),
			reflector.WithTransform(func(p *corev1.Pod) (*corev1.Pod, error) { return nil, errors.New("refused") }))
		defer run(t, r)()
		synctest.Wait()
		assert.Equal(t, int64(1), store.kept.Load(), "one object, held once")
	})
}

// keepCounter is a recorder that is a KeepingStore and counts the objects
// it was last told to keep.
type keepCounter struct {
	*recorder
	kept atomic.Int64
}

func (k *keepCounter) ReplaceKeeping(list, keep []*corev1.Pod, rv string) error {
	k.kept.Store(int64(len(keep)))
	return k.Replace(list, rv)
}

// In Auto mode, a resource whose LIST has no resourceVersion, and whose
// watch a role forbids (one that grants list only), is listed every 30 s
// without an error after the first: a streaming list, a watch, cannot give
// it a state to watch from, and each one tried again is a 403 reported,
// then a recovery, every 30 s.
func TestUnversionedListIsNotStreamedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &ownLW{
			list: func(_ context.Context, _ reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
				return reflector.ListMeta{}, add(pod("a"))
			},
			watch: func(context.Context, reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
				return nil, apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("list only"))
			},
		}
		var errs errorLog
		r, store := ownReflector(lw, &errs, reflector.Auto)
		defer run(t, r)()
		synctest.Wait()
		require.Equal(t, []string{"replace 1@"}, store.calls())
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		assert.GreaterOrEqual(t, lw.lists.Load(), int64(4), "listed every 30 s")
		assert.Equal(t, int64(1), lw.watches.Load(), "one streaming list, forbidden")
		assert.Len(t, errs.all(), 1, "one 403, not one every 30 s")
	})
}
