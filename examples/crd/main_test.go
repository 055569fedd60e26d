package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/listwatch/listwatch/examples/internal/demotest"
	"github.com/listwatch/listwatch/internal/apisim"
)

func TestCRD(t *testing.T) {
	lines := demotest.Run(t, run)
	event := regexp.MustCompile(`^\S+ (ADDED|MODIFIED|DELETED) +\S+/\S+ +(Ready|Resizing) +rv=\d+ spec=\{"color":"[a-z]+","size":\d+\}$`)
	for _, l := range lines {
		if event.MatchString(l) {
			return
		}
	}
	t.Errorf("no event line with the widget's phase and spec:\n%s", strings.Join(lines, "\n"))
}

// -namespace watches that namespace alone.
func TestCRDInANamespace(t *testing.T) {
	lines := demotest.Run(t, run, "-namespace", "payments")
	event := regexp.MustCompile(`^\S+ (ADDED|MODIFIED|DELETED\??) +(\S+)/\S+ `)
	events := 0
	for _, l := range lines {
		if m := event.FindStringSubmatch(l); m != nil {
			events++
			if m[2] != "payments" {
				t.Errorf("an event outside -namespace payments: %q", l)
			}
		}
	}
	if events == 0 {
		t.Errorf("no events in payments:\n%s", strings.Join(lines, "\n"))
	}
}

// A long spec is cut to 60 characters, never inside a multi-byte one.
func TestTruncate(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"short", "short"},
		{strings.Repeat("a", 60), strings.Repeat("a", 60)},
		{strings.Repeat("a", 61), strings.Repeat("a", 60) + "…"},
		{strings.Repeat("é", 60), strings.Repeat("é", 60)}, // 120 bytes, 60 runes: kept whole
		{strings.Repeat("é", 61), strings.Repeat("é", 60) + "…"},
	} {
		if got := truncate(tc.in, 60); got != tc.want {
			t.Errorf("truncate(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Crd watches any resource given its group, version and resource: without
// -kind, a built-in one too. -kind defaulted to "Widget", which refused
// every Deployment (and, on kube-apiserver, whose list items carry no
// kind, cached them as Widgets and then refused every change).
func TestCRDWatchesAnotherResourceWithoutKind(t *testing.T) {
	sim, kubeconfig := demotest.Sim(t, apisim.Deployments())
	if err := sim.Populate(apisim.Deployments(), 2, []string{"ns"}, func(ns string, i int) runtime.Object {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("d%d", i)}}
	}); err != nil {
		t.Fatal(err)
	}
	out, stop := demotest.Start(t, run, "-kubeconfig", kubeconfig, "-group", "apps", "-resource", "deployments")
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	out.Next(t, regexp.MustCompile(`^synced 2 deployments.apps`))
	if _, err := apisim.Of[*appsv1.Deployment](sim, apisim.Deployments()).Create(
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "new"}}); err != nil {
		t.Fatal(err)
	}
	out.Next(t, regexp.MustCompile(`ADDED +ns/new `))
}
