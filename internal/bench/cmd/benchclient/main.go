// Command benchclient runs one benchmark scenario with one library against
// a benchserver, and prints one JSON line (a result.Run) on stdout.
//
//	benchclient -lib=listwatch -scenario=watch-throughput -server=http://127.0.0.1:PORT -content=json
//
// The binary is built twice, so that each library's process holds only that
// library's code (client-go's init functions and registries would otherwise
// weigh on listwatch's memory figures):
//
//	go build -o bin/benchclient-listwatch ./cmd/benchclient               # -lib=listwatch or -lib=limit
//	go build -tags clientgo -o bin/benchclient-client-go ./cmd/benchclient # -lib=client-go
//
// Scenarios:
//
//	initial-sync      start an informer, wait for its cache to sync; time, peak RSS, heap
//	steady-memory     the same, reporting the live heap per cached object (-strip: drop managedFields)
//	watch-throughput  sync, release the server's replay, count MODIFIED events through to one handler
//	watch-latency     sync, release a paced replay, record write-to-handler latency in -handlers handlers
//	slow-handler      watch-latency with one more handler that sleeps 100 ms per call (-slow)
//
// The limit library (-lib=limit, watch-throughput only) decodes the same
// watch bytes with listwatch's wire decoder in a loop, with no pipeline.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/bench/result"
)

// config is the command line.
type config struct {
	lib, scenario, server, content, mode string
	handlers, decodeWorkers              int
	strip, slow, sharing                 bool
	timeout                              time.Duration
	cpuProfile, memProfile, trace        string
}

func main() {
	var c config
	flag.StringVar(&c.lib, "lib", "listwatch", "library: listwatch, client-go or limit (which ones depends on the build)")
	flag.StringVar(&c.scenario, "scenario", "initial-sync", "initial-sync, steady-memory, watch-throughput, watch-latency or slow-handler")
	flag.StringVar(&c.server, "server", "", "benchserver URL")
	flag.StringVar(&c.content, "content", "json", "json or protobuf")
	flag.StringVar(&c.mode, "mode", "", "listwatch list mode: auto, listwatch or watchlist (default: the library's default)")
	flag.IntVar(&c.handlers, "handlers", 10, "fast handlers (watch-latency, slow-handler)")
	flag.BoolVar(&c.strip, "strip", false, "drop managedFields with a transform (and listwatch's decoder option)")
	flag.BoolVar(&c.sharing, "sharing", false, "listwatch only: share identical parts of cached objects (informer.WithSharing); the limit decodes so too")
	flag.IntVar(&c.decodeWorkers, "decode-workers", 0, "listwatch only: decode each watch stream on this many goroutines (reflector.WithDecodeWorkers; 0: the default)")
	flag.BoolVar(&c.slow, "slow", false, "add a handler that sleeps 100ms per call (slow-handler)")
	flag.DurationVar(&c.timeout, "timeout", 10*time.Minute, "give up after this long")
	flag.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the measured part to this file")
	flag.StringVar(&c.trace, "trace", "", "write an execution trace (runtime/trace) of the measured part to this file")
	flag.StringVar(&c.memProfile, "memprofile", "", "write a heap profile (alloc and in-use) at the end to this file")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("benchclient: ")
	if c.server == "" {
		log.Fatal("-server is required")
	}
	if c.memProfile != "" {
		runtime.MemProfileRate = 64 << 10
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	r, err := run(ctx, c)
	if err != nil {
		log.Fatalf("%s %s: %v", c.lib, c.scenario, err)
	}
	if err := writeMemProfile(c.memProfile); err != nil {
		log.Fatal(err)
	}
	out, _ := json.Marshal(r)
	fmt.Println(string(out))
	// Informers and slow handlers may still be busy; the process is done.
	os.Exit(0)
}

// run reads what the server holds, resets it, and runs the scenario.
func run(ctx context.Context, c config) (*result.Run, error) {
	info, err := fetchInfo(ctx, c.server)
	if err != nil {
		return nil, err
	}
	if err := post(ctx, c.server, "/bench/reset"); err != nil {
		return nil, err
	}
	r := &result.Run{
		Lib: c.lib, Scenario: c.scenario, Resource: info.Resource, Content: c.content,
		Objects: info.Objects, GoVersion: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0), GOGC: gogc(),
		Load: loadAverage(),
	}
	if c.lib == "limit" {
		if c.scenario != "watch-throughput" {
			return nil, fmt.Errorf("the limit library only runs watch-throughput")
		}
		err = limitThroughput(ctx, c, info, r)
	} else {
		var lib library
		lib, err = libraryFor(c.lib)
		if err != nil {
			return nil, err
		}
		switch c.scenario {
		case "initial-sync", "steady-memory":
			err = initialSync(ctx, c, info, lib, r)
		case "watch-throughput":
			err = throughput(ctx, c, info, lib, r)
		case "watch-latency", "slow-handler":
			err = latency(ctx, c, info, lib, r)
		default:
			err = fmt.Errorf("unknown scenario %q", c.scenario)
		}
	}
	if err != nil {
		return nil, err
	}
	r.Server, err = serverStats(ctx, c.server)
	return r, err
}

// library makes one library's informer under test.
type library struct {
	name         string
	featureGates func() map[string]bool
	newInformer  func(s setup) (informerUnderTest, error)
}

// setup is what an informer under test is built from.
type setup struct {
	server, content, resource, mode string
	strip, sharing                  bool
	decodeWorkers                   int
	handlers                        []handler
}

// handler is a handler in library-neutral form: each library adapts it.
type handler struct {
	add    func(obj metav1.Object)
	update func(oldObj, newObj metav1.Object)
}

// informerUnderTest is one library's shared informer, started and awaited.
type informerUnderTest interface {
	// start starts the informer; it returns at once.
	start(ctx context.Context)
	// waitSynced blocks until the cache holds the complete initial state.
	waitSynced(ctx context.Context) error
	// len is how many objects the cache holds.
	len() int
	// options describes the configuration beyond the library's defaults.
	options() []string
}

// serverInfo is what /bench/info answers.
type serverInfo struct {
	Resource string `json:"resource"`
	Objects  int    `json:"objects"`
	Events   int    `json:"events"`
	Distinct int    `json:"distinct"`
	ListRV   string `json:"list_rv"`
}

func fetchInfo(ctx context.Context, server string) (serverInfo, error) {
	var info serverInfo
	err := getJSON(ctx, server+"/bench/info", &info)
	return info, err
}

func serverStats(ctx context.Context, server string) (map[string]int64, error) {
	var stats map[string]int64
	err := getJSON(ctx, server+"/bench/stats", &stats)
	return stats, err
}

func getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func post(ctx context.Context, server, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, server+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s", path, resp.Status)
	}
	return nil
}

// gogc is the GC percentage in force, as GOGC would spell it.
func gogc() string {
	pct := debug.SetGCPercent(100)
	debug.SetGCPercent(pct)
	if pct < 0 {
		return "off"
	}
	return strconv.Itoa(pct)
}

// profile starts a CPU profile if asked; the returned function stops it.
// profile starts the CPU profile and the execution trace that c asks for,
// over the measured part; stop ends both.
func profile(c config) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, s := range stops {
			s()
		}
	}
	if c.cpuProfile != "" {
		f, err := os.Create(c.cpuProfile)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, err
		}
		stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
	}
	if c.trace != "" {
		f, err := os.Create(c.trace)
		if err != nil {
			stop()
			return nil, err
		}
		if err := trace.Start(f); err != nil {
			f.Close()
			stop()
			return nil, err
		}
		stops = append(stops, func() { trace.Stop(); f.Close() })
	}
	return stop, nil
}

func writeMemProfile(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.Lookup("allocs").WriteTo(f, 0)
}
