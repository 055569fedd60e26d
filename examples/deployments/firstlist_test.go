package main

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/listwatch/listwatch/examples/internal/demotest"
	"github.com/listwatch/listwatch/internal/apisim"
)

// While deployments are only being created, each one is counted in the
// summary's synced (the first list) or in its events, never in both. The
// synced count was the cache's size once the informer had synced, which
// may hold creates that came after the list, counted again as events.
// Whether a create lands in that window is a matter of timing: a few
// attempts. (Events not yet counted when the example stops make the sum
// smaller, never larger: only a sum over the total is a failure.)
func TestDeploymentsSyncedIsTheFirstList(t *testing.T) {
	for attempt := range 10 {
		sim, kubeconfig := newSim(t, 2)
		deps := apisim.Of[*appsv1.Deployment](sim, apisim.Deployments())
		stopCreating := demotest.CreateUntilStopped(t, func(i int) error {
			_, err := deps.Create(deployment("alpha", fmt.Sprintf("c-%d", i), 1))
			return err
		})
		out, stop := demotest.Start(t, run, "-kubeconfig", kubeconfig)
		out.Next(t, regexp.MustCompile(`^synced \d+ deployments in `))
		time.Sleep(100 * time.Millisecond)
		stopCreating()
		total, _ := sim.Len(apisim.Deployments())
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		m := out.Next(t, regexp.MustCompile(`^summary: synced=(\d+) events=(\d+) `))
		synced, _ := strconv.Atoi(m[1])
		events, _ := strconv.Atoi(m[2])
		if synced+events > total {
			t.Fatalf("attempt %d: %q: %d deployments counted, but %d were created (and none changed): %d counted twice",
				attempt, m[0], synced+events, total, synced+events-total)
		}
	}
}
