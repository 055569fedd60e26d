package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/listwatch/listwatch/internal/bench/result"
)

// report is the JSON that -out writes.
type report struct {
	ClientGo string `json:"client_go,omitempty"`
	// Baseline names the build of listwatch that ran in client-go's place
	// (benchrun -baseline); the "client_go" figures are then its.
	Baseline string `json:"baseline,omitempty"`
	Go       string `json:"go"`
	Quick    bool   `json:"quick"`
	Date     string `json:"date"`
	Command  string `json:"command"`
	// Revision is the git revision of the tree measured (empty if not
	// known); Dirty says the work tree differed from it.
	Revision string  `json:"revision,omitempty"`
	Dirty    bool    `json:"dirty"`
	Machine  machine `json:"machine"`
	Rounds   int     `json:"rounds"`
	// GOMAXPROCS and GOGC are what the clients ran with (the same for
	// both libraries).
	GOMAXPROCS int    `json:"gomaxprocs"`
	GOGC       string `json:"gogc"`
	// ClientGoFeatureGates are client-go's gates as it reported them.
	ClientGoFeatureGates map[string]bool  `json:"client_go_feature_gates"`
	Scenarios            []scenarioReport `json:"scenarios"`
	// Missed lists "scenario ratio" for every target missed.
	Missed []string `json:"missed"`
	// Interrupted says how far a run got that a signal stopped before its
	// last scenario ended; the report then holds only the scenarios that
	// ran.
	Interrupted string  `json:"interrupted,omitempty"`
	Seconds     float64 `json:"seconds"`
}

// machine is where the run happened.
type machine struct {
	CPU        string `json:"cpu"`
	CPUs       int    `json:"cpus"`
	MemoryGiB  int    `json:"memory_gib"`
	Kernel     string `json:"kernel"`
	LoadBefore string `json:"load_before"`
	LoadAfter  string `json:"load_after"`
}

// scenarioReport is one scenario's medians, ratios and runs.
type scenarioReport struct {
	Name    string
	Objects int
	Events  int
	Extra   bool
	// Medians are arm → metric → median over the rounds.
	Medians  map[string]map[string]float64
	Ratio    map[string]float64
	Targets  map[string]string
	Met      map[string]bool
	Runs     map[string][]result.Run
	Profiles []string
	Error    string

	ratios []ratio
}

// MarshalJSON lays a scenario out as the issue shows: each arm's medians
// under its name ("listwatch", "client_go", ...), then "ratio".
func (s scenarioReport) MarshalJSON() ([]byte, error) {
	m := map[string]any{"name": s.Name, "objects": s.Objects}
	if s.Events > 0 {
		m["events"] = s.Events
	}
	if s.Extra {
		m["extra"] = true
	}
	for arm, med := range s.Medians {
		m[arm] = med
	}
	for k, v := range map[string]any{"ratio": s.Ratio, "targets": s.Targets, "met": s.Met, "runs": s.Runs} {
		m[k] = v
	}
	if len(s.Profiles) > 0 {
		m["profiles"] = s.Profiles
	}
	if s.Error != "" {
		m["error"] = s.Error
	}
	return json.Marshal(m)
}

// summarize takes the medians of every arm and the scenario's ratios.
func summarize(sc scenario, runs map[string][]result.Run) scenarioReport {
	sr := scenarioReport{
		Name: sc.name, Objects: sc.server.objects, Events: sc.server.events, Extra: sc.extra,
		Medians: map[string]map[string]float64{}, Ratio: map[string]float64{},
		Targets: map[string]string{}, Met: map[string]bool{}, Runs: runs, ratios: sc.ratios,
	}
	for arm, rs := range runs {
		values := map[string][]float64{}
		for _, r := range rs {
			for k, v := range metrics(r) {
				values[k] = append(values[k], v)
			}
		}
		med := map[string]float64{}
		for k, vs := range values {
			med[k] = result.Median(vs)
		}
		sr.Medians[arm] = med
	}
	for _, rt := range sc.ratios {
		num, okNum := sr.Medians[rt.num][rt.metric]
		den, okDen := sr.Medians[rt.den][rt.metric]
		if !okNum || !okDen || den == 0 {
			if rt.target != 0 {
				// Missed, not passed: a ratio of nothing to something
				// would meet every "at most" target.
				sr.Targets[rt.key] = rt.describe()
				sr.Met[rt.key] = false
			}
			continue
		}
		v := num / den
		sr.Ratio[rt.key] = v
		if rt.target != 0 {
			sr.Targets[rt.key] = rt.describe()
			sr.Met[rt.key] = rt.met(v)
		}
	}
	return sr
}

// missed returns the ratio keys whose target was missed.
func (s scenarioReport) missed() []string {
	var out []string
	for _, rt := range s.ratios {
		if met, ok := s.Met[rt.key]; ok && !met {
			out = append(out, rt.key)
		}
	}
	return out
}

// metricOrder is the order metrics are printed in.
func metricOrder() []string {
	return []string{
		"sync_seconds", "peak_rss_bytes", "heap_per_object", "alloc_per_object", "cpu_seconds", "involuntary_switches",
		"events_per_second", "in_memory_events_per_second", "p50_ms", "p99_ms", "p999_ms",
	}
}

// metrics flattens the figures of a run that medians are taken of.
func metrics(r result.Run) map[string]float64 {
	m := map[string]float64{}
	put := func(k string, v float64) {
		if v != 0 {
			m[k] = v
		}
	}
	put("sync_seconds", r.SyncSeconds)
	put("peak_rss_bytes", float64(r.PeakRSSBytes))
	put("heap_per_object", r.HeapPerObject)
	put("alloc_per_object", r.AllocPerObject)
	put("cpu_seconds", r.CPUSeconds)
	put("involuntary_switches", float64(r.InvoluntarySwitches))
	put("events_per_second", r.EventsPerSecond)
	put("in_memory_events_per_second", r.InMemoryEventsPerSecond)
	if l := r.Latency; l != nil {
		put("p50_ms", l.P50)
		put("p99_ms", l.P99)
		put("p999_ms", l.P999)
	}
	return m
}

// format prints a metric with its unit.
func format(metric string, v float64) string {
	switch metric {
	case "sync_seconds":
		return fmt.Sprintf("%.2f s", v)
	case "cpu_seconds":
		return fmt.Sprintf("%.2f s CPU", v)
	case "peak_rss_bytes":
		return fmt.Sprintf("%.0f MiB", v/(1<<20))
	case "heap_per_object", "alloc_per_object":
		return fmt.Sprintf("%.0f B", v)
	case "events_per_second", "in_memory_events_per_second":
		return fmt.Sprintf("%.0f ev/s", v)
	case "involuntary_switches":
		return fmt.Sprintf("%.0f switches", v)
	case "p50_ms", "p99_ms", "p999_ms":
		return fmt.Sprintf("%.2f ms", v)
	}
	return fmt.Sprintf("%g", v)
}

// add records a scenario and what its runs say about the setup.
func (rep *report) add(sc scenario, sr scenarioReport) {
	if sr.Error != "" && sr.Met == nil {
		// A scenario that failed met none of its targets: they are
		// counted as missed, not left out.
		sr.ratios, sr.Targets, sr.Met = sc.ratios, map[string]string{}, map[string]bool{}
		for _, rt := range sc.ratios {
			if rt.target != 0 {
				sr.Targets[rt.key], sr.Met[rt.key] = rt.describe(), false
			}
		}
	}
	rep.Scenarios = append(rep.Scenarios, sr)
	for _, k := range sr.missed() {
		rep.Missed = append(rep.Missed, sc.name+" "+k)
	}
	for _, rs := range sr.Runs {
		for _, r := range rs {
			rep.GOMAXPROCS, rep.GOGC = r.GOMAXPROCS, r.GOGC
			if r.FeatureGates != nil {
				rep.ClientGoFeatureGates = r.FeatureGates
			}
		}
	}
}

// markdown is the table the README carries.
func (rep *report) markdown() string {
	var b strings.Builder
	against := "client-go " + rep.ClientGo
	if rep.Baseline != "" {
		against = "listwatch " + rep.Baseline + " (in client-go's place: the ratios are this build ÷ that one)"
	}
	fmt.Fprintf(&b, "listwatch vs %s — %s, %s, %d CPUs (%s), GOMAXPROCS=%d GOGC=%s, %d rounds, medians\n",
		against, rep.Date[:10], rep.Go, rep.Machine.CPUs, rep.Machine.CPU, rep.GOMAXPROCS, rep.GOGC, rep.Rounds)
	fmt.Fprintf(&b, "command: `%s`%s; load average before %s, after %s\n\n", rep.Command, rep.at(), rep.Machine.LoadBefore, rep.Machine.LoadAfter)
	b.WriteString("| scenario | ratio | listwatch | compared with | ratio | target | |\n")
	b.WriteString("|---|---|---:|---:|---:|---|---|\n")
	for _, s := range rep.Scenarios {
		name := s.Name
		if s.Objects > 0 {
			name += fmt.Sprintf(" (%s)", sizeLabel(s))
		}
		if s.Error != "" {
			fmt.Fprintf(&b, "| %s | error | | | | | %s |\n", name, firstLine(s.Error))
			continue
		}
		for _, rt := range s.ratios {
			v, measured := s.Ratio[rt.key]
			met, judged := s.Met[rt.key]
			if !measured && !judged {
				continue
			}
			mark := ""
			if judged {
				mark = "✅"
				if !met {
					mark = "❌"
				}
			}
			value := fmt.Sprintf("%.2f", v)
			if judged && !met {
				value = missText(v, rt.target)
			}
			if !measured {
				value = "no figure"
			}
			den := format(rt.metric, s.Medians[rt.den][rt.metric])
			if rt.den != "client_go" {
				den += " (" + rt.den + ")"
			}
			num := format(rt.metric, s.Medians[rt.num][rt.metric])
			if rt.num != "listwatch" {
				num += " (" + rt.num + ")"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", name, rt.key, num, den, value, rt.describe(), mark)
		}
	}
	if len(rep.Missed) > 0 {
		fmt.Fprintf(&b, "\nmissed: %s\n", strings.Join(rep.Missed, ", "))
	}
	if rep.Interrupted != "" {
		fmt.Fprintf(&b, "\n%s: the table is partial\n", rep.Interrupted)
	}
	return b.String()
}

// missText prints a ratio v that missed its target with as many digits
// as it takes to differ from the target (two at least): 1.101 against
// ≤ 1.1, not 1.10; 0.5004 against ≤ 0.5, not 0.500. Past six digits it
// prints v in full.
func missText(v, target float64) string {
	for digits := 2; digits <= 6; digits++ {
		s := strconv.FormatFloat(v, 'f', digits, 64)
		if printed, _ := strconv.ParseFloat(s, 64); printed != target {
			return s
		}
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// at says which revision was measured, as the table's header does.
func (rep *report) at() string {
	switch {
	case rep.Revision == "":
		return ""
	case rep.Dirty:
		return " at " + rep.Revision + " with changes not committed"
	}
	return " at " + rep.Revision
}

func sizeLabel(s scenarioReport) string {
	if s.Events > 0 {
		return fmt.Sprintf("%d events", s.Events)
	}
	return fmt.Sprintf("%d objects", s.Objects)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.ReplaceAll(line, "|", "/")
}

// describeMachine reads the CPU model, memory and kernel from /proc.
func describeMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), LoadBefore: loadAverage()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) == nil {
		m.MemoryGiB = int((uint64(si.Totalram)*uint64(si.Unit) + 1<<29) >> 30)
	}
	var u syscall.Utsname
	if syscall.Uname(&u) == nil {
		m.Kernel = utsString(u.Release[:])
	}
	return m
}

func utsString(cs []int8) string {
	b := make([]byte, 0, len(cs))
	for _, c := range cs {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

// loadAverage is the first three fields of /proc/loadavg: other work on the
// machine makes every figure noisier, and ratios less so than times.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}
