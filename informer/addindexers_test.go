package informer_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/indexer"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/processor"
)

// guard bounds a wait that only a held informer makes long: it is a limit
// on failure, not a wait (the tests below pass in milliseconds).
const guard = 10 * time.Second

// TestAddIndexersDoesNotHoldTheInformer runs AddIndexers on a running
// informer with an index function that, on every object AddIndexers itself
// computes, changes that object at the source and waits for a handler to be
// told, as a user's index function may while changes keep coming. The
// informer must go on applying changes and telling handlers meanwhile, and
// the function may call AddEventHandler. (AddIndexers used to compute the
// objects changed during each pass again, and from the end of its third
// pass held writes back while it did: the informer's commit waited, under
// the lock AddEventHandler takes, for an index function that waited for the
// informer. The object changed at each step made every pass end with a
// change, so the fourth pass always ran with writes held.)
func TestAddIndexersDoesNotHoldTheInformer(t *testing.T) {
	for _, addHandler := range []bool{false, true} {
		t.Run(fmt.Sprintf("AddEventHandler=%v", addHandler), func(t *testing.T) {
			testAddIndexersDoesNotHoldTheInformer(t, addHandler)
		})
	}
}

func testAddIndexersDoesNotHoldTheInformer(t *testing.T, addHandler bool) {
	src := newSource()
	src.Create(pod("ns", "churn"))
	// prepared receives the resourceVersion of each object the informer
	// prepares (runs its index functions on) for the cache.
	prepared := make(chan string, 100)
	spy := func(p *corev1.Pod) ([]string, error) {
		select {
		case prepared <- p.ResourceVersion:
		default:
		}
		return nil, nil
	}
	inf := informer.New[*corev1.Pod](src, informer.WithIndexers(indexer.Indexers[*corev1.Pod]{"spy": spy}))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- inf.Run(ctx) }()
	select {
	case <-inf.Synced():
	case <-time.After(guard):
		t.Fatal("never synced")
	}
	told := make(chan string, 100) // the resourceVersions of updates the handler is told of
	inf.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{UpdateFunc: func(_, p *corev1.Pod) { told <- p.ResourceVersion }})

	// waitFor receives from ch until it gets rv; false if the guard runs out.
	waitFor := func(ch <-chan string, rv string) bool {
		timeout := time.After(guard)
		for {
			select {
			case got := <-ch:
				if got == rv {
					return true
				}
			case <-timeout:
				return false
			}
		}
	}
	var steps atomic.Int64
	step := func() {
		p := pod("ns", "churn")
		p.Labels = map[string]string{"step": fmt.Sprint(steps.Add(1))}
		rv := src.Update(p).ResourceVersion
		if addHandler {
			// Once the informer has prepared the change, it stores it
			// under the lock AddEventHandler takes.
			if !waitFor(prepared, rv) {
				t.Errorf("the informer did not prepare change %s", rv)
				return
			}
			inf.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{})
		}
		if !waitFor(told, rv) {
			t.Errorf("the handler was not told of change %s while an index function of AddIndexers ran", rv)
		}
	}
	byStep := func(p *corev1.Pod) ([]string, error) {
		if addHandler {
			inf.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{})
		}
		// The cached object is p when AddIndexers computes it; a change
		// the informer prepares is not cached yet.
		if cached, ok := inf.Indexer().GetByKey("ns/churn"); ok && cached == p && steps.Load() < 10 {
			step()
		}
		return []string{p.Labels["step"]}, nil
	}
	added := make(chan error, 1)
	go func() { added <- inf.AddIndexers(indexer.Indexers[*corev1.Pod]{"step": byStep}) }()
	select {
	case err := <-added:
		require.NoError(t, err)
	case <-time.After(3 * guard):
		t.Errorf("AddIndexers did not return: its index function and the informer wait for each other (%d steps)", steps.Load())
		cancel()
		select {
		case <-ran:
		case <-time.After(guard):
			t.Error("and Run did not return once cancelled")
		}
		return
	}
	assert.Equal(t, int64(1), steps.Load(), "the object AddIndexers computes, computed once")
	// The change made while AddIndexers computed is in the new index.
	keys, err := inf.Indexer().IndexKeys("step", fmt.Sprint(steps.Load()))
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/churn"}, keys)
	values := inf.Indexer().ListIndexFuncValues("step")
	assert.Equal(t, []string{fmt.Sprint(steps.Load())}, values, "no stale value in the new index")
	cancel()
	select {
	case err := <-ran:
		require.NoError(t, err)
	case <-time.After(guard):
		t.Error("Run did not return once cancelled")
	}
}

// A change that comes while AddIndexers computes, whose object an added
// index function fails on, is applied and told to the handlers all the
// same, and AddIndexers fails on it. The change used to fail to apply, and
// was lost from the cache until the object changed again, also when
// AddIndexers failed and added nothing.
func TestAddIndexersFailingOnAChangeKeepsTheChange(t *testing.T) {
	src := newSource()
	src.Create(pod("ns", "a"))
	inf := informer.New[*corev1.Pod](src)
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- inf.Run(ctx) }()
	defer func() { cancel(); <-ran }()
	select {
	case <-inf.Synced():
	case <-time.After(guard):
		t.Fatal("never synced")
	}
	told := make(chan string, 10) // the team label of each update told
	inf.AddEventHandler(processor.HandlerFuncs[*corev1.Pod]{UpdateFunc: func(_, p *corev1.Pod) { told <- p.Labels["team"] }})
	team := func(p *corev1.Pod) ([]string, error) {
		if p.Labels["team"] == "none" {
			return nil, errors.New("no team")
		}
		if cached, ok := inf.Indexer().GetByKey("ns/a"); ok && cached == p {
			// AddIndexers computes the cached object: change it meanwhile.
			changed := pod("ns", "a")
			changed.Labels = map[string]string{"team": "none"}
			src.Update(changed)
			select {
			case got := <-told:
				assert.Equal(t, "none", got)
			case <-time.After(guard):
				t.Error("the change an added index function fails on was not applied")
			}
		}
		return []string{p.Labels["team"]}, nil
	}
	err := inf.AddIndexers(indexer.Indexers[*corev1.Pod]{"team": team})
	require.ErrorContains(t, err, `index "team" of ns/a: no team`)
	cached, ok := inf.Indexer().GetByKey("ns/a")
	require.True(t, ok)
	assert.Equal(t, "none", cached.Labels["team"], "the change is cached")
	_, err = inf.Indexer().IndexKeys("team", "")
	assert.ErrorIs(t, err, indexer.ErrUnknownIndex, "nothing added")
}
