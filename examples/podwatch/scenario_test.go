package main

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/listwatch/listwatch/examples/internal/demotest"
	"github.com/listwatch/listwatch/internal/apisim"
)

// These tests run podwatch against a simulator of their own (demotest.Sim).

// newSim starts a simulator serving ns/web-0 … ns/web-(n-1), and returns
// it with the path of a kubeconfig that points at it.
func newSim(t *testing.T, n int) (*apisim.Server, string) {
	t.Helper()
	sim, kubeconfig := demotest.Sim(t, apisim.Pods())
	if err := sim.Populate(apisim.Pods(), n, []string{"ns"}, func(ns string, i int) runtime.Object {
		return apisim.MakePod(ns, fmt.Sprintf("web-%d", i))
	}); err != nil {
		t.Fatal(err)
	}
	return sim, kubeconfig
}

var syncedLine = regexp.MustCompile(`^synced (\d+) pods in `)

// Once the pods have synced, -sync-timeout is over: podwatch goes on
// watching until -duration, and does not fail when the timeout passes.
func TestPodwatchSyncTimeoutEndsWithTheSync(t *testing.T) {
	_, kubeconfig := newSim(t, 5)
	out := demotest.NewOutput()
	err := run(t.Context(), []string{"-kubeconfig", kubeconfig, "-sync-timeout", "1s", "-duration", "2s"}, out)
	if err != nil {
		t.Fatalf("run: %v; want it to end without error after -duration 2s, -sync-timeout 1s having passed after the sync\noutput:\n%s", err, out)
	}
	if lines := out.Lines(); !strings.HasPrefix(lines[len(lines)-1], "summary: synced=5 ") {
		t.Errorf("want a summary of 5 pods synced last; output:\n%s", out)
	}
}

// When the pods cannot be listed, the sync timeout's error says why.
func TestPodwatchSyncTimeoutSaysWhyTheListFailed(t *testing.T) {
	sim, kubeconfig := newSim(t, 5)
	// Every list fails, streaming (a watch) or not.
	sim.Inject(apisim.Match{Resource: "pods"}, apisim.ServerError(http.StatusServiceUnavailable), 0)
	out := demotest.NewOutput()
	err := run(t.Context(), []string{"-kubeconfig", kubeconfig, "-sync-timeout", "500ms"}, out)
	if err == nil || !strings.Contains(err.Error(), "pods not synced after 500ms") || !strings.Contains(err.Error(), "apisim: injected fault") {
		t.Errorf("run: %v; want the sync timeout, with the list's 503 as its cause", err)
	}
}

// -protobuf and -json decide what podwatch asks for, for its lists and
// its watches.
func TestPodwatchAsksForTheContentType(t *testing.T) {
	for _, tc := range []struct {
		flag          string
		wantProtobuf  bool
		wantSomething string
	}{
		{"-protobuf", true, "application/vnd.kubernetes.protobuf"},
		{"-json", false, "application/json"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			sim, kubeconfig := newSim(t, 5)
			var mu sync.Mutex
			accepts := map[apisim.Verb][]string{}
			watched := make(chan struct{}, 100)
			for _, verb := range []apisim.Verb{apisim.VerbList, apisim.VerbWatch} {
				// The zero Fault does nothing: the match only records.
				sim.Inject(apisim.Match{Verb: verb, Resource: "pods", Request: func(r *http.Request) bool {
					mu.Lock()
					defer mu.Unlock()
					accepts[verb] = append(accepts[verb], r.Header.Get("Accept"))
					if verb == apisim.VerbWatch {
						watched <- struct{}{}
					}
					return false
				}}, apisim.Fault{}, 0)
			}
			out, stop := demotest.Start(t, run, "-kubeconfig", kubeconfig, tc.flag)
			out.Next(t, syncedLine)
			<-watched // the list is a streaming one, a watch; or a watch follows the list
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, verb := range []apisim.Verb{apisim.VerbList, apisim.VerbWatch} {
				for _, a := range accepts[verb] {
					if strings.Contains(a, "protobuf") != tc.wantProtobuf || !strings.Contains(a, tc.wantSomething) {
						t.Errorf("%s: %s with Accept %q, want %s", tc.flag, verb, a, tc.wantSomething)
					}
				}
			}
		})
	}
}

// A pod deleted while podwatch was not watching is noticed by the relist
// that follows, and printed as "DELETED?" with the last state podwatch had.
func TestPodwatchDeletedWhileNotWatching(t *testing.T) {
	sim, kubeconfig := newSim(t, 5)
	pods := apisim.Of[*corev1.Pod](sim, apisim.Pods())
	last, err := pods.Get("ns", "web-3")
	if err != nil {
		t.Fatal(err)
	}
	out, stop := demotest.Start(t, run, "-kubeconfig", kubeconfig)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	if m := out.Next(t, syncedLine); m[1] != "5" {
		t.Errorf("synced %s pods, want 5", m[1])
	}
	// End the watch, and hold the next one; meanwhile delete a pod and
	// compact, so that the watch, resuming from the resourceVersion it had
	// reached, gets 410 Expired and podwatch relists.
	gate := apisim.NewGate()
	sim.Inject(apisim.Match{Verb: apisim.VerbWatch, Resource: "pods"}, apisim.Hold(gate), 1)
	sim.Restart()
	select {
	case <-gate.Entered():
	case <-time.After(demotest.Guard):
		t.Fatal("no watch")
	}
	if _, err := pods.Delete("ns", "web-3"); err != nil {
		t.Fatal(err)
	}
	sim.Compact()
	gate.Release()

	event := regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3} (\S+) +(\S+) +(\S+) +rv=(\d+)$`)
	m := out.Next(t, event)
	want := []string{"DELETED?", "ns/web-3", string(last.Status.Phase), last.ResourceVersion}
	if got := m[1:]; !slices.Equal(got, want) {
		t.Errorf("first event %q; want %q: a delete seen by the relist, with the last state listed", m[0], want)
	}
}

// The synced count is the number of pods in the first list that
// succeeded, not of the pods decoded until then: a list that broke off
// halfway counts for nothing.
func TestPodwatchSyncedCountsTheListThatSucceeded(t *testing.T) {
	sim, kubeconfig := newSim(t, 20)
	// The first list, streaming (a watch) or not.
	inj := sim.Inject(apisim.Match{Resource: "pods"}, apisim.DropConnection().After(10), 1)
	out, stop := demotest.Start(t, run, "-kubeconfig", kubeconfig)
	m := out.Next(t, syncedLine)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if inj.Hits() != 1 {
		t.Fatalf("the first list was not broken off")
	}
	if m[1] != "20" {
		t.Errorf("%q; want 20 pods synced, the first list having broken off after 10", m[0])
	}
}
