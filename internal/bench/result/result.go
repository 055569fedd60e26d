// Package result is what one benchmark client run reports: one JSON line
// that the orchestrator (cmd/benchrun) collects, takes medians of and
// compares.
package result

import (
	"slices"
	"time"
)

// Run is the outcome of one benchclient process. Fields that a scenario
// does not measure are left zero and omitted from the JSON.
type Run struct {
	Lib      string `json:"lib"`      // listwatch, client-go or limit
	Scenario string `json:"scenario"` // initial-sync, watch-throughput, ...
	Variant  string `json:"variant,omitempty"`
	Resource string `json:"resource"`
	Content  string `json:"content"` // json or protobuf
	Objects  int    `json:"objects"`
	Events   int    `json:"events,omitempty"`
	Handlers int    `json:"handlers,omitempty"`

	GoVersion  string `json:"go"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	GOGC       string `json:"gogc"`
	// FeatureGates are client-go's gates as client-go reports them.
	FeatureGates map[string]bool `json:"feature_gates,omitempty"`
	// Options says how the library was configured, beyond its defaults.
	Options []string `json:"options,omitempty"`

	// SyncSeconds is from starting the informer to its cache being synced.
	SyncSeconds float64 `json:"sync_seconds,omitempty"`
	// PeakRSSBytes is the process's VmHWM when the measurement ended.
	PeakRSSBytes int64 `json:"peak_rss_bytes,omitempty"`
	// HeapBytes is the live heap after GC, less the heap before the
	// informer was made; HeapPerObject divides it by Objects.
	HeapBytes     int64   `json:"heap_bytes,omitempty"`
	HeapPerObject float64 `json:"heap_per_object,omitempty"`
	// AllocPerObject is every byte allocated while syncing, per object.
	AllocPerObject float64 `json:"alloc_per_object,omitempty"`

	// CPUSeconds is the process's user and system CPU time over the
	// measured part (sync, or the replay): less sensitive than wall time to
	// other load on the machine.
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`

	// InvoluntarySwitches counts the times the kernel took the CPU away
	// from the process during the measured part (getrusage ru_nivcsw): a
	// direct sign of other load on the machine, which latency percentiles
	// and rates suffer from. Load is the load average when the run began.
	InvoluntarySwitches int64  `json:"involuntary_switches,omitempty"`
	Load                string `json:"load,omitempty"`

	// EventsPerSecond is Events over the time from releasing the replay
	// to the handler seeing the last event.
	EventsPerSecond float64 `json:"events_per_second,omitempty"`
	// InMemoryEventsPerSecond is the limit client's rate when decoding the
	// same bytes from memory, with no network in between.
	InMemoryEventsPerSecond float64 `json:"in_memory_events_per_second,omitempty"`

	// Latency is server-write-to-handler latency over every handler call.
	Latency *Latency `json:"latency,omitempty"`

	// Server is what the server counted during the run (lists, watches,
	// streaming lists, events written).
	Server map[string]int64 `json:"server,omitempty"`
}

// Latency summarises latency samples, in milliseconds.
type Latency struct {
	Samples int     `json:"samples"`
	P50     float64 `json:"p50_ms"`
	P90     float64 `json:"p90_ms"`
	P99     float64 `json:"p99_ms"`
	P999    float64 `json:"p999_ms"`
	Max     float64 `json:"max_ms"`
}

// Summarize sorts samples and returns their percentiles.
func Summarize(samples []time.Duration) *Latency {
	if len(samples) == 0 {
		return nil
	}
	slices.Sort(samples)
	ms := func(q float64) float64 {
		return float64(samples[Rank(len(samples), q)]) / float64(time.Millisecond)
	}
	return &Latency{
		Samples: len(samples),
		P50:     ms(0.50), P90: ms(0.90), P99: ms(0.99), P999: ms(0.999),
		Max: float64(samples[len(samples)-1]) / float64(time.Millisecond),
	}
}

// Rank is the index of quantile q in n sorted samples (nearest rank).
func Rank(n int, q float64) int {
	i := int(q*float64(n)+0.999999) - 1
	return min(max(i, 0), n-1)
}

// Median returns the median of xs (the mean of the middle two for an even
// count), or 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
