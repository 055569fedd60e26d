package main

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/listwatch/listwatch/examples/internal/demo"
	"github.com/listwatch/listwatch/examples/internal/demotest"
	"github.com/listwatch/listwatch/internal/apisim"
)

// While widgets are only being created, each one is counted in "synced N"
// (the first list) or printed as ADDED, never both. N was the cache's size
// once the informer had synced, which may hold creates that came after
// the list, printed again as ADDED. Whether a create lands in that window
// is a matter of timing: a few attempts. (An ADDED not yet printed makes
// the sum smaller, never larger: only a sum over the total is a failure.)
func TestCRDSyncedIsTheFirstList(t *testing.T) {
	added := regexp.MustCompile(`^\S+ ADDED `)
	for attempt := range 20 {
		sim, kubeconfig := newSim(t, 5)
		widgets := apisim.Of[*unstructured.Unstructured](sim, demo.WidgetResource())
		stopCreating := demotest.CreateUntilStopped(t, func(i int) error {
			_, err := widgets.Create(widget("ns", fmt.Sprintf("c-%d", i), "red"))
			return err
		})
		out, stop := demotest.Start(t, run, "-kubeconfig", kubeconfig)
		m := out.Next(t, syncedLine)
		synced, _ := strconv.Atoi(m[1])
		time.Sleep(100 * time.Millisecond)
		stopCreating()
		total, _ := sim.Len(demo.WidgetResource())
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, l := range out.Lines() {
			if added.MatchString(l) {
				n++
			}
		}
		if synced+n > total {
			t.Fatalf("attempt %d: %q, then %d ADDED lines: %d in all, but %d widgets were created (and none changed): %d counted twice",
				attempt, m[0], n, synced+n, total, synced+n-total)
		}
	}
}
