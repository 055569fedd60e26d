package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A run interrupted between scenarios (SIGINT, SIGTERM) fails, and its
// table says it is partial. Before, it ended with no error, so benchrun
// exited 0 with the scenarios that had run as if they were all.
func TestInterruptedRunFails(t *testing.T) {
	scs := []scenario{{name: "a"}, {name: "b"}, {name: "c"}}
	ctx, cancel := context.WithCancel(t.Context())
	var ran []string
	rep := &report{ClientGo: "v0.37.2", Date: "2026-12-07T00:00:00Z"}
	err := runAll(ctx, rep, scs, func(_ context.Context, sc scenario) (scenarioReport, error) {
		ran = append(ran, sc.name)
		cancel() // the signal comes as the first scenario ends well
		return scenarioReport{Name: sc.name}, nil
	})
	if len(ran) != 1 {
		t.Errorf("ran %v after the interruption, want only a", ran)
	}
	if err == nil || !strings.Contains(err.Error(), "interrupted after 1 of 3 scenarios") {
		t.Errorf("error %v, want it to say the run was interrupted after 1 of 3 scenarios", err)
	}
	if md := rep.markdown(); !strings.Contains(md, "interrupted after 1 of 3 scenarios") {
		t.Errorf("the table does not say it is partial:\n%s", md)
	}
}

// A run that is not interrupted and whose scenarios all ran has no error.
func TestCompleteRunSucceeds(t *testing.T) {
	rep := &report{}
	err := runAll(t.Context(), rep, []scenario{{name: "a"}, {name: "b"}}, func(_ context.Context, sc scenario) (scenarioReport, error) {
		return scenarioReport{Name: sc.name}, nil
	})
	if err != nil || len(rep.Scenarios) != 2 {
		t.Errorf("error %v, %d scenarios in the report, want none and 2", err, len(rep.Scenarios))
	}
}

// An -only pattern that matches no scenario is an error that names it.
// Before, it printed an empty table and exited 0.
func TestOnlyMatchingNothingFails(t *testing.T) {
	scs := scenarios(sizesFor(true))
	for _, tc := range []struct {
		only  string
		extra bool
		want  int
	}{
		{"watch-latency", true, 1},
		{"configmaps", true, 1},
		{"configmaps", false, 0}, // the one match is an extra scenario
		{"watch-latncy", true, 0},
	} {
		got, err := selectScenarios(scs, regexp.MustCompile(tc.only), tc.extra)
		if len(got) != tc.want {
			t.Errorf("-only %s -extra=%v: %d scenarios, want %d", tc.only, tc.extra, len(got), tc.want)
		}
		switch {
		case tc.want > 0 && err != nil:
			t.Errorf("-only %s -extra=%v: %v", tc.only, tc.extra, err)
		case tc.want == 0 && (err == nil || !strings.Contains(err.Error(), `-only "`+tc.only+`"`)):
			t.Errorf("-only %s -extra=%v: error %v, want one naming the pattern", tc.only, tc.extra, err)
		}
	}
}

// A scenario whose arms ran different work fails with an error that names
// the arms and the difference, and names the scenario once: runAll and the
// table put the name before it.
func TestScenarioOfDifferentWorkFails(t *testing.T) {
	bin := t.TempDir()
	scripts := map[string]string{
		"benchserver":           "#!/bin/sh\necho listening on http://127.0.0.1:1\n",
		"benchclient-listwatch": "#!/bin/sh\necho '{\"scenario\":\"watch-latency\",\"handlers\":1,\"variant\":\"base\"}'\n",
		"benchclient-client-go": "#!/bin/sh\necho '{\"scenario\":\"watch-latency\",\"handlers\":10,\"variant\":\"base\"}'\n",
	}
	for name, script := range scripts {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sc := scenario{name: "watch-latency/pods/json", arms: []arm{
		{name: "listwatch", lib: "listwatch", args: []string{"-handlers=10"}},
		{name: "client_go", lib: "client-go", args: []string{"-handlers=10"}},
	}}
	_, err := runScenario(t.Context(), bin, &env{listwatchArgs: []string{"-handlers=1"}}, sc, 1, "", false)
	want := "client_go ran with 10 handlers, variant base, listwatch with 1 handlers, variant base: the arms did not run the same work"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %v, want one starting %q", err, want)
	}
}
