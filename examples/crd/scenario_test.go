package main

import (
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/listwatch/listwatch/examples/internal/demo"
	"github.com/listwatch/listwatch/examples/internal/demotest"
	"github.com/listwatch/listwatch/internal/apisim"
)

// These tests run crd against a simulator of their own (demotest.Sim).

// newSim starts a simulator serving widgets ns/w-0 … ns/w-(n-1), and
// returns it with the path of a kubeconfig that points at it.
func newSim(t *testing.T, n int) (*apisim.Server, string) {
	t.Helper()
	sim, kubeconfig := demotest.Sim(t, demo.WidgetResource())
	if err := sim.Populate(demo.WidgetResource(), n, []string{"ns"}, func(ns string, i int) runtime.Object {
		return widget(ns, fmt.Sprintf("w-%d", i), "red")
	}); err != nil {
		t.Fatal(err)
	}
	return sim, kubeconfig
}

func widget(ns, name, color string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec":     map[string]any{"color": color, "size": int64(1)},
		"status":   map[string]any{"phase": "Ready"},
	}}
}

var (
	syncedLine = regexp.MustCompile(`^synced (\d+) widgets.example.com in `)
	eventLine  = regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3} (\S+) +(\S+) +(\S+) +rv=(\d+) spec=(.*)$`)
)

// crd says how many objects its first list had, does not print them, and
// prints a change with the object as it is after it.
func TestCRDPrintsChangesAfterTheSync(t *testing.T) {
	sim, kubeconfig := newSim(t, 5)
	out, stop := demotest.Start(t, run, "-kubeconfig", kubeconfig)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	if m := out.Next(t, syncedLine); m[1] != "5" {
		t.Errorf("%q; want 5 widgets synced", m[0])
	}
	updated, err := apisim.Of[*unstructured.Unstructured](sim, demo.WidgetResource()).Update(widget("ns", "w-2", "blue"))
	if err != nil {
		t.Fatal(err)
	}
	// The first event line is the update's: the first list's widgets are
	// not events.
	m := out.Next(t, eventLine)
	want := []string{"MODIFIED", "ns/w-2", "Ready", updated.GetResourceVersion(), `{"color":"blue","size":1}`}
	if got := m[1:]; !slices.Equal(got, want) {
		t.Errorf("first event %q; want %q", m[0], want)
	}
}

// A widget deleted while crd was not watching is noticed by the relist
// that follows, and printed as "DELETED?" with the last state crd had.
func TestCRDDeletedWhileNotWatching(t *testing.T) {
	sim, kubeconfig := newSim(t, 5)
	widgets := apisim.Of[*unstructured.Unstructured](sim, demo.WidgetResource())
	last, err := widgets.Get("ns", "w-3")
	if err != nil {
		t.Fatal(err)
	}
	out, stop := demotest.Start(t, run, "-kubeconfig", kubeconfig)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	out.Next(t, syncedLine)
	// End the watch, and hold the next one; meanwhile delete a widget and
	// compact, so that the watch, resuming from the resourceVersion it had
	// reached, gets 410 Expired and crd relists.
	gate := apisim.NewGate()
	sim.Inject(apisim.Match{Verb: apisim.VerbWatch, Resource: "widgets"}, apisim.Hold(gate), 1)
	sim.Restart()
	select {
	case <-gate.Entered():
	case <-time.After(demotest.Guard):
		t.Fatal("no watch")
	}
	if _, err := widgets.Delete("ns", "w-3"); err != nil {
		t.Fatal(err)
	}
	sim.Compact()
	gate.Release()

	m := out.Next(t, eventLine)
	want := []string{"DELETED?", "ns/w-3", "Ready", last.GetResourceVersion(), `{"color":"red","size":1}`}
	if got := m[1:]; !slices.Equal(got, want) {
		t.Errorf("first event %q; want %q: a delete seen by the relist, with the last state listed", m[0], want)
	}
}
