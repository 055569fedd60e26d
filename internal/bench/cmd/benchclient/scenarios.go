package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/bench/fixture"
	"github.com/listwatch/listwatch/internal/bench/result"
)

// initialSync starts an informer with one counting handler and measures the
// time to synced, the peak RSS, the allocations while syncing and the live
// heap per object afterwards.
func initialSync(ctx context.Context, c config, info serverInfo, lib library, r *result.Run) error {
	var adds atomic.Int64
	handlerDone := make(chan struct{})
	h := handler{add: func(metav1.Object) {
		if adds.Add(1) == int64(info.Objects) {
			close(handlerDone)
		}
	}}
	if c.strip {
		r.Variant = "stripped"
	}
	inf, before, err := newInformer(c, lib, r, h)
	if err != nil {
		return err
	}
	stopProfile, err := profile(c)
	if err != nil {
		return err
	}
	start, use := time.Now(), rusage()
	inf.start(ctx)
	if err := inf.waitSynced(ctx); err != nil {
		return err
	}
	r.SyncSeconds = time.Since(start).Seconds()
	use.measure(r)
	stopProfile()
	r.PeakRSSBytes = peakRSS()
	if n := inf.len(); n != info.Objects {
		return fmt.Errorf("synced with %d objects in the cache, want %d", n, info.Objects)
	}
	select {
	case <-handlerDone:
	case <-ctx.Done():
		return fmt.Errorf("the handler got %d adds of %d: %w", adds.Load(), info.Objects, ctx.Err())
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	r.AllocPerObject = float64(after.TotalAlloc-before.TotalAlloc) / float64(info.Objects)
	heap := liveHeap() - int64(before.HeapAlloc)
	r.HeapBytes = heap
	r.HeapPerObject = float64(heap) / float64(info.Objects)
	runtime.KeepAlive(inf)
	return nil
}

// throughput syncs, releases the server's replay and times the events
// through to one handler.
func throughput(ctx context.Context, c config, info serverInfo, lib library, r *result.Run) error {
	if info.Events == 0 {
		return fmt.Errorf("the server has no events to replay (-events)")
	}
	r.Events = info.Events
	var updates atomic.Int64
	done := make(chan struct{})
	seq, err := newSequence(info)
	if err != nil {
		return err
	}
	h := handler{
		add: func(metav1.Object) {},
		update: func(_, obj metav1.Object) {
			seq.see(obj)
			if updates.Add(1) == int64(info.Events) {
				close(done)
			}
		},
	}
	inf, _, err := newInformer(c, lib, r, h)
	if err != nil {
		return err
	}
	inf.start(ctx)
	if err := inf.waitSynced(ctx); err != nil {
		return err
	}
	stopProfile, err := profile(c)
	if err != nil {
		return err
	}
	start, use := time.Now(), rusage()
	if err := post(ctx, c.server, "/bench/go"); err != nil {
		return err
	}
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("the handler got %d updates of %d: %w", updates.Load(), info.Events, ctx.Err())
	}
	r.EventsPerSecond = float64(info.Events) / time.Since(start).Seconds()
	use.measure(r)
	stopProfile()
	r.PeakRSSBytes = peakRSS()
	if n := inf.len(); n != info.Objects {
		return fmt.Errorf("%d objects in the cache, want %d", n, info.Objects)
	}
	if err := seq.check(updates.Load()); err != nil {
		return fmt.Errorf("the handler: %w", err)
	}
	return nil
}

// sequence checks that one handler gets the replay's events each once,
// and each object's in order: event k carries resourceVersion ListRV+k+1.
// A library that lost, duplicated or reordered an object's events fails
// the run instead of being timed. The order across objects is not
// checked: listwatch promises each object's changes in order, not the
// server's order across objects (a consumer that falls a whole cycle of
// the replay behind gets one pod's two updates together, before the other
// pods' updates between them; client-go keeps the server's order). A
// handler is called on one goroutine at a time, in both libraries; check
// reads the result after the handler's last call has happened before it.
type sequence struct {
	first, events uint64            // the replay's first resourceVersion, and how many
	seen          []bool            // by event
	last          map[string]uint64 // the resourceVersion each object was last seen at
	err           error             // the first event out of its place
}

func newSequence(info serverInfo) (*sequence, error) {
	rv, err := strconv.ParseUint(info.ListRV, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("the server's list resourceVersion %q: %w", info.ListRV, err)
	}
	return &sequence{
		first:  rv + 1,
		events: uint64(info.Events),
		seen:   make([]bool, info.Events),
		last:   make(map[string]uint64, info.Objects),
	}, nil
}

func (s *sequence) see(obj metav1.Object) {
	if s.err != nil {
		return
	}
	rv, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	key := obj.GetNamespace() + "/" + obj.GetName()
	switch {
	case err != nil || rv < s.first || rv-s.first >= s.events:
		s.err = fmt.Errorf("update of %s at resourceVersion %q, not one of the replay's", key, obj.GetResourceVersion())
	case s.seen[rv-s.first]:
		s.err = fmt.Errorf("update of %s at resourceVersion %d again: an event duplicated", key, rv)
	case rv < s.last[key]:
		s.err = fmt.Errorf("update of %s at resourceVersion %d after %d: its events reordered", key, rv, s.last[key])
	default:
		s.seen[rv-s.first] = true
		s.last[key] = rv
	}
}

// check reports an event out of its place, or a count of calls other than
// the replay's events (calls is read after the run: a late duplicate
// shows); with no duplicate, the right count means none was lost.
func (s *sequence) check(calls int64) error {
	if s.err != nil {
		return s.err
	}
	if uint64(calls) != s.events {
		return fmt.Errorf("%d updates for %d events: events lost or duplicated", calls, s.events)
	}
	return nil
}

// latency syncs, releases a paced replay, and records in each fast handler
// the time from the server's write to the call. With -slow, one more
// handler sleeps 100ms per call; only the fast handlers are measured.
func latency(ctx context.Context, c config, info serverInfo, lib library, r *result.Run) error {
	if info.Events == 0 {
		return fmt.Errorf("the server has no events to replay (-events)")
	}
	r.Events, r.Handlers = info.Events, c.handlers
	samples := make([][]time.Duration, c.handlers)
	seqs := make([]*sequence, c.handlers)
	calls := make([]atomic.Int64, c.handlers)
	var remaining atomic.Int64 // fast handlers still expecting events
	remaining.Store(int64(c.handlers))
	done := make(chan struct{})
	var bad atomic.Value
	hs := make([]handler, 0, c.handlers+1)
	for i := range c.handlers {
		samples[i] = make([]time.Duration, 0, info.Events)
		seq, err := newSequence(info)
		if err != nil {
			return err
		}
		seqs[i] = seq
		hs = append(hs, handler{
			add: func(metav1.Object) {},
			update: func(_, obj metav1.Object) {
				now := time.Now()
				seq.see(obj)
				if calls[i].Add(1) > int64(info.Events) {
					return // an extra call: check reports it
				}
				sent, err := strconv.ParseInt(obj.GetAnnotations()[fixture.SentAnnotation], 10, 64)
				if err != nil {
					bad.CompareAndSwap(nil, fmt.Errorf("event without a send time: %w", err))
				}
				samples[i] = append(samples[i], now.Sub(time.Unix(0, sent)))
				if len(samples[i]) == info.Events && remaining.Add(-1) == 0 {
					close(done)
				}
			},
		})
	}
	r.Variant = "base"
	if c.slow {
		r.Variant = "slow"
		sleep := func() { time.Sleep(100 * time.Millisecond) }
		hs = append(hs, handler{add: func(metav1.Object) { sleep() }, update: func(_, _ metav1.Object) { sleep() }})
	}
	inf, _, err := newInformer(c, lib, r, hs...)
	if err != nil {
		return err
	}
	inf.start(ctx)
	if err := inf.waitSynced(ctx); err != nil {
		return err
	}
	stopProfile, err := profile(c)
	if err != nil {
		return err
	}
	use := rusage()
	if err := post(ctx, c.server, "/bench/go"); err != nil {
		return err
	}
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("%d handlers still short of %d events: %w", remaining.Load(), info.Events, ctx.Err())
	}
	use.measure(r)
	stopProfile()
	if err, _ := bad.Load().(error); err != nil {
		return err
	}
	for i, seq := range seqs {
		if err := seq.check(calls[i].Load()); err != nil {
			return fmt.Errorf("fast handler %d: %w", i, err)
		}
	}
	var all []time.Duration
	for _, s := range samples {
		all = append(all, s...)
	}
	r.Latency = result.Summarize(all)
	r.PeakRSSBytes = peakRSS()
	if n := inf.len(); n != info.Objects {
		return fmt.Errorf("%d objects in the cache, want %d", n, info.Objects)
	}
	return nil
}

// newInformer records the heap before the informer exists, then makes it
// with the given handlers.
func newInformer(c config, lib library, r *result.Run, hs ...handler) (informerUnderTest, runtime.MemStats, error) {
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	inf, err := lib.newInformer(setup{
		server: c.server, content: c.content, resource: r.Resource, mode: c.mode,
		strip: c.strip, sharing: c.sharing, decodeWorkers: c.decodeWorkers, handlers: hs,
	})
	if err != nil {
		return nil, before, err
	}
	r.Options = inf.options()
	if lib.featureGates != nil {
		r.FeatureGates = lib.featureGates()
	}
	return inf, before, nil
}

// liveHeap collects garbage until the heap stops shrinking and returns it.
func liveHeap() int64 {
	var m runtime.MemStats
	prev := int64(-1)
	for range 5 {
		runtime.GC()
		debug.FreeOSMemory()
		runtime.ReadMemStats(&m)
		if int64(m.HeapAlloc) == prev {
			break
		}
		prev = int64(m.HeapAlloc)
	}
	return int64(m.HeapAlloc)
}

// usage is what getrusage says of the process so far.
type usage struct {
	cpu      float64 // user and system CPU seconds
	switches int64   // involuntary context switches
}

func rusage() usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return usage{}
	}
	return usage{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds(), switches: ru.Nivcsw}
}

// measure records the CPU time and involuntary context switches since u
// into r.
func (u usage) measure(r *result.Run) {
	now := rusage()
	r.CPUSeconds = now.cpu - u.cpu
	r.InvoluntarySwitches = now.switches - u.switches
}

// loadAverage is the first three fields of /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// peakRSS is the process's high-water resident set size (VmHWM), in bytes.
func peakRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		if rest, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			kb, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte("kB")))), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
