package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
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

// A target whose ratio has no figure on one side (an arm that did not
// report the metric) is missed, not met: before, listwatch without a
// figure had a ratio of 0, which met every "at most" target, and a
// client-go without one dropped the target from the table.
func TestTargetWithoutAFigureIsMissed(t *testing.T) {
	sc := scenario{
		name:   "steady-memory/pods/json",
		server: serverArgs{resource: "pods", objects: 10},
		ratios: []ratio{
			{key: "heap", metric: "heap_per_object", num: "listwatch", den: "client_go", target: 0.9},
			{key: "rss", metric: "peak_rss_bytes", num: "listwatch", den: "client_go", target: 0.5},
			{key: "cpu", metric: "cpu_seconds", num: "listwatch", den: "client_go"},
		},
	}
	runs := map[string][]result.Run{
		"listwatch": {{PeakRSSBytes: 10}},
		"client_go": {{HeapPerObject: 100, CPUSeconds: 1}},
	}
	sr := summarize(sc, runs)
	if !slices.Equal(sr.missed(), []string{"heap", "rss"}) {
		t.Errorf("missed %v, want heap and rss", sr.missed())
	}
	rep := &report{ClientGo: "v0.37.2", Date: "2026-11-29T00:00:00Z"}
	rep.add(sc, sr)
	md := rep.markdown()
	if !strings.Contains(md, "| steady-memory/pods/json (10 objects) | heap | 0 B | 100 B | no figure | ≤ 0.9 | ❌ |") ||
		!strings.Contains(md, "| rss | 0 MiB | 0 MiB | no figure | ≤ 0.5 | ❌ |") {
		t.Errorf("table:\n%s", md)
	}
}

// A scenario that failed met none of its targets: they are missed, in the
// JSON and on the table's missed line. They were in neither "met" nor
// "missed", so that counting the misses counted them as met.
func TestFailedScenarioMissesItsTargets(t *testing.T) {
	var sc scenario
	for _, s := range scenarios(sizesFor(true)) {
		if s.name == "watch-throughput/pods/protobuf" {
			sc = s
		}
	}
	rep := &report{ClientGo: "v0.37.2", Date: "2026-12-07T00:00:00Z"}
	rep.add(sc, scenarioReport{Name: sc.name, Error: "benchclient-client-go: exit status 1"})
	want := []string{"watch-throughput/pods/protobuf throughput", "watch-throughput/pods/protobuf of_limit"}
	if !slices.Equal(rep.Missed, want) {
		t.Errorf("missed %q, want %q", rep.Missed, want)
	}
	if md := rep.markdown(); !strings.Contains(md, "| error |") || !strings.Contains(md, "missed: "+strings.Join(want, ", ")) {
		t.Errorf("table:\n%s", md)
	}
}

// A ratio that misses its target but rounds to it is printed with one more
// digit: "1.101" beside "≤ 1.1", not "1.10".
func TestMissByARoundingIsShown(t *testing.T) {
	sc := scenario{
		name:   "slow-handler/pods/json",
		server: serverArgs{resource: "pods", events: 10},
		ratios: []ratio{{key: "fast_p99_slowdown", metric: "p99_ms", num: "listwatch", den: "listwatch_base", target: 1.1}},
	}
	sr := summarize(sc, map[string][]result.Run{
		"listwatch":      {{Latency: &result.Latency{P99: 1.101}}},
		"listwatch_base": {{Latency: &result.Latency{P99: 1}}},
	})
	rep := &report{ClientGo: "v0.37.2", Date: "2026-12-07T00:00:00Z"}
	rep.add(sc, sr)
	if md := rep.markdown(); !strings.Contains(md, "| 1.101 | ≤ 1.1 | ❌ |") {
		t.Errorf("table:\n%s", md)
	}
}

// A miss within 0.0005 of its target is printed with the digits it takes
// to differ from it: 0.500 beside ≤ 0.5 read as a miss printed as the
// target itself.
func TestMissCloseToItsTargetIsShown(t *testing.T) {
	for _, tc := range []struct {
		v, target float64
		want      string
	}{
		{0.62, 0.5, "0.62"},
		{1.101, 1.1, "1.101"},
		{0.5004, 0.5, "0.5004"},
		{0.50004, 0.5, "0.50004"},
		{1.29996, 1.3, "1.29996"}, // an "at least" target: rounds up to it
		{0.5000000001, 0.5, "0.5000000001"},
	} {
		if got := missText(tc.v, tc.target); got != tc.want {
			t.Errorf("%v against %v: %q, want %q", tc.v, tc.target, got, tc.want)
		}
	}
	sc := scenario{
		name:   "initial-sync/pods/json",
		server: serverArgs{resource: "pods", objects: 10},
		ratios: []ratio{{key: "time", metric: "sync_seconds", num: "listwatch", den: "client_go", target: 0.5}},
	}
	sr := summarize(sc, map[string][]result.Run{"listwatch": {{SyncSeconds: 0.5004}}, "client_go": {{SyncSeconds: 1}}})
	rep := &report{ClientGo: "v0.37.2", Date: "2026-12-07T00:00:00Z"}
	rep.add(sc, sr)
	if md := rep.markdown(); !strings.Contains(md, "| 0.5004 | ≤ 0.5 | ❌ |") {
		t.Errorf("table:\n%s", md)
	}
}

// The report records the git revision measured and whether the work tree
// differed from it, in the JSON and above the table.
func TestReportRecordsTheRevision(t *testing.T) {
	const rev = "765cfe4c0ffee0000000000000000000000000ab"
	for _, tc := range []struct {
		dirty bool
		want  string
	}{
		{false, "command: `internal/bench/run -quick` at " + rev + ";"},
		{true, "command: `internal/bench/run -quick` at " + rev + " with changes not committed;"},
	} {
		rep := &report{ClientGo: "v0.37.2", Date: "2026-12-07T00:00:00Z", Command: "internal/bench/run -quick", Revision: rev, Dirty: tc.dirty}
		if md := rep.markdown(); !strings.Contains(md, tc.want) {
			t.Errorf("dirty %v: table:\n%s", tc.dirty, md)
		}
		b, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Revision string `json:"revision"`
			Dirty    *bool  `json:"dirty"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if got.Revision != rev || got.Dirty == nil || *got.Dirty != tc.dirty {
			t.Errorf("dirty %v: JSON %s", tc.dirty, b)
		}
	}
}

// The limit arm, which of_limit divides by, decodes as listwatch's runs
// do: with -listwatch-args=-sharing it shares identical parts too. It got
// none of listwatch's flags, so WithSharing's of_limit divided a decoder
// that skips parts it has met by one that decodes everything.
func TestLimitGetsListwatchsFlags(t *testing.T) {
	bin := t.TempDir()
	script := "#!/bin/sh\necho '{\"scenario\":\"'\"$*\"'\"}'\n"
	if err := os.WriteFile(filepath.Join(bin, "benchclient-listwatch"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e := &env{listwatchArgs: []string{"-sharing"}}
	for _, lib := range []string{"listwatch", "limit"} {
		r, err := runClient(t.Context(), bin, e, "http://127.0.0.1:1", arm{name: lib, lib: lib, args: []string{"-scenario=watch-throughput"}})
		if err != nil {
			t.Fatal(err)
		}
		if want := "-lib=" + lib + " -server=http://127.0.0.1:1 -scenario=watch-throughput -sharing"; r.Scenario != want {
			t.Errorf("ran %q, want %q", r.Scenario, want)
		}
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

// Runs compared must have been made alike: the same GOMAXPROCS and GOGC,
// and the libraries asking the server the same way (the limit loop apart).
func TestSameSetup(t *testing.T) {
	sc := scenario{arms: []arm{{name: "listwatch", lib: "listwatch"}, {name: "client_go", lib: "client-go"}, {name: "limit", lib: "limit"}}}
	run := func(procs int, lists, watchLists int64) result.Run {
		return result.Run{GOMAXPROCS: procs, GOGC: "100", Server: map[string]int64{"lists": lists, "watch_lists": watchLists}}
	}
	alike := map[string][]result.Run{
		"listwatch": {run(2, 0, 1), run(2, 0, 1)},
		"client_go": {run(2, 0, 1)},
		"limit":     {run(2, 0, 0)}, // the limit loop watches plainly
	}
	if err := sameSetup(sc, alike); err != nil {
		t.Errorf("alike runs: %v", err)
	}
	fellBack := map[string][]result.Run{"listwatch": {run(2, 0, 1)}, "client_go": {run(2, 1, 0)}}
	if err := sameSetup(sc, fellBack); err == nil {
		t.Error("a library that listed where the other streamed: no error")
	}
	otherProcs := map[string][]result.Run{"listwatch": {run(2, 0, 1)}, "client_go": {run(1, 0, 1)}}
	if err := sameSetup(sc, otherProcs); err == nil {
		t.Error("runs with different GOMAXPROCS: no error")
	}
}

// Arms must run the same work, and arms given the same flags the same
// handlers and variant: a scenario parameter passed to listwatch only
// (-listwatch-args=-handlers=1, -strip, -content=protobuf) fails the
// scenario. Before, only GOMAXPROCS, GOGC and the server's counts were
// compared, and listwatch with 1 handler was judged against client-go with
// 10. Options that are not scenario parameters (-sharing) pass.
func TestSameSetupComparesTheWork(t *testing.T) {
	latency := []string{"-scenario=watch-latency", "-content=json", "-handlers=10"}
	sc := scenario{arms: []arm{
		{name: "listwatch", lib: "listwatch", args: slices.Concat(latency, []string{"-slow"})},
		{name: "listwatch_base", lib: "listwatch", args: latency},
		{name: "client_go", lib: "client-go", args: slices.Concat(latency, []string{"-slow"})},
		{name: "client_go_base", lib: "client-go", args: latency},
	}}
	run := func(change func(r *result.Run)) result.Run {
		r := result.Run{Scenario: "watch-latency", Resource: "pods", Content: "json", Objects: 1000, Events: 3000,
			Handlers: 10, Variant: "base", GOMAXPROCS: 2, GOGC: "100"}
		change(&r)
		return r
	}
	same := func(*result.Run) {}
	slow := func(r *result.Run) { r.Variant = "slow" }
	for _, tc := range []struct {
		name      string
		listwatch func(r *result.Run)
		wantErr   string
	}{
		{"alike", slow, ""},
		{"an option that is no scenario parameter", func(r *result.Run) { r.Variant, r.Options = "slow", []string{"WithSharing"} }, ""},
		{"fewer handlers", func(r *result.Run) { r.Variant, r.Handlers = "slow", 1 }, "client_go ran with 10 handlers, variant slow, listwatch with 1 handlers"},
		{"another variant", same, "client_go ran with 10 handlers, variant slow, listwatch with 10 handlers, variant base"},
		{"another content type", func(r *result.Run) { r.Variant, r.Content = "slow", "protobuf" }, "as protobuf"},
		{"another scenario", func(r *result.Run) { r.Variant, r.Scenario = "slow", "watch-throughput" }, "watch-throughput of 1000 pods"},
		{"fewer objects", func(r *result.Run) { r.Variant, r.Objects = "slow", 10 }, "of 10 pods"},
		{"fewer events", func(r *result.Run) { r.Variant, r.Events = "slow", 30 }, "with 30 events"},
		{"another resource", func(r *result.Run) { r.Variant, r.Resource = "slow", "configmaps" }, "1000 configmaps"},
	} {
		runs := map[string][]result.Run{
			"listwatch":      {run(tc.listwatch)},
			"listwatch_base": {run(same)},
			"client_go":      {run(slow)},
			"client_go_base": {run(same)},
		}
		err := sameSetup(sc, runs)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.wantErr != "" && err == nil:
			t.Errorf("%s: no error", tc.name)
		case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
			t.Errorf("%s: error %q, want it to say %q", tc.name, err, tc.wantErr)
		}
	}
}

// The clients do not inherit what would change a library's defaults.
func TestClientEnvDropsWhatChangesDefaults(t *testing.T) {
	for _, kv := range []string{"KUBE_CACHE_MUTATION_DETECTOR=true", "KUBE_WATCHLIST_INCONSISTENCY_DETECTOR=true",
		"KUBE_FEATURE_WatchListClient=false", "GOMEMLIMIT=1GiB", "GODEBUG=gctrace=1", "GOGC=off"} {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	env := clientEnv(&env{gogc: "100", gomaxprocs: "2"})
	for _, kv := range env {
		for _, bad := range []string{"KUBE_CACHE_MUTATION_DETECTOR=", "KUBE_WATCHLIST_INCONSISTENCY_DETECTOR=", "KUBE_FEATURE_", "GOMEMLIMIT=", "GODEBUG=", "GOGC=off"} {
			if strings.HasPrefix(kv, bad) {
				t.Errorf("the clients' environment holds %s", kv)
			}
		}
	}
	if !slices.Contains(env, "GOGC=100") || !slices.Contains(env, "GOMAXPROCS=2") {
		t.Errorf("GOGC and GOMAXPROCS not set as asked: %v", env)
	}
}
