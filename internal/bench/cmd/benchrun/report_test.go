package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/internal/bench/result"
)

// TestSummarizeRatios checks medians, ratios and targets on a made-up
// scenario with three rounds.
func TestSummarizeRatios(t *testing.T) {
	sc := scenario{
		name:   "initial-sync/pods/json",
		server: serverArgs{resource: "pods", objects: 10},
		ratios: []ratio{
			{key: "time", metric: "sync_seconds", num: "listwatch", den: "client_go", target: 0.5},
			{key: "throughput", metric: "events_per_second", num: "listwatch", den: "client_go", target: 2, atLeast: true},
			{key: "cpu", metric: "cpu_seconds", num: "listwatch", den: "client_go"},
		},
	}
	runs := map[string][]result.Run{
		"listwatch": {{SyncSeconds: 1, EventsPerSecond: 300, CPUSeconds: 1}, {SyncSeconds: 9, EventsPerSecond: 100}, {SyncSeconds: 2, EventsPerSecond: 200, CPUSeconds: 3}},
		"client_go": {{SyncSeconds: 4, EventsPerSecond: 100, CPUSeconds: 4}, {SyncSeconds: 5, EventsPerSecond: 150, CPUSeconds: 4}, {SyncSeconds: 6, EventsPerSecond: 50, CPUSeconds: 4}},
	}
	sr := summarize(sc, runs)
	if got := sr.Ratio["time"]; got != 0.4 { // 2 / 5
		t.Errorf("time ratio %v, want 0.4", got)
	}
	if got := sr.Ratio["throughput"]; got != 2 { // 200 / 100
		t.Errorf("throughput ratio %v, want 2", got)
	}
	if got := sr.Ratio["cpu"]; got != 0.5 { // median of the runs that have it: 2 / 4
		t.Errorf("cpu ratio %v, want 0.5", got)
	}
	if !sr.Met["time"] || !sr.Met["throughput"] || len(sr.missed()) != 0 {
		t.Errorf("met %v, missed %v", sr.Met, sr.missed())
	}
	if _, ok := sr.Met["cpu"]; ok {
		t.Error("a ratio without a target has a verdict")
	}
	rep := &report{ClientGo: "v0.37.2", Date: "2026-11-29T00:00:00Z"}
	rep.add(sc, sr)
	md := rep.markdown()
	if !strings.Contains(md, "| initial-sync/pods/json (10 objects) | time | 2.00 s | 5.00 s | 0.40 | ≤ 0.5 | ✅ |") {
		t.Errorf("table:\n%s", md)
	}
}

// TestBaselineTakesClientGosPlace runs client-go's arm with -baseline set
// against a stand-in benchclient-baseline that reports its arguments: it
// must be the baseline binary, asked for listwatch, with listwatch's extra
// flags; and the report must say what it compared with.
func TestBaselineTakesClientGosPlace(t *testing.T) {
	bin := t.TempDir()
	script := "#!/bin/sh\necho '{\"scenario\":\"'\"$0 $*\"'\"}'\n"
	if err := os.WriteFile(filepath.Join(bin, "benchclient-baseline"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e := &env{listwatchArgs: []string{"-sharing"}, baseline: true}
	r, err := runClient(t.Context(), bin, e, "http://127.0.0.1:1", arm{name: "client_go", lib: "client-go", args: []string{"-scenario=initial-sync"}})
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(bin, "benchclient-baseline") + " -lib=listwatch -server=http://127.0.0.1:1 -scenario=initial-sync -sharing"
	if r.Scenario != want {
		t.Errorf("ran %q, want %q", r.Scenario, want)
	}
	scs := scenarios(sizesFor(true))
	dropClientGoTargets(scs)
	kept := 0
	for _, sc := range scs {
		for _, rt := range sc.ratios {
			if strings.HasPrefix(rt.den, "client_go") && rt.target != 0 {
				t.Errorf("%s %s: target %v against the baseline", sc.name, rt.key, rt.target)
			}
			if rt.target != 0 {
				kept++
			}
		}
	}
	if kept != 3 { // of_limit (JSON and protobuf), fast_p99_slowdown
		t.Errorf("%d targets kept, want 3", kept)
	}
	rep := &report{Baseline: "4b1930e", Date: "2026-11-30T00:00:00Z"}
	if md := rep.markdown(); !strings.HasPrefix(md, "listwatch vs listwatch 4b1930e (in client-go's place") {
		t.Errorf("table:\n%s", md)
	}
}
