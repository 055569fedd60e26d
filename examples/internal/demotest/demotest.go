// Package demotest holds what the examples' tests share. Run checks an
// example's main flow: it runs the example against the demo's simulator
// for six seconds and checks the lines every example prints first and
// last. Sim, Kubeconfig, Start and Output (scenario.go) run an example against a
// simulator of the test's own, to cause each event it should print.
package demotest

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Run runs an example's run function against the simulator for
// six seconds, with a small, busy workload, plus any extra arguments. It
// fails t if run fails or if the output does not start with the
// simulator's line and end with a summary line reporting synced > 0 and
// events > 0, and returns the output's lines.
func Run(t testing.TB, run func(context.Context, []string, io.Writer) error, extra ...string) []string {
	t.Helper()
	args := append([]string{"-sim", "-duration", "6s", "-sim-objects", "200", "-sim-churn", "100", "-sync-timeout", "20s"}, extra...)
	var out bytes.Buffer
	started := time.Now()
	if err := run(t.Context(), args, &out); err != nil {
		t.Fatalf("run %v: %v\noutput:\n%s", args, err, out.String())
	}
	if d := time.Since(started); d > 40*time.Second {
		t.Errorf("run took %v; -duration 6s should end it soon after six seconds", d)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if !strings.HasPrefix(lines[0], "simulator (-sim): ") {
		t.Errorf("first line %q does not say the simulator is used", lines[0])
	}
	last := lines[len(lines)-1]
	m := regexp.MustCompile(`^summary: synced=(\d+) events=(\d+) `).FindStringSubmatch(last)
	if m == nil {
		t.Fatalf("last line %q is not a summary; output:\n%s", last, out.String())
	}
	if synced, _ := strconv.Atoi(m[1]); synced == 0 {
		t.Errorf("summary reports nothing synced: %q", last)
	}
	if events, _ := strconv.Atoi(m[2]); events == 0 {
		t.Errorf("summary reports no events: %q", last)
	}
	return lines
}
