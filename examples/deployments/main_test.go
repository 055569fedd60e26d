package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/examples/internal/demotest"
	"github.com/listwatch/listwatch/indexer"
)

func TestDeployments(t *testing.T) {
	lines := demotest.Run(t, run)
	// The initial view: one line per namespace, read through the index.
	view := regexp.MustCompile(`^  [a-z-]+ +\d+ deployments, +\d+/\d+ replicas ready`)
	namespaces := 0
	for _, l := range lines {
		if view.MatchString(l) {
			namespaces++
		}
	}
	if namespaces != 10 {
		t.Errorf("want the view of the 10 namespaces after the sync, got %d lines:\n%s", namespaces, strings.Join(lines, "\n"))
	}
}

// describe counts a namespace's deployments and replicas from the cache,
// an unset spec.replicas being the API's default of 1, and names at most
// three of those still rolling out.
func TestDescribe(t *testing.T) {
	cache := indexer.New(indexer.Indexers[*appsv1.Deployment]{indexer.NamespaceIndex: indexer.NamespaceIndexFunc[*appsv1.Deployment]})
	add := func(ns, name string, replicas *int32, ready int32) {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: appsv1.DeploymentSpec{Replicas: replicas}, Status: appsv1.DeploymentStatus{ReadyReplicas: ready}}
		if err := cache.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	three := int32(3)
	add("shop", "web", &three, 3)
	add("shop", "api", nil, 1) // the default: 1 replica
	add("other", "db", &three, 0)
	if got, want := describe(cache, "shop"), "shop           2 deployments,    4/4 replicas ready"; got != want {
		t.Errorf("describe = %q, want %q", got, want)
	}

	for i := range 5 {
		add("busy", fmt.Sprintf("app-%d", i), &three, int32(i%3))
	}
	want := "busy           5 deployments,    4/15 replicas ready; waiting for app-0 0/3, app-1 1/3, app-2 2/3, …"
	if got := describe(cache, "busy"); got != want {
		t.Errorf("describe = %q, want %q", got, want)
	}
}
