package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/examples/internal/demotest"
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
