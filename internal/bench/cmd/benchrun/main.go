// Command benchrun runs the side-by-side benchmarks of listwatch and
// client-go: for each scenario it starts a benchserver, runs the scenario's
// clients (each in its own process) alternating A B A B over several
// rounds, takes the medians, computes the ratios listwatch ÷ client-go and
// checks them against the targets. It prints a markdown table on stdout
// and, with -out, writes every figure and every run as JSON. It exits 1 if
// a scenario failed, if SIGINT or SIGTERM interrupted the run (after the
// scenario under way, printing the partial table), or if -only matches no
// scenario.
//
// internal/bench/run builds the binaries and calls it:
//
//	internal/bench/run -quick -out /tmp/bench.json
//
// With -profile DIR, every scenario that misses a target gets one more
// listwatch run with CPU and allocation profiles, summarised with
// `go tool pprof -top` into DIR; with -profile-all too, every scenario.
//
// With -baseline NAME, another build of listwatch (BIN/benchclient-baseline)
// takes client-go's place, so that two versions of listwatch are compared
// the same way, A B A B against the same server: the ratios are this
// build ÷ that one. internal/bench/run -baseline REV builds it from a git
// revision. A change's effect on the whole pipeline shows there, where a
// microbenchmark of one stage can mislead.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/listwatch/listwatch/internal/bench/result"
)

func main() {
	var (
		quick      = flag.Bool("quick", false, "fewer objects and rounds: a smoke test that ends within 5 minutes on 2 cores")
		out        = flag.String("out", "", "write the results as JSON to this file")
		rounds     = flag.Int("rounds", 0, "rounds of A B alternation (default 3 with -quick, 5 without)")
		bin        = flag.String("bin", "bin", "directory of benchserver, benchclient-listwatch and benchclient-client-go")
		only       = flag.String("only", "", "run only the scenarios whose name matches this regular expression")
		extra      = flag.Bool("extra", true, "also run the scenarios beyond the issue's list (configmaps)")
		profileDir = flag.String("profile", "", "profile listwatch where a target is missed, into this directory")
		profileAll = flag.Bool("profile-all", false, "with -profile, profile every scenario, its targets met or not")
		gogc       = flag.String("gogc", "", "GOGC for every client (default: unset, Go's default)")
		gomaxprocs = flag.String("gomaxprocs", "", "GOMAXPROCS for every client (default: unset, the number of CPUs)")
		lwArgs     = flag.String("listwatch-args", "", "extra benchclient flags for listwatch's runs: options such as -sharing (the issue's ratios are for defaults); a scenario parameter (-handlers, -strip, -slow, -content, -scenario) fails the scenarios it changes")
		cmdline    = flag.String("command", "", "how the run was asked for, as the report quotes it (default: from the arguments)")
		revision   = flag.String("revision", "", "the git revision of the tree measured, for the report (internal/bench/run passes HEAD)")
		dirty      = flag.Bool("dirty", false, "the work tree differed from -revision, for the report")
		baseline   = flag.String("baseline", "", "compare with another build of listwatch, BIN/benchclient-baseline, in client-go's place; the value names it in the report")
	)
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("benchrun: ")
	filter, err := regexp.Compile(*only)
	if err != nil {
		log.Fatal(err)
	}
	sz := sizesFor(*quick)
	if *rounds > 0 {
		sz.rounds = *rounds
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	rep := &report{
		ClientGo: "v0.37.2",
		Go:       runtime.Version(),
		Quick:    *quick,
		Date:     time.Now().UTC().Format(time.RFC3339),
		Command:  *cmdline,
		Revision: *revision,
		Dirty:    *dirty,
		Machine:  describeMachine(),
		Rounds:   sz.rounds,
	}
	if rep.Command == "" {
		rep.Command = command()
	}
	if *baseline != "" {
		rep.ClientGo, rep.Baseline = "", *baseline
	}
	e := &env{gogc: *gogc, gomaxprocs: *gomaxprocs, listwatchArgs: strings.Fields(*lwArgs), baseline: *baseline != ""}
	scs := scenarios(sz)
	if *baseline != "" {
		dropClientGoTargets(scs)
	}
	scs, err = selectScenarios(scs, filter, *extra)
	if err != nil {
		log.Fatal(err)
	}
	started := time.Now()
	err = runAll(ctx, rep, scs, func(ctx context.Context, sc scenario) (scenarioReport, error) {
		return runScenario(ctx, *bin, e, sc, sz.rounds, *profileDir, *profileAll)
	})
	rep.Seconds = time.Since(started).Seconds()
	rep.Machine.LoadAfter = loadAverage()

	fmt.Print(rep.markdown())
	if *out != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	if err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

// selectScenarios returns the scenarios of scs whose name matches filter,
// less the extra ones unless extra is set; an error, naming the pattern,
// if that leaves none.
func selectScenarios(scs []scenario, filter *regexp.Regexp, extra bool) ([]scenario, error) {
	var eligible []string
	var selected []scenario
	for _, sc := range scs {
		if !extra && sc.extra {
			continue
		}
		eligible = append(eligible, sc.name)
		if filter.MatchString(sc.name) {
			selected = append(selected, sc)
		}
	}
	if len(selected) == 0 {
		return nil, fmt.Errorf("-only %q matches none of the scenarios (%s)", filter, strings.Join(eligible, ", "))
	}
	return selected, nil
}

// runAll runs scs in order with run and adds each to rep, failed or not.
// It returns an error if a scenario failed or if ctx ended before the last
// one ended: it stops after the scenario during which ctx ended and marks
// the report as interrupted.
func runAll(ctx context.Context, rep *report, scs []scenario, run func(context.Context, scenario) (scenarioReport, error)) error {
	failed := 0
	for i, sc := range scs {
		sr, err := run(ctx, sc)
		if err != nil {
			log.Printf("%s: %v", sc.name, err)
			failed++
			sr = scenarioReport{Name: sc.name, Error: err.Error()}
		}
		rep.add(sc, sr)
		if ctx.Err() != nil {
			rep.Interrupted = fmt.Sprintf("interrupted after %d of %d scenarios", i+1, len(scs))
			return fmt.Errorf("%s (%d failed): the table is partial", rep.Interrupted, failed)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d scenarios failed", failed, len(scs))
	}
	return nil
}

// runScenario starts the scenario's server and alternates its arms.
func runScenario(ctx context.Context, bin string, e *env, sc scenario, rounds int, profileDir string, profileAll bool) (scenarioReport, error) {
	log.Printf("%s: starting the server (%d %s, %d events)", sc.name, sc.server.objects, sc.server.resource, sc.server.events)
	srv, err := startServer(ctx, bin, sc.server)
	if err != nil {
		return scenarioReport{}, err
	}
	defer srv.stop()
	runs := map[string][]result.Run{}
	for round := range rounds {
		for _, a := range sc.arms {
			r, err := runClient(ctx, bin, e, srv.url, a)
			if err != nil {
				return scenarioReport{}, err
			}
			log.Printf("%s: round %d %s: %s", sc.name, round+1, a.name, summary(r))
			runs[a.name] = append(runs[a.name], r)
		}
	}
	if err := sameSetup(sc, runs); err != nil {
		return scenarioReport{}, err
	}
	sr := summarize(sc, runs)
	for _, rt := range sc.ratios {
		if met, judged := sr.Met[rt.key]; judged && !met {
			value := "no figure"
			if v, measured := sr.Ratio[rt.key]; measured {
				value = missText(v, rt.target)
			}
			log.Printf("%s: %s = %s misses its target %s", sc.name, rt.key, value, rt.describe())
		}
	}
	if profileDir != "" && (profileAll || len(sr.missed()) > 0) {
		files, err := profileListwatch(ctx, bin, e, srv.url, sc, profileDir)
		if err != nil {
			return sr, err
		}
		sr.Profiles = files
	}
	return sr, nil
}

// sameSetup checks that the runs compared were made alike, and returns an
// error naming the first two arms that were not:
//   - every run with the same GOMAXPROCS and GOGC;
//   - every run of the same work: the same benchclient scenario, resource,
//     objects, events and content type;
//   - the runs of arms that the scenario gives the same flags (listwatch
//     and client_go, listwatch_stripped and client_go_stripped, ...) with
//     the same handlers and variant, so that a scenario parameter given to
//     one library only (-listwatch-args=-handlers=1, -strip, -slow) fails
//     the scenario rather than skew its ratios;
//   - the libraries' runs asking the server the same way (as many LISTs
//     and streaming lists: a library that fell back to paged LISTs is not
//     timed against one that streamed).
func sameSetup(sc scenario, runs map[string][]result.Run) error {
	type seen struct {
		arm string
		run *result.Run
	}
	var first, firstLib *seen
	sameFlags := map[string]*seen{} // the first run of each set of arm flags
	for _, a := range sc.arms {
		flags := strings.Join(a.args, " ")
		for i := range runs[a.name] {
			r := &runs[a.name][i]
			if first == nil {
				first = &seen{a.name, r}
			} else if r.GOMAXPROCS != first.run.GOMAXPROCS || r.GOGC != first.run.GOGC {
				return fmt.Errorf("%s ran with GOMAXPROCS=%d GOGC=%s, %s with GOMAXPROCS=%d GOGC=%s",
					a.name, r.GOMAXPROCS, r.GOGC, first.arm, first.run.GOMAXPROCS, first.run.GOGC)
			} else if w, fw := work(r), work(first.run); w != fw {
				return fmt.Errorf("%s ran %s, %s ran %s: the arms did not run the same work (a scenario parameter in -listwatch-args?)",
					a.name, w, first.arm, fw)
			}
			if f, ok := sameFlags[flags]; !ok {
				sameFlags[flags] = &seen{a.name, r}
			} else if s, fs := shape(r), shape(f.run); s != fs {
				return fmt.Errorf("%s ran with %s, %s with %s: the arms did not run the same work (a scenario parameter in -listwatch-args?)",
					a.name, s, f.arm, fs)
			}
			if a.lib == "limit" || r.Server == nil {
				continue
			}
			if firstLib == nil {
				firstLib = &seen{a.name, r}
			} else if r.Server["lists"] != firstLib.run.Server["lists"] || r.Server["watch_lists"] != firstLib.run.Server["watch_lists"] {
				return fmt.Errorf("%s made %d LISTs and %d streaming lists, %s %d and %d: the libraries did not ask alike",
					a.name, r.Server["lists"], r.Server["watch_lists"], firstLib.arm, firstLib.run.Server["lists"], firstLib.run.Server["watch_lists"])
			}
		}
	}
	return nil
}

// work is what a run did, as every arm of a scenario must have done it.
func work(r *result.Run) string {
	return fmt.Sprintf("%s of %d %s with %d events as %s", r.Scenario, r.Objects, r.Resource, r.Events, r.Content)
}

// shape is how a run was set up beyond its work, as arms with the same
// flags must have been.
func shape(r *result.Run) string {
	variant := r.Variant
	if variant == "" {
		variant = "none"
	}
	return fmt.Sprintf("%d handlers, variant %s", r.Handlers, variant)
}

// summary is one run in a log line.
func summary(r result.Run) string {
	var parts []string
	ms := metrics(r)
	for _, m := range metricOrder() {
		if v, ok := ms[m]; ok {
			parts = append(parts, fmt.Sprintf("%s=%s", m, format(m, v)))
		}
	}
	if s := r.Server; s != nil {
		parts = append(parts, fmt.Sprintf("server(lists=%d watches=%d watch_lists=%d events=%d)",
			s["lists"], s["watches"], s["watch_lists"], s["events_written"]))
	}
	return strings.Join(parts, " ")
}

// command is how this run was asked for, as the README quotes it.
func command() string {
	var args []string
	skip := false
	for _, a := range os.Args[1:] {
		switch {
		case skip:
			skip = false
		case a == "-bin" || a == "--bin":
			skip = true
		case strings.HasPrefix(a, "-bin=") || strings.HasPrefix(a, "--bin="):
		default:
			args = append(args, shellQuote(a))
		}
	}
	return strings.TrimSpace("internal/bench/run " + strings.Join(args, " "))
}

// shellQuote returns s as a POSIX shell reads it back: as is if it holds
// only letters, digits and -_./=:,@%+, else in single quotes.
func shellQuote(s string) string {
	plain := s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("-_./=:,@%+", r))
	}) < 0
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
