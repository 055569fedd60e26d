package main

import (
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
