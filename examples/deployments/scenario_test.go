package main

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/listwatch/listwatch/examples/internal/demotest"
	"github.com/listwatch/listwatch/internal/apisim"
)

// These tests run deployments against a simulator of their own (demotest.Sim).

// newSim starts a simulator serving deployments d-0 … d-(n-1) in each of
// alpha, beta and gamma, and returns it with the path of a kubeconfig that
// points at it.
func newSim(t *testing.T, n int) (*apisim.Server, string) {
	t.Helper()
	sim, kubeconfig := demotest.Sim(t, apisim.Deployments())
	if err := sim.Populate(apisim.Deployments(), 3*n, []string{"alpha", "beta", "gamma"}, func(ns string, i int) runtime.Object {
		return deployment(ns, fmt.Sprintf("d-%d", i/3), 1)
	}); err != nil {
		t.Fatal(err)
	}
	return sim, kubeconfig
}

func deployment(ns, name string, replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas},
	}
}

// After the sync, each second, deployments shows the namespaces whose
// deployments changed in that second, a delete being a change, and only
// those: a namespace shown once is not shown again until it changes again.
func TestDeploymentsShowsTheNamespacesThatChanged(t *testing.T) {
	sim, kubeconfig := newSim(t, 2)
	deployments := apisim.Of[*appsv1.Deployment](sim, apisim.Deployments())
	out, stop := demotest.Start(t, run, "-kubeconfig", kubeconfig)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	out.Next(t, regexp.MustCompile(`^synced 6 deployments in `))
	view := regexp.MustCompile(`^\d\d:\d\d:\d\d (\S+) +(\d+) deployments, +(\d+)/(\d+) replicas`)

	// A delete in alpha, then an update in beta: alpha is shown, at the
	// latest with beta, with one deployment left.
	if _, err := deployments.Delete("alpha", "d-0"); err != nil {
		t.Fatal(err)
	}
	if _, err := deployments.Update(deployment("beta", "d-0", 3)); err != nil {
		t.Fatal(err)
	}
	var shown []string
	for {
		m := out.Next(t, view)
		shown = append(shown, m[0])
		if m[1] == "beta" {
			if m[4] != "4" {
				t.Errorf("%q; want beta's 4 replicas", m[0])
			}
			break
		}
		if m[1] == "alpha" && m[2] != "1" {
			t.Errorf("%q; want alpha's one deployment left", m[0])
		}
	}
	if !slices.ContainsFunc(shown, func(l string) bool { return view.FindStringSubmatch(l)[1] == "alpha" }) {
		t.Errorf("the delete in alpha was not shown: %q", shown)
	}

	// An update in gamma: gamma alone is shown, not alpha and beta again.
	if _, err := deployments.Update(deployment("gamma", "d-1", 2)); err != nil {
		t.Fatal(err)
	}
	for {
		m := out.Next(t, view)
		if m[1] == "gamma" {
			break
		}
		t.Errorf("%q shown again, unchanged", m[0])
	}
}

// Every change the summary counts has been shown: the namespaces changed
// since the last tick are shown before it. They were not, so the last
// view of a namespace was up to a second older than the count, and than
// the cache. Deployments are created in alpha until after the example
// stops: its last view of alpha, the tick's before the stop if no change
// came after it, holds at least the one it started with and one for each
// event counted.
func TestDeploymentsShowsTheLastChangesBeforeTheSummary(t *testing.T) {
	sim, kubeconfig := newSim(t, 1)
	deps := apisim.Of[*appsv1.Deployment](sim, apisim.Deployments())
	out, stop := demotest.Start(t, run, "-kubeconfig", kubeconfig)
	out.Next(t, regexp.MustCompile(`^synced 3 deployments in `))
	stopCreating := demotest.CreateUntilStopped(t, func(i int) error {
		_, err := deps.Create(deployment("alpha", fmt.Sprintf("c-%d", i), 1))
		return err
	})
	view := regexp.MustCompile(`^\d\d:\d\d:\d\d alpha +(\d+) deployments`)
	last, _ := strconv.Atoi(out.Next(t, view)[1]) // a tick has shown some
	err := stop()
	stopCreating()
	if err != nil {
		t.Fatal(err)
	}
	for {
		line := out.Next(t, regexp.MustCompile(`^(\d\d:\d\d:\d\d alpha .*|summary: .*)$`))
		if m := view.FindStringSubmatch(line[0]); m != nil {
			last, _ = strconv.Atoi(m[1])
			continue
		}
		events, _ := strconv.Atoi(regexp.MustCompile(`events=(\d+)`).FindStringSubmatch(line[0])[1])
		if last < 1+events {
			t.Errorf("%q, but the last view of alpha shows %d deployments: the last changes counted were not shown", line[0], last)
		}
		return
	}
}
