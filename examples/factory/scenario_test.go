package main

import (
	"fmt"
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/listwatch/listwatch/examples/internal/demotest"
	"github.com/listwatch/listwatch/internal/apisim"
)

// These tests run factory against a simulator of their own (demotest.Sim).

// newSim starts a simulator serving pods, deployments and config maps,
// with n pods: ns/web-0 … ns/web-(n-1), and returns it with the path of a
// kubeconfig that points at it.
func newSim(t *testing.T, n int) (*apisim.Server, string) {
	t.Helper()
	sim, kubeconfig := demotest.Sim(t, apisim.Pods(), apisim.Deployments(), apisim.ConfigMaps())
	if err := sim.Populate(apisim.Pods(), n, []string{"ns"}, func(ns string, i int) runtime.Object {
		return apisim.MakePod(ns, fmt.Sprintf("web-%d", i))
	}); err != nil {
		t.Fatal(err)
	}
	return sim, kubeconfig
}

// factory counts the pods with app=web, and those of them in kube-system.
func TestFactoryCountsWebPodsInKubeSystem(t *testing.T) {
	sim, kubeconfig := newSim(t, 3)
	pods := apisim.Of[*corev1.Pod](sim, apisim.Pods())
	for _, name := range []string{"web-1", "web-2", "api-3"} {
		if _, err := pods.Create(apisim.MakePod("kube-system", name)); err != nil {
			t.Fatal(err)
		}
	}
	out, stop := demotest.Start(t, run, "-kubeconfig", kubeconfig)
	m := out.Next(t, regexp.MustCompile(`^pods with app=web: .*`))
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if want := "pods with app=web: 5, of which in kube-system: 2"; m[0] != want {
		t.Errorf("%q; want %q", m[0], want)
	}
}

// A late handler counts an update as an update.
func TestFactoryCountsAnUpdate(t *testing.T) {
	sim, kubeconfig := newSim(t, 3)
	out, stop := demotest.Start(t, run, "-kubeconfig", kubeconfig)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	out.Next(t, regexp.MustCompile(`^the late handlers have handled every object`))
	pod := apisim.MakePod("ns", "web-1")
	pod.Labels["changed"] = "yes"
	if _, err := apisim.Of[*corev1.Pod](sim, apisim.Pods()).Update(pod); err != nil {
		t.Fatal(err)
	}
	counts := regexp.MustCompile(`pods (\d+) replayed, \+(\d+) ~(\d+) -(\d+)`)
	for {
		m := out.Next(t, counts)
		if m[2]+m[3]+m[4] == "000" {
			continue // a second that ended before the update
		}
		if want := "pods 3 replayed, +0 ~1 -0"; m[0] != want {
			t.Errorf("%q; want %q", m[0], want)
		}
		return
	}
}
