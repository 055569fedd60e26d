package main

import (
	"fmt"
	"strconv"
	"strings"
)

// scenario is one line of the comparison: a server, the runs to alternate
// against it, and the ratios computed from their medians.
type scenario struct {
	name   string
	server serverArgs
	// arms are the runs alternated each round, in this order; the first is
	// the one under test (listwatch).
	arms []arm
	// ratios are computed from the arms' medians, by arm name.
	ratios []ratio
	// extra marks scenarios beyond the list (reported, not
	// targeted).
	extra bool
}

// serverArgs are a benchserver's flags.
type serverArgs struct {
	resource string
	objects  int
	events   int
	rate     float64
	formats  string
}

func (s serverArgs) flags() []string {
	return []string{
		"-resource", s.resource,
		"-objects", strconv.Itoa(s.objects),
		"-events", strconv.Itoa(s.events),
		"-distinct", strconv.Itoa(min(s.objects, 1000)),
		"-rate", strconv.FormatFloat(s.rate, 'f', -1, 64),
		"-formats", s.formats,
	}
}

// arm is one kind of client run in a scenario.
type arm struct {
	name string // the key in the JSON: listwatch, client_go, limit, listwatch_base, ...
	lib  string // benchclient -lib
	args []string
}

// ratio is one target of the issue: num's metric over den's metric.
type ratio struct {
	key      string // the key in "ratio": time, peak_rss, ...
	metric   string // the metric compared (see metrics)
	num, den string // arm names
	target   float64
	atLeast  bool // the ratio must be ≥ target (else ≤); 0 target: none
}

// sizes are the object and event counts of a run.
type sizes struct {
	rounds         int
	syncPods       int
	syncConfigMaps int
	memoryPods     int
	jsonEvents     int
	protoEvents    int
	latencyEvents  int
}

// sizesFor returns the sizes of a -quick run or of a full one.
func sizesFor(quick bool) sizes {
	if quick {
		return sizes{
			rounds: 3, syncPods: 10_000, syncConfigMaps: 200, memoryPods: 5_000,
			jsonEvents: 5_000, protoEvents: 10_000, latencyEvents: 3_000,
		}
	}
	return sizes{
		rounds: 5, syncPods: 100_000, syncConfigMaps: 2_000, memoryPods: 50_000,
		jsonEvents: 50_000, protoEvents: 100_000, latencyEvents: 10_000,
	}
}

// scenarios are the scenarios, in the order of its list, then the
// extra ones.
func scenarios(sz sizes) []scenario {
	var out []scenario
	pair := func(args ...string) []arm {
		return []arm{
			{name: "listwatch", lib: "listwatch", args: args},
			{name: "client_go", lib: "client-go", args: args},
		}
	}
	for _, ct := range []string{"json", "protobuf"} {
		out = append(out, scenario{
			name:   "initial-sync/pods/" + ct,
			server: serverArgs{resource: "pods", objects: sz.syncPods, formats: ct},
			arms:   pair("-scenario=initial-sync", "-content="+ct),
			ratios: []ratio{
				{key: "time", metric: "sync_seconds", num: "listwatch", den: "client_go", target: 0.5},
				{key: "peak_rss", metric: "peak_rss_bytes", num: "listwatch", den: "client_go", target: 0.5},
				{key: "cpu", metric: "cpu_seconds", num: "listwatch", den: "client_go"},
			},
		})
	}
	for _, ct := range []string{"json", "protobuf"} {
		events, want := sz.jsonEvents, 2.0
		if ct == "protobuf" {
			events, want = sz.protoEvents, 1.3
		}
		arms := pair("-scenario=watch-throughput", "-content="+ct)
		arms = append(arms, arm{name: "limit", lib: "limit", args: []string{"-scenario=watch-throughput", "-content=" + ct}})
		out = append(out, scenario{
			name:   "watch-throughput/pods/" + ct,
			server: serverArgs{resource: "pods", objects: 1000, events: events, formats: ct},
			arms:   arms,
			ratios: []ratio{
				{key: "throughput", metric: "events_per_second", num: "listwatch", den: "client_go", target: want, atLeast: true},
				{key: "of_limit", metric: "events_per_second", num: "listwatch", den: "limit", target: 0.85, atLeast: true},
				// The same in CPU time per event: the limit's CPU over
				// listwatch's, steadier than rates on a loaded machine.
				{key: "of_limit_cpu", metric: "cpu_seconds", num: "limit", den: "listwatch"},
				{key: "cpu", metric: "cpu_seconds", num: "listwatch", den: "client_go"},
			},
		})
	}
	out = append(out, scenario{
		name:   "watch-latency/pods/json",
		server: serverArgs{resource: "pods", objects: 1000, events: sz.latencyEvents, rate: 1000, formats: "json"},
		arms:   pair("-scenario=watch-latency", "-content=json", "-handlers=10"),
		ratios: []ratio{
			{key: "p99_latency", metric: "p99_ms", num: "listwatch", den: "client_go", target: 0.5},
			{key: "p50_latency", metric: "p50_ms", num: "listwatch", den: "client_go"},
		},
	})
	mem := pair("-scenario=steady-memory", "-content=json")
	mem = append(mem,
		arm{name: "listwatch_stripped", lib: "listwatch", args: []string{"-scenario=steady-memory", "-content=json", "-strip"}},
		arm{name: "client_go_stripped", lib: "client-go", args: []string{"-scenario=steady-memory", "-content=json", "-strip"}},
	)
	out = append(out, scenario{
		name:   "steady-memory/pods/json",
		server: serverArgs{resource: "pods", objects: sz.memoryPods, formats: "json"},
		arms:   mem,
		ratios: []ratio{
			{key: "heap_per_object", metric: "heap_per_object", num: "listwatch", den: "client_go", target: 0.9},
			{key: "heap_per_object_stripped", metric: "heap_per_object", num: "listwatch_stripped", den: "client_go_stripped", target: 0.5},
		},
	})
	out = append(out, scenario{
		name:   "slow-handler/pods/json",
		server: serverArgs{resource: "pods", objects: 1000, events: sz.latencyEvents, rate: 1000, formats: "json"},
		arms: []arm{
			{name: "listwatch", lib: "listwatch", args: []string{"-scenario=slow-handler", "-content=json", "-handlers=9", "-slow"}},
			{name: "listwatch_base", lib: "listwatch", args: []string{"-scenario=slow-handler", "-content=json", "-handlers=9"}},
			// client-go in the same two setups: the same slowdown in the
			// library compared with, and the two side by side beside the
			// slow handler. For reading the target's ratio; none of their own.
			{name: "client_go", lib: "client-go", args: []string{"-scenario=slow-handler", "-content=json", "-handlers=9", "-slow"}},
			{name: "client_go_base", lib: "client-go", args: []string{"-scenario=slow-handler", "-content=json", "-handlers=9"}},
		},
		ratios: []ratio{
			{key: "fast_p99_slowdown", metric: "p99_ms", num: "listwatch", den: "listwatch_base", target: 1.1},
			{key: "client_go_fast_p99_slowdown", metric: "p99_ms", num: "client_go", den: "client_go_base"},
			{key: "fast_p99_beside_slow", metric: "p99_ms", num: "listwatch", den: "client_go"},
		},
	})
	out = append(out, scenario{
		name:   "initial-sync/configmaps/json",
		extra:  true,
		server: serverArgs{resource: "configmaps", objects: sz.syncConfigMaps, formats: "json"},
		arms:   pair("-scenario=initial-sync", "-content=json"),
		ratios: []ratio{
			{key: "time", metric: "sync_seconds", num: "listwatch", den: "client_go"},
			{key: "peak_rss", metric: "peak_rss_bytes", num: "listwatch", den: "client_go"},
		},
	})
	return out
}

// describe says what a target asks, as the table prints it.
func (r ratio) describe() string {
	switch {
	case r.target == 0:
		return "—"
	case r.atLeast:
		return fmt.Sprintf("≥ %g", r.target)
	}
	return fmt.Sprintf("≤ %g", r.target)
}

// met reports whether v meets the target (always, when there is none).
func (r ratio) met(v float64) bool {
	switch {
	case r.target == 0:
		return true
	case r.atLeast:
		return v >= r.target
	}
	return v <= r.target
}

// dropClientGoTargets takes the targets off the ratios against client-go's
// arms, for a run with another build of listwatch in client-go's place
// (-baseline): the targets are for client-go. Those against the bare
// decode loop (of_limit) and listwatch's own (fast_p99_slowdown) stay.
func dropClientGoTargets(scs []scenario) {
	for _, sc := range scs {
		for i := range sc.ratios {
			if strings.HasPrefix(sc.ratios[i].den, "client_go") {
				sc.ratios[i].target = 0
			}
		}
	}
}
