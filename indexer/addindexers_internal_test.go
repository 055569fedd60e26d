package indexer

import (
	"errors"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func teamPod(name, team string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"team": team}}}
}

func byTeam(p *corev1.Pod) ([]string, error) {
	switch team := p.Labels["team"]; team {
	case "fail":
		return nil, errors.New("no team")
	case "panic":
		panic("no team")
	default:
		return []string{team}, nil
	}
}

// gatedAddIndexers starts AddIndexers of index "team" (byTeam) on x and
// returns once AddIndexers has published it and is computing: its first
// call of the index function waits until release is called. Calls from
// writes (the object is not the one stored under its key) never wait.
// calls counts every call; each call first calls also, if not nil.
func gatedAddIndexers(t *testing.T, x *Indexer[*corev1.Pod], also func(*corev1.Pod)) (release func() error, calls *atomic.Int64) {
	t.Helper()
	calls = new(atomic.Int64)
	entered, released := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	team := func(p *corev1.Pod) ([]string, error) {
		calls.Add(1)
		if also != nil {
			also(p)
		}
		if stored, _ := x.GetByKey(MetaNamespaceKey(p)); stored == p && first.CompareAndSwap(false, true) {
			close(entered)
			<-released
		}
		return byTeam(p)
	}
	done := make(chan error, 1)
	go func() { done <- x.AddIndexers(Indexers[*corev1.Pod]{"team": team}) }()
	select {
	case <-entered:
	case err := <-done:
		t.Fatalf("AddIndexers returned %v without computing", err)
	}
	return func() error { close(released); return <-done }, calls
}

func teamKeys(t *testing.T, x *Indexer[*corev1.Pod], team string) []string {
	t.Helper()
	keys, err := x.IndexKeys("team", team)
	require.NoError(t, err)
	slices.Sort(keys)
	return keys
}

// Writes committed between AddIndexers' publish of its indexes and their
// install bring the new indexes' values with them, and those win over
// what AddIndexers computed from the object it found stored: the index
// holds every object's current values, and no stale one.
func TestAddIndexersKeepsWritesMadeMeanwhile(t *testing.T) {
	x := New(Indexers[*corev1.Pod]{NamespaceIndex: NamespaceIndexFunc[*corev1.Pod]})
	for _, name := range []string{"a", "b", "c", "d"} {
		require.NoError(t, x.Add(teamPod(name, "red")))
	}
	stale, err := x.Prepare(teamPod("z", "blue")) // before the publish
	require.NoError(t, err)

	release, _ := gatedAddIndexers(t, x, nil)
	assert.False(t, x.Commit(stale), "a Write prepared before AddIndexers began")
	require.NoError(t, x.Update(teamPod("a", "blue")))
	require.NoError(t, x.Delete(teamPod("b", "")))
	require.NoError(t, x.Delete(teamPod("c", "")))
	require.NoError(t, x.Add(teamPod("c", "green")))
	require.NoError(t, x.Add(teamPod("e", "blue")))
	early, err := x.Prepare(teamPod("f", "blue")) // with the pending index
	require.NoError(t, err)
	_, err = x.IndexKeys("team", "blue")
	require.ErrorIs(t, err, ErrUnknownIndex, "not installed yet")
	checkInvariants(t, x.s)
	require.NoError(t, release())

	assert.True(t, x.Commit(early), "a Write prepared with the indexes AddIndexers has installed since")
	checkInvariants(t, x.s)
	assert.Equal(t, []string{"ns/a", "ns/e", "ns/f"}, teamKeys(t, x, "blue"))
	assert.Equal(t, []string{"ns/d"}, teamKeys(t, x, "red"))
	assert.Equal(t, []string{"ns/c"}, teamKeys(t, x, "green"))
	assert.ElementsMatch(t, []string{"blue", "red", "green"}, x.ListIndexFuncValues("team"))
	ns, err := x.IndexKeys(NamespaceIndex, "ns")
	require.NoError(t, err)
	assert.Len(t, ns, 5)
	for _, key := range x.ListKeys() {
		_, name, _ := SplitMetaNamespaceKey(key)
		require.NoError(t, x.Delete(teamPod(name, "")))
	}
	assert.Empty(t, x.ListIndexFuncValues("team"))
	checkInvariants(t, x.s)
}

// A Replace while AddIndexers computes swaps in a store whose objects
// AddIndexers never saw: it computes the pending index for them itself,
// whether AddIndexers is still computing when it swaps or has installed
// the index meanwhile.
func TestReplaceWhileAddIndexersComputes(t *testing.T) {
	t.Run("swapped before the install", func(t *testing.T) {
		x := New[*corev1.Pod](nil)
		require.NoError(t, x.Add(teamPod("a", "red")))
		require.NoError(t, x.Add(teamPod("b", "red")))
		release, _ := gatedAddIndexers(t, x, nil)
		require.NoError(t, x.Replace([]*corev1.Pod{teamPod("a", "blue"), teamPod("c", "green")}, ""))
		require.NoError(t, release())
		checkInvariants(t, x.s)
		assert.Equal(t, []string{"ns/a"}, teamKeys(t, x, "blue"))
		assert.Equal(t, []string{"ns/c"}, teamKeys(t, x, "green"))
		assert.Empty(t, teamKeys(t, x, "red"))
	})
	t.Run("installed before the swap", func(t *testing.T) {
		x := New[*corev1.Pod](nil)
		require.NoError(t, x.Add(teamPod("a", "red")))
		// Replace computes the pending index of held, and waits there
		// until AddIndexers has installed it.
		held := teamPod("held", "blue")
		computing, installed := make(chan struct{}), make(chan struct{})
		release, _ := gatedAddIndexers(t, x, func(p *corev1.Pod) {
			if p == held {
				close(computing)
				<-installed
			}
		})
		replaced := make(chan error, 1)
		go func() { replaced <- x.Replace([]*corev1.Pod{teamPod("a", "green"), held}, "") }()
		<-computing
		require.NoError(t, release())
		close(installed)
		require.NoError(t, <-replaced)
		checkInvariants(t, x.s)
		assert.Equal(t, []string{"ns/a"}, teamKeys(t, x, "green"))
		assert.Equal(t, []string{"ns/held"}, teamKeys(t, x, "blue"))
	})
}

// An AddIndexers whose index function fails, panics or ends its goroutine
// changes nothing: the index is not added, Writes prepared with it are
// refused, and later writes do not run its function. Writes stored while
// it computed stay stored; one the added function failed on failed.
func TestAddIndexersFailingChangesNothing(t *testing.T) {
	for _, how := range []string{"fail", "panic", "exit"} {
		t.Run(how, func(t *testing.T) {
			x := New(Indexers[*corev1.Pod]{NamespaceIndex: NamespaceIndexFunc[*corev1.Pod]})
			require.NoError(t, x.Add(teamPod("a", "red")))
			require.NoError(t, x.Add(teamPod("b", how))) // the object AddIndexers fails on
			before := x.s.indexes

			calls := new(atomic.Int64)
			entered, released := make(chan struct{}), make(chan struct{})
			var first atomic.Bool
			team := func(p *corev1.Pod) ([]string, error) {
				calls.Add(1)
				if stored, _ := x.GetByKey(MetaNamespaceKey(p)); stored == p {
					if first.CompareAndSwap(false, true) {
						close(entered)
						<-released
					}
					if p.Labels["team"] == "exit" {
						runtime.Goexit()
					}
				}
				return byTeam(p)
			}
			done := make(chan error, 1)
			go func() {
				err := errors.New("AddIndexers' goroutine ended")
				defer func() { done <- err }()
				err = x.AddIndexers(Indexers[*corev1.Pod]{"team": team})
			}()
			<-entered
			require.NoError(t, x.Add(teamPod("c", "green")), "a write stored while AddIndexers computes")
			require.NoError(t, x.Add(teamPod("d", "fail")), "a write the added index function fails on is stored all the same")
			pending, err := x.Prepare(teamPod("e", "blue"))
			require.NoError(t, err)
			close(released)
			err = <-done
			require.Error(t, err)
			if how != "exit" {
				assert.ErrorContains(t, err, "indexer: AddIndexers: index \"team\" of ns/b")
			}

			assert.Same(t, before, x.s.indexes, "the indexes are as they were")
			assert.Same(t, before, x.prep, "writes are prepared with them again")
			assert.Nil(t, x.pending)
			_, err = x.IndexKeys("team", "red")
			require.ErrorIs(t, err, ErrUnknownIndex)
			assert.False(t, x.Commit(pending), "a Write prepared with the withdrawn index")
			checkInvariants(t, x.s)
			assert.ElementsMatch(t, []string{"ns/a", "ns/b", "ns/c", "ns/d"}, x.ListKeys())

			n := calls.Load()
			require.NoError(t, x.Add(teamPod("d", "fail")), "the withdrawn function is not run")
			require.NoError(t, x.Add(teamPod("e", "blue")))
			assert.Equal(t, n, calls.Load(), "calls of the withdrawn index function")
			checkInvariants(t, x.s)
			require.NoError(t, x.Delete(teamPod("b", "")))
			require.NoError(t, x.Delete(teamPod("d", "")))
			require.NoError(t, x.AddIndexers(Indexers[*corev1.Pod]{"team": byTeam}), "the name is free again")
			assert.Equal(t, []string{"ns/e"}, teamKeys(t, x, "blue"))
			checkInvariants(t, x.s)
		})
	}
}

// A write stored while AddIndexers computes, whose object an added index
// function fails on, is stored all the same (a change the informer applies
// does not depend on indexes that may never be added), and AddIndexers
// fails on it as on an object stored before, unless the key was written
// again or deleted before it installs.
func TestAddIndexersFailsOnAWriteMadeMeanwhile(t *testing.T) {
	for _, tc := range []struct {
		name  string
		then  func(x *Indexer[*corev1.Pod]) error // after d is stored failing
		fails bool
	}{
		{"stored", func(*Indexer[*corev1.Pod]) error { return nil }, true},
		{"written again", func(x *Indexer[*corev1.Pod]) error { return x.Update(teamPod("d", "blue")) }, false},
		{"deleted", func(x *Indexer[*corev1.Pod]) error { return x.Delete(teamPod("d", "")) }, false},
		{"replaced with it", func(x *Indexer[*corev1.Pod]) error {
			return x.Replace([]*corev1.Pod{teamPod("a", "red"), teamPod("d", "fail")}, "")
		}, true},
		{"replaced without it", func(x *Indexer[*corev1.Pod]) error {
			return x.Replace([]*corev1.Pod{teamPod("a", "red")}, "")
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := New(Indexers[*corev1.Pod]{NamespaceIndex: NamespaceIndexFunc[*corev1.Pod]})
			require.NoError(t, x.Add(teamPod("a", "red")))
			before := x.s.indexes
			release, _ := gatedAddIndexers(t, x, nil)
			require.NoError(t, x.Add(teamPod("d", "fail")))
			require.NoError(t, tc.then(x))
			err := release()
			checkInvariants(t, x.s)
			if !tc.fails {
				require.NoError(t, err)
				assert.Equal(t, []string{"ns/a"}, teamKeys(t, x, "red"))
				return
			}
			require.ErrorContains(t, err, `indexer: AddIndexers: index "team" of ns/d: no team`)
			assert.Same(t, before, x.s.indexes, "the indexes are as they were")
			assert.Nil(t, x.pending)
			got, ok := x.GetByKey("ns/d")
			require.True(t, ok, "the write is kept")
			assert.Equal(t, "fail", got.Labels["team"])
		})
	}
}

// A Write prepared while AddIndexers computes, whose object an added index
// function fails on, is refused by Commit once AddIndexers has installed
// its indexes (it failed on nothing stored): prepared again, it fails on
// them, as a write made after would.
func TestWriteFailingAnAddedIndexAfterItIsInstalled(t *testing.T) {
	x := New(Indexers[*corev1.Pod]{NamespaceIndex: NamespaceIndexFunc[*corev1.Pod]})
	require.NoError(t, x.Add(teamPod("a", "red")))
	release, _ := gatedAddIndexers(t, x, nil)
	w, err := x.Prepare(teamPod("d", "fail"))
	require.NoError(t, err)
	require.NoError(t, release())
	assert.False(t, x.Commit(w), "prepared before the install")
	_, err = x.Prepare(teamPod("d", "fail"))
	require.ErrorContains(t, err, "no team")
	require.ErrorContains(t, x.Add(teamPod("d", "fail")), "no team")
	_, ok := x.GetByKey("ns/d")
	assert.False(t, ok)
	checkInvariants(t, x.s)
}

// A Replace that computes while AddIndexers installs its indexes, with an
// item an added index function fails on, is built again with them
// installed, and fails on that item, as a Replace made after would: it does
// not store the item without the installed index's values.
func TestReplaceFailingAnAddedIndexInstalledMeanwhile(t *testing.T) {
	x := New(Indexers[*corev1.Pod]{NamespaceIndex: NamespaceIndexFunc[*corev1.Pod]})
	require.NoError(t, x.Add(teamPod("a", "red")))
	failing := teamPod("d", "fail")
	replaceEntered, replaceReleased := make(chan struct{}), make(chan struct{})
	var held atomic.Bool
	release, _ := gatedAddIndexers(t, x, func(p *corev1.Pod) {
		if p == failing && held.CompareAndSwap(false, true) {
			close(replaceEntered)
			<-replaceReleased
		}
	})
	replaced := make(chan error, 1)
	go func() { replaced <- x.Replace([]*corev1.Pod{teamPod("a", "blue"), failing}, "") }()
	<-replaceEntered // Replace computes with the indexes AddIndexers publishes
	require.NoError(t, release(), "AddIndexers installs: nothing stored fails")
	close(replaceReleased)
	err := <-replaced
	require.ErrorContains(t, err, `indexer: Replace: list item 1: index "team" of ns/d: no team`)
	assert.Equal(t, []string{"ns/a"}, x.ListKeys(), "nothing replaced")
	assert.Equal(t, []string{"ns/a"}, teamKeys(t, x, "red"))
	checkInvariants(t, x.s)
}
