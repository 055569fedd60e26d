package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/examples/internal/demotest"
)

func TestFactory(t *testing.T) {
	lines := demotest.Run(t, run)
	out := strings.Join(lines, "\n")
	if !regexp.MustCompile(`(?m)^synced in \S+: \d+ pods, \d+ deployments, \d+ config maps$`).MatchString(out) {
		t.Errorf("no line with the three caches' sizes:\n%s", out)
	}
	// The late handlers got every cached object replayed as an add.
	m := regexp.MustCompile(`synced=(\d+) events=\d+ replayed=(\d+) `).FindStringSubmatch(lines[len(lines)-1])
	if m == nil {
		t.Fatalf("summary %q has no replayed count", lines[len(lines)-1])
	}
	synced, _ := strconv.Atoi(m[1])
	replayed, _ := strconv.Atoi(m[2])
	// Changes applied between the sync and the handlers' registration
	// make the two differ by a few objects at most.
	if diff := synced - replayed; diff < -50 || diff > 50 {
		t.Errorf("late handlers were replayed %d objects; the caches held %d", replayed, synced)
	}
}
