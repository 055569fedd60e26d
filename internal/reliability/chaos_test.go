package reliability

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/apisim"
	"github.com/listwatch/listwatch/reflector"
)

// The chaos test: a seed drives random writes (creates, updates, deletes,
// deletes followed by a recreation, label changes that move objects in and
// out of a selector) and random faults from the matrix, against informers
// of different kinds (LIST+WATCH or streaming, JSON or protobuf, paged or
// not, all pods, one namespace, or a label selector), each with a handler
// added at start and one added late. At quiescence every cache and every
// handler's view must equal the server's state (C); the handlers must have
// seen resourceVersions only grow and every vanished object deleted (O, D);
// no cache may have gone back in time; and the LISTs must stay within what
// the faults explain (R).
//
// The schedule depends on the seed only (timings on the network do not), so
// a failing seed replays the same writes and faults:
//
//	LISTWATCH_CHAOS_SEED=42 go test -race -run TestChaos ./internal/reliability
//
// LISTWATCH_CHAOS_SEEDS=N runs seeds 1..N instead of the default few, and
// LISTWATCH_CHAOS_SEEDS=A-B seeds A..B (to sweep seeds not yet run); both
// variables apply to TestChaos and to TestChaosWithPeriodicRelist.

// chaosSeeds are the seeds a chaos test runs: the environment's, or else
// the test's defaults, which run under plain go test (and .ci/run), a few
// seconds each with -race.
func chaosSeeds(t *testing.T, defaults ...uint64) []uint64 {
	if s := os.Getenv("LISTWATCH_CHAOS_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("LISTWATCH_CHAOS_SEED=%q: %v", s, err)
		}
		return []uint64{seed}
	}
	if s := os.Getenv("LISTWATCH_CHAOS_SEEDS"); s != "" {
		first, last, ok := seedRange(s)
		if !ok {
			t.Fatalf("LISTWATCH_CHAOS_SEEDS=%q: want a positive number N (seeds 1..N) or a range A-B", s)
		}
		var seeds []uint64
		for seed := first; seed <= last; seed++ {
			seeds = append(seeds, seed)
		}
		return seeds
	}
	return defaults
}

// seedRange reads LISTWATCH_CHAOS_SEEDS: "N" is 1..N, "A-B" is A..B.
func seedRange(s string) (first, last uint64, ok bool) {
	a, b, isRange := strings.Cut(s, "-")
	if !isRange {
		a, b = "1", s
	}
	first, errA := strconv.ParseUint(a, 10, 64)
	last, errB := strconv.ParseUint(b, 10, 64)
	return first, last, errA == nil && errB == nil && first >= 1 && first <= last
}

func TestChaos(t *testing.T) {
	t.Parallel()
	for _, seed := range chaosSeeds(t, 1, 2, 3, 4) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			runChaos(t, seed, chaosOptions{steps: 250, faults: allFaults()})
		})
	}
}

// TestChaosWithPeriodicRelist adds the faults that lose events for good
// (events dropped in transit, objects skipped for their kind or rejected
// for their metadata) to informers that relist every second, which must
// repair them (row 12) and stay within one extra fill per interval.
func TestChaosWithPeriodicRelist(t *testing.T) {
	t.Parallel()
	faults := append(allFaults(), lossyFaults()...)
	for _, seed := range chaosSeeds(t, 12, 1212) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			runChaos(t, seed, chaosOptions{steps: 200, faults: faults, relist: time.Second})
		})
	}
}

// Row 16: a random mix of the faults of rows 1 to 5, 10 and 14 under
// writes, with the chaos test's oracle.
func TestRow16RandomMixUnderWrites(t *testing.T) {
	t.Parallel()
	var mix []chaosFault
	for _, f := range allFaults() {
		if f.row >= 1 && f.row <= 5 || f.row == 10 || f.row == 14 {
			mix = append(mix, f)
		}
	}
	for _, seed := range []uint64{16, 1616} {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			runChaos(t, seed, chaosOptions{steps: 120, faults: mix, faultRate: 0.3})
		})
	}
}

type chaosOptions struct {
	steps     int
	faults    []chaosFault
	faultRate float64       // the share of steps that are faults; default 0.2
	relist    time.Duration // WithRelistInterval for every informer; 0: none
}

// chaos is the state of one run.
type chaos struct {
	t          *testing.T
	rnd        *rand.Rand
	s          *apisim.Server
	proxy      *proxy
	wr         *writer
	injections []*apisim.Injection
	serverWide int      // faults that hit every informer at once
	schedule   []string // what was done, for the failure report
}

// chaosFault is one fault the schedule can pick: row is its row in the
// matrix.
type chaosFault struct {
	row   int
	name  string
	apply func(c *chaos) string
}

// inject schedules f for the next times requests matching m.
func (c *chaos) inject(m apisim.Match, f apisim.Fault, times int) {
	c.injections = append(c.injections, c.s.Inject(m, f, times))
}

func allFaults() []chaosFault {
	after := func(c *chaos) int { return c.rnd.IntN(4) }
	// A fault for the next watch applies once some watch ends; half the
	// time, make them end now.
	cutSometimes := func(c *chaos) string {
		if c.rnd.IntN(2) == 0 {
			return ""
		}
		c.proxy.cut()
		return ", connections cut"
	}
	watchFault := func(row int, name string, make func(n int) apisim.Fault) chaosFault {
		return chaosFault{row, name, func(c *chaos) string {
			n := after(c)
			c.inject(onWatch, make(n), 1)
			return fmt.Sprintf("%s after %d on the next watch%s", name, n, cutSometimes(c))
		}}
	}
	plainWatchFault := func(row int, name string, make func(n int) apisim.Fault) chaosFault {
		return chaosFault{row, name, func(c *chaos) string {
			n := after(c)
			c.inject(onPlainWatch, make(n), 1)
			return fmt.Sprintf("%s after %d on the next plain watch%s", name, n, cutSometimes(c))
		}}
	}
	listFault := func(row int, name string, f func(c *chaos) apisim.Fault) chaosFault {
		return chaosFault{row, name, func(c *chaos) string {
			c.inject(onList, f(c), 1)
			return name + " on the next list"
		}}
	}
	tooLarge := apierrors.NewTimeoutError("Too large resource version: 1000, current: 9", 1).ErrStatus
	tooLarge.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return []chaosFault{
		watchFault(1, "clean end", func(n int) apisim.Fault { return apisim.EndStream().After(n + 1) }),
		watchFault(2, "empty watch", func(int) apisim.Fault { return apisim.EndStream() }),
		watchFault(3, "truncated frame", func(n int) apisim.Fault { return apisim.TruncateFrame().After(n) }),
		listFault(3, "truncated list", func(c *chaos) apisim.Fault { return apisim.TruncateFrame().After(after(c)) }),
		watchFault(3, "dropped connection", func(n int) apisim.Fault { return apisim.DropConnection().After(n) }),
		watchFault(4, "malformed frame", func(n int) apisim.Fault { return apisim.MalformedFrame().After(n) }),
		listFault(4, "malformed list", func(c *chaos) apisim.Fault { return apisim.MalformedFrame().After(after(c)) }),
		watchFault(5, "unknown event type", func(n int) apisim.Fault { return apisim.UnknownEventType().After(n) }),
		// Only on plain watches: the initial events of a streaming list
		// come in key order, so their resourceVersions may go down and a
		// wrong one cannot be told from a right one.
		plainWatchFault(8, "decreasing resourceVersion", func(n int) apisim.Fault { return apisim.DecreasingResourceVersion().After(n) }),
		watchFault(9, "frame over the limit", func(n int) apisim.Fault { return apisim.LargeObject(128 << 10).After(n) }),
		watchFault(10, "410 in the stream", func(n int) apisim.Fault {
			return apisim.ErrorEvent(http.StatusGone, metav1.StatusReasonExpired).After(n)
		}),
		{10, "compaction", func(c *chaos) string {
			c.s.Compact()
			c.serverWide++
			return "compaction"
		}},
		watchFault(11, "too large resourceVersion", func(int) apisim.Fault { return apisim.StatusResponse(tooLarge) }),
		{14, "429 burst", func(c *chaos) string {
			n := 1 + c.rnd.IntN(4)
			f := apisim.TooManyRequestsWithoutRetryAfter()
			if c.rnd.IntN(2) == 0 {
				f = apisim.TooManyRequests(1)
			}
			c.inject(apisim.Match{Resource: "pods"}, f, n)
			return fmt.Sprintf("%d 429s", n)
		}},
		{15, "5xx burst", func(c *chaos) string {
			n := 1 + c.rnd.IntN(4)
			code := []int{http.StatusInternalServerError, http.StatusServiceUnavailable}[c.rnd.IntN(2)]
			c.inject(apisim.Match{Resource: "pods"}, apisim.ServerError(code), n)
			return fmt.Sprintf("%d %ds", n, code)
		}},
		watchFault(15, "ERROR 500 in the stream", func(n int) apisim.Fault {
			return apisim.ErrorEvent(http.StatusInternalServerError, metav1.StatusReasonInternalError).After(n)
		}),
		watchFault(17, "silent stream", func(n int) apisim.Fault { return apisim.SilentAfterHeaders().After(n) }),
		{18, "connections cut", func(c *chaos) string {
			c.proxy.cut()
			return "connections cut"
		}},
		listFault(19, "slow list", func(*chaos) apisim.Fault { return apisim.TrickleList(5 * time.Millisecond) }),
		{21, "restart", func(c *chaos) string {
			c.s.Restart()
			c.serverWide++
			return "restart"
		}},
		{27, "a proxy answers", func(c *chaos) string {
			a := proxyAnswers[c.rnd.IntN(len(proxyAnswers))]
			m, verb := onList, "list"
			if c.rnd.IntN(2) == 0 {
				m, verb = onWatch, "watch"
			}
			c.inject(m, apisim.Answer(a.code, a.contentType, []byte(a.body)), 1)
			return fmt.Sprintf("%d %s answered to the next %s", a.code, a.name, verb)
		}},
	}
}

// proxyAnswers are what a proxy or a load balancer in front of the server
// may answer in its place (row 27).
var proxyAnswers = []struct {
	name, contentType, body string
	code                    int
}{
	{"{}", "application/json", `{}`, http.StatusOK},
	{"a list without items", "application/json", `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"}}`, http.StatusOK},
	{"an empty list without resourceVersion", "application/json", `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}`, http.StatusOK},
	{"a login page", "text/html", "<html><body>Sign in</body></html>", http.StatusOK},
	{"a gateway's error page", "text/html", "<html><body>502 Bad Gateway</body></html>", http.StatusBadGateway},
	{"nothing", "", "", http.StatusServiceUnavailable},
}

// lossyFaults lose an event for good: only a relist repairs what they do.
// The spoiled objects go to plain watches only: in a list (or the initial
// events of a streaming list) an object skipped for its name or metadata is
// missing from the state the list replaces the cache with, so handlers are
// told it was deleted, and get it back at the same resourceVersion with the
// next good list (row 7) — a repeat the (O) check would rightly flag. (One
// that lost only its resourceVersion is kept as the cache held it: the
// cache stays at the version before, which may be older than the list's.)
func lossyFaults() []chaosFault {
	mutation := func(row int, name string, f apisim.Fault) chaosFault {
		return chaosFault{row, name, func(c *chaos) string {
			n := c.rnd.IntN(4)
			c.inject(onPlainWatch, f.After(n), 1)
			return fmt.Sprintf("%s after %d on the next plain watch", name, n)
		}}
	}
	return []chaosFault{
		mutation(6, "wrong kind", apisim.WrongKind()),
		mutation(7, "no name", apisim.MissingName()),
		mutation(7, "no resourceVersion", apisim.EmptyResourceVersion()),
		{12, "events lost", func(c *chaos) string {
			n := 1 + c.rnd.IntN(3)
			if err := c.s.DropEvents(apisim.Pods(), n); err != nil {
				c.t.Fatal(err)
			}
			return fmt.Sprintf("the next %d events lost", n)
		}},
	}
}

// onPlainWatch matches watches that are not streaming lists.
var onPlainWatch = apisim.Match{Verb: apisim.VerbWatch, Resource: "pods", Request: func(r *http.Request) bool {
	return r.URL.Query().Get("sendInitialEvents") != "true"
}}

// runChaos runs one seeded schedule and checks the oracle at quiescence.
func runChaos(t *testing.T, seed uint64, o chaosOptions) {
	if o.faultRate == 0 {
		o.faultRate = 0.2
	}
	rnd := rand.New(rand.NewPCG(seed, 0x5eed))
	opts := []apisim.Option{apisim.WithWatchBuffer(8 + rnd.IntN(100))}
	if rnd.IntN(2) == 0 {
		opts = append(opts, apisim.WithHistorySize(20+rnd.IntN(50))) // 410s without asking
	}
	s := newServer(t, opts...)
	c := &chaos{t: t, rnd: rnd, s: s, proxy: newProxy(t, hostPort(s.URL())), wr: newWriter(t, s)}
	log := logRequests(s)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d failed; replay with LISTWATCH_CHAOS_SEED=%d go test -race -run 'TestChaos|TestRow16' ./internal/reliability", seed, seed)
			t.Logf("schedule:\n%s", strings.Join(c.schedule, "\n"))
		}
	})
	for i := range 8 {
		c.wr.create([]string{"a", "b"}[i%2], fmt.Sprint("p", i))
	}

	var ws []*watcher
	late := map[*watcher]int{} // the step at which a second handler is added
	for i := range 3 + rnd.IntN(2) {
		// Half the informers decode on two goroutines, and half share
		// their objects' parts; chosen from the seed, not rnd, so that
		// every seed's schedule stays as it was.
		workers := 1 + int((seed+uint64(i))%2)
		sharing := (seed/2+uint64(i))%2 == 0
		su := setup{
			host: "http://" + c.proxy.addr(),
			mode: []listMode{listThenWatch, autoMode}[rnd.IntN(2)],
			http: []reflector.HTTPOption{
				reflector.WithContentType([]reflector.ContentType{reflector.JSON, reflector.Protobuf}[rnd.IntN(2)]),
				reflector.WithWatchIdleTimeout(time.Second),
				reflector.WithListTimeout(time.Second),
				reflector.WithMaxFrameBytes(64 << 10),
				reflector.WithDecodeWorkers(workers),
			},
			refl: []reflector.Option[*corev1.Pod]{
				reflector.WithPageSize[*corev1.Pod]([]int64{0, 3, 500}[rnd.IntN(3)]),
				reflector.WithMinWatchTimeout[*corev1.Pod]([]time.Duration{time.Second, time.Minute}[rnd.IntN(2)]),
				reflector.WithRelistInterval[*corev1.Pod](o.relist),
			},
			target: []reflector.Target{{}, {Namespace: "a"}, {LabelSelector: "app=web"}}[rnd.IntN(3)],
		}
		if sharing {
			su.refl = append(su.refl, reflector.WithSharing[*corev1.Pod]())
		}
		w := startWatcher(t, s, fmt.Sprintf("informer%d(%s,decode×%d,sharing=%v)", i, describeSetup(su), workers, sharing), su)
		w.monitorRV()
		ws = append(ws, w)
		late[w] = rnd.IntN(o.steps)
	}

	start := time.Now()
	faults := 0
	for step := range o.steps {
		for _, w := range ws {
			if late[w] == step {
				rec := newRecorder(w.name + "/late")
				w.inf.AddEventHandler(rec)
				w.recs = append(w.recs, rec)
			}
		}
		var what string
		if rnd.Float64() < o.faultRate {
			f := o.faults[rnd.IntN(len(o.faults))]
			what = fmt.Sprintf("row %d: %s", f.row, f.apply(c))
			faults++
		} else {
			what = c.write()
		}
		c.schedule = append(c.schedule, fmt.Sprintf("%3d %s", step, what))
		if d := rnd.IntN(15); d > 0 {
			time.Sleep(time.Duration(d) * time.Millisecond)
		}
	}
	for _, inj := range c.injections {
		inj.Remove()
	}
	ran := time.Since(start)
	took := converge(t, s, 30*time.Second, ws...)

	hits := 0
	for _, inj := range c.injections {
		hits += inj.Hits()
	}
	// Not every injection is bound to hit (one for the next watch waits
	// for a watch to end, and what is left is removed at quiescence), but
	// with dozens injected a run in which none hit tested no fault of
	// its own (nor the (R) bound, which counts hits).
	if hits == 0 {
		t.Errorf("none of the %d injected faults hit a request (%d faults in the schedule)", len(c.injections), faults)
	}
	refills := len(fills(log.all()))
	// Every informer fills its cache once, plus once per server-wide fault,
	// once more if its streaming list falls back, and once per relist
	// interval; every injected fault that hit a request explains at most
	// one more.
	bound := len(ws)*(2+c.serverWide) + hits
	if o.relist > 0 {
		bound += len(ws) * int(time.Since(start)/o.relist)
	}
	if refills > bound {
		t.Errorf("(R) %d cache fills, want at most %d (%d informers, %d server-wide faults, %d faults that hit)",
			refills, bound, len(ws), c.serverWide, hits)
	}
	t.Logf("seed %d: %d steps (%d faults, %d hits) in %s, converged %s later; %d informers, %d cache fills (bound %d), %d WATCHes",
		seed, o.steps, faults, hits, ran.Round(time.Millisecond), took.Round(time.Millisecond), len(ws), refills, bound, watches(s))
}

// write makes one random change and says what it was.
func (c *chaos) write() string {
	ns := []string{"a", "b"}[c.rnd.IntN(2)]
	name := fmt.Sprint("p", c.rnd.IntN(12))
	key := ns + "/" + name
	if _, err := c.wr.pods.Get(ns, name); err != nil {
		c.wr.create(ns, name)
		return "create " + key
	}
	switch r := c.rnd.IntN(10); {
	case r < 4:
		c.wr.touch(ns, name)
		return "update " + key
	case r < 6:
		app := []string{"web", "db"}[c.rnd.IntN(2)]
		c.wr.relabel(ns, name, map[string]string{"app": app})
		return "label " + key + " app=" + app
	case r < 8:
		c.wr.remove(ns, name)
		return "delete " + key
	default:
		c.wr.remove(ns, name)
		c.wr.create(ns, name)
		return "delete and recreate " + key
	}
}

// describeSetup names an informer's configuration in a few words.
func describeSetup(su setup) string {
	mode := map[listMode]string{listThenWatch: "list-watch", autoMode: "streaming"}[su.mode]
	target := "all"
	switch {
	case su.target.Namespace != "":
		target = "ns=" + su.target.Namespace
	case su.target.LabelSelector != "":
		target = su.target.LabelSelector
	}
	return mode + "," + target
}

// After a fault, deletes must come from the watch, not from a later
// relist: a fault-free tail of deletes, and no new cache fill (the chaos
// test's relists repair lost deletes with tombstones, so it hardly sees a
// FIFO that drops them).
func TestChaosCleanTail(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	log := logRequests(s)
	wr := newWriter(t, s)
	wr.createN("default", 10)
	w := startWatcher(t, s, "pods", setup{})
	s.Restart() // a fault: forces resume
	wr.touch("default", "p0")
	converge(t, s, convergeBound, w)
	before := len(fills(log.all()))
	for i := range 5 {
		wr.remove("default", fmt.Sprint("p", i+1))
	}
	converge(t, s, convergeBound, w)
	if after := len(fills(log.all())); after != before {
		t.Errorf("cache fills went from %d to %d in a fault-free tail", before, after)
	}
	if _, _, d, unknown := w.recs[0].counts(); d != 5 || unknown != 0 {
		t.Errorf("deletes = %d (inferred %d), want 5 observed from the watch", d, unknown)
	}
}
