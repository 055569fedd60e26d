package reflector_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/fakelw"
	"github.com/listwatch/listwatch/internal/objkey"
	"github.com/listwatch/listwatch/reflector"
)

// TestListUnderRandomFaults lists a Source of random size, with a random
// page size, through a server that fails pages at random (busy, down, cut
// part way, continue token expired, an unpaged list paged anyway) and is
// written to between pages, and checks what a user relies on: the one
// Replace the list ends in holds the Source's state at the resourceVersion
// it carries, every object once at its resourceVersion; a list whose
// pages all came is not thrown away; an expired token is followed at once
// by one list in one answer; the list never spins, and asks for a bounded
// number of pages. A failing seed runs alone with
// -run 'TestListUnderRandomFaults/seed=N$'.
func TestListUnderRandomFaults(t *testing.T) {
	for seed := range uint64(300) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { listUnderRandomFaults(t, seed) })
		})
	}
}

func listUnderRandomFaults(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x6c697374))
	src := newSource()
	lw := &faultyServer{Source: src, rng: rng, faults: rng.IntN(16)}
	for range rng.IntN(41) {
		lw.create()
	}
	var opts []reflector.Option[*corev1.Pod]
	opts = append(opts, reflector.WithMode[*corev1.Pod](reflector.ListWatch))
	pageSize := int64(500) // the Reflector's default
	if rng.IntN(4) > 0 {
		pageSize = 1 + rng.Int64N(7)
		opts = append(opts, reflector.WithPageSize[*corev1.Pod](pageSize))
	}
	if rng.IntN(3) == 0 {
		lw.pagesUnpaged = 1 + rng.Int64N(7)
	}
	scenario := fmt.Sprintf("seed %d: %d pods, page size %d, %d faults, unpaged lists paged by %d",
		seed, len(src.Objects()), pageSize, lw.faults, lw.pagesUnpaged)

	store := &replaceLog{recorder: newRecorder(), replaced: make(chan struct{})}
	r := reflector.New[*corev1.Pod](lw, store, opts...)
	ctx, cancel := context.WithCancel(t.Context())
	lw.cancel = cancel
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	select {
	case <-store.replaced:
	case <-ctx.Done():
	case <-time.After(time.Hour):
	}
	synctest.Wait() // the watch catches up with the writes made while listing
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%s\n%s\nrequests:\n%s", fmt.Sprintf(format, args...), scenario, strings.Join(lw.requests(), "\n"))
	}
	calls, faulted, mostObjects, spun := lw.totals()
	if spun {
		fail("more than %d List calls at one instant: the Reflector lists in a loop", maxCallsAtOnce)
		return
	}

	replaces := store.replaces()
	if len(replaces) != 1 {
		fail("%d Replace calls after one list, want 1", len(replaces))
		if len(replaces) == 0 {
			return
		}
	}
	got := replaces[0]
	rv, err := strconv.ParseUint(got.rv, 10, 64)
	if err != nil {
		fail("Replace at resourceVersion %q", got.rv)
		return
	}
	if want := lw.stateAt(rv); !slices.Equal(got.objects, want) {
		fail("Replace at %d holds\n  %v\nthe Source at %d held\n  %v", rv, got.objects, rv, want)
	}
	if got, want := store.keys(), sourceKeys(src); !slices.Equal(got, want) {
		fail("after the watch caught up the store holds\n  %v\nthe Source\n  %v", got, want)
	}

	if msg := lw.checkRequests(); msg != "" {
		fail("%s", msg)
	}
	// Each list that fails is failed by a fault: at most faults+1 lists,
	// each of at most two runs of pages (its own and the fallback's), and
	// the faulted calls besides.
	pages := mostObjects/int(min(pageSize, lw.smallestPage())) + 2
	if bound := (faulted+1)*2*pages + faulted; calls > bound {
		fail("%d List calls for %d faults and at most %d pages a list, want at most %d", calls, faulted, pages, bound)
	}
}

// maxCallsAtOnce is how many List calls faultyServer takes at one instant
// before it calls the Reflector spinning: far more than the pages of any
// list here, far fewer than fakelw's SpinGuard allows.
const maxCallsAtOnce = 1000

// faultyServer serves a Source's lists with faults, at random: a page that
// carries a continue token fails as a busy server's (429 with Retry-After),
// a down one's (503), a connection cut after part of the page, or a token
// expired (410); a first page, more rarely, fails likewise (but for the
// token). Before a List call it may write to the Source, so that the pages
// of one list are cut from a state the Source has left. It logs every
// write, to tell the Source's state at any resourceVersion, and every call.
// All calls come from the Reflector's Run goroutine.
type faultyServer struct {
	*fakelw.Source[*corev1.Pod]
	rng          *rand.Rand
	faults       int   // left to inject
	pagesUnpaged int64 // if > 0, a list asked for without Limit is paged by this
	cancel       context.CancelFunc

	mu          sync.Mutex // guards what follows, read by the test at the end
	writes      []write
	mostObjects int
	names       int
	calls       []listCall
	faulted     int
	spun        bool
	at          time.Time
	atOnce      int
}

// write is one change to the Source: obj is "ns/name@rv", or "" if deleted.
type write struct {
	rv       uint64
	key, obj string
}

type listCall struct {
	opts    reflector.ListOptions
	asked   int64 // the Limit the Source served it with
	at      time.Time
	fault   string // "" if served whole
	expired bool
	cont    string // the continue token of a page served whole
}

func (f *faultyServer) List(ctx context.Context, opts reflector.ListOptions, add func(*corev1.Pod) error) (reflector.ListMeta, error) {
	f.mu.Lock()
	if now := time.Now(); now.Equal(f.at) {
		f.atOnce++
	} else {
		f.at, f.atOnce = now, 1
	}
	if f.atOnce > maxCallsAtOnce || len(f.calls) > 100_000 {
		f.spun = true
		f.mu.Unlock()
		f.cancel()
		return reflector.ListMeta{}, context.Canceled
	}
	f.mu.Unlock()

	for f.rng.IntN(10) < 3 {
		f.writeAtRandom()
	}
	call := listCall{opts: opts, asked: opts.Limit, at: time.Now()}
	if opts.Limit == 0 && opts.Continue == "" && f.pagesUnpaged > 0 {
		call.asked = f.pagesUnpaged
	}
	defer func() {
		f.mu.Lock()
		f.calls = append(f.calls, call)
		if call.fault != "" {
			f.faulted++
		}
		f.mu.Unlock()
	}()

	chance := 3 // in 10, of a continue page
	if opts.Continue == "" {
		chance = 1
	}
	served := reflector.ListOptions{Limit: call.asked, Continue: opts.Continue,
		ResourceVersion: opts.ResourceVersion, ResourceVersionMatch: opts.ResourceVersionMatch}
	if f.faults == 0 || f.rng.IntN(10) >= chance {
		meta, err := f.Source.List(ctx, served, add)
		call.cont = meta.Continue
		if err != nil {
			call.fault = "source: " + err.Error()
		}
		return meta, err
	}
	f.faults--
	kinds := 3
	if opts.Continue != "" {
		kinds = 4
	}
	switch f.rng.IntN(kinds) {
	case 0:
		secs := f.rng.IntN(4)
		call.fault = fmt.Sprintf("429 Retry-After %ds", secs)
		return reflector.ListMeta{}, apierrors.NewTooManyRequests("slow down", secs)
	case 1:
		call.fault = "503"
		return reflector.ListMeta{}, fakelw.Status(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "down")
	case 2:
		// The page is cut after a random prefix of it, possibly all of it.
		n, cut := 0, f.rng.Int64N(max(call.asked, 8)+1)
		f.Source.List(ctx, served, func(p *corev1.Pod) error {
			if n++; int64(n) <= cut {
				return add(p)
			}
			return nil
		})
		call.fault = fmt.Sprintf("EOF after %d items", min(int64(n), cut))
		return reflector.ListMeta{}, fmt.Errorf("reading the list: %w", io.ErrUnexpectedEOF)
	default:
		call.fault, call.expired = "410 Expired", true
		return reflector.ListMeta{}, fakelw.Status(http.StatusGone, metav1.StatusReasonExpired, "The provided continue parameter is too old")
	}
}

// writeAtRandom creates, updates or deletes a pod, and logs it.
func (f *faultyServer) writeAtRandom() {
	objs := f.Objects()
	switch n := f.rng.IntN(3); {
	case n == 0 || len(objs) == 0:
		f.create()
	case n == 1:
		p := pod(objs[f.rng.IntN(len(objs))].Name)
		p.Labels = map[string]string{"gen": strconv.Itoa(f.rng.IntN(1000))}
		f.logWrite(f.Update(p))
	default:
		p := objs[f.rng.IntN(len(objs))]
		f.Delete(objkey.Key(p))
		rv, _ := strconv.ParseUint(f.ResourceVersion(), 10, 64)
		f.mu.Lock()
		f.writes = append(f.writes, write{rv: rv, key: objkey.Key(p)})
		f.mu.Unlock()
	}
}

func (f *faultyServer) create() {
	f.mu.Lock()
	f.names++
	name := fmt.Sprintf("p%02d", f.names)
	f.mu.Unlock()
	f.logWrite(f.Create(pod(name)))
}

func (f *faultyServer) logWrite(p *corev1.Pod) {
	rv, _ := strconv.ParseUint(p.ResourceVersion, 10, 64)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = append(f.writes, write{rv: rv, key: objkey.Key(p), obj: objkey.Key(p) + "@" + p.ResourceVersion})
	live := map[string]bool{}
	for _, w := range f.writes {
		live[w.key] = w.obj != ""
	}
	n := 0
	for _, l := range live {
		if l {
			n++
		}
	}
	f.mostObjects = max(f.mostObjects, n)
}

// stateAt returns the Source's objects at rv, "ns/name@rv", sorted.
func (f *faultyServer) stateAt(rv uint64) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	state := map[string]string{}
	for _, w := range f.writes {
		if w.rv > rv {
			break
		}
		if w.obj == "" {
			delete(state, w.key)
		} else {
			state[w.key] = w.obj
		}
	}
	var out []string
	for _, o := range state {
		out = append(out, o)
	}
	slices.Sort(out)
	return out
}

// totals returns how many List calls were made and how many faulted, the
// most objects the Source held, and whether the Reflector spun.
func (f *faultyServer) totals() (calls, faulted, mostObjects int, spun bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls), f.faulted, f.mostObjects, f.spun
}

// smallestPage returns the smallest Limit a page was served with.
func (f *faultyServer) smallestPage() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	smallest := int64(500)
	for _, c := range f.calls {
		if c.asked > 0 {
			smallest = min(smallest, c.asked)
		}
	}
	return smallest
}

// checkRequests checks the List calls: a list whose last page was served
// whole is the last list (it is not thrown away); each continue token that
// expired is followed at once by the list in one answer (no Limit, no
// token), unless the list already fell back once, when it fails and a new
// list begins after a wait. It returns what went wrong, or "".
func (f *faultyServer) checkRequests() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	fellBack := false
	for i, c := range f.calls {
		if c.fault == "" && c.cont == "" && i+1 < len(f.calls) {
			return fmt.Sprintf("call %d: the list's last page was served, yet it was asked for again", i)
		}
		if c.opts.Continue == "" && !(i > 0 && f.calls[i-1].expired && f.calls[i-1].opts.Continue != "") {
			fellBack = false // a new list
		}
		if !c.expired || c.opts.Continue == "" {
			continue
		}
		if i+1 == len(f.calls) {
			return fmt.Sprintf("call %d: nothing asked after the continue token expired", i)
		}
		next := f.calls[i+1]
		switch {
		case !fellBack && (next.opts != reflector.ListOptions{} || !next.at.Equal(c.at)):
			return fmt.Sprintf("call %d: after the continue token expired, asked %+v %v later; want at once the list in one answer",
				i+1, next.opts, next.at.Sub(c.at))
		case fellBack && (next.opts.Continue != "" || !next.at.After(c.at)):
			return fmt.Sprintf("call %d: after the fallback's continue token expired too, asked %+v %v later; want a new list after a wait",
				i+1, next.opts, next.at.Sub(c.at))
		}
		fellBack = !fellBack
	}
	return ""
}

// requests describes every List call, for a failure's message.
func (f *faultyServer) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	var start time.Time
	for i, c := range f.calls {
		if i == 0 {
			start = c.at
		}
		outcome := "ok"
		if c.fault != "" {
			outcome = c.fault
		} else if c.cont != "" {
			outcome = "ok, continue " + c.cont
		}
		out = append(out, fmt.Sprintf("  %3d +%v limit=%d (served %d) continue=%q: %s",
			i, c.at.Sub(start), c.opts.Limit, c.asked, c.opts.Continue, outcome))
	}
	var ws []string
	for _, w := range f.writes {
		if w.obj == "" {
			ws = append(ws, fmt.Sprintf("%d:delete %s", w.rv, w.key))
		} else {
			ws = append(ws, fmt.Sprintf("%d:%s", w.rv, w.obj))
		}
	}
	return append(out, "writes: "+strings.Join(ws, " "))
}

// replaceLog is a recorder that also keeps every Replace's list as it came,
// duplicates and all, and closes replaced at the first.
type replaceLog struct {
	*recorder
	mu       sync.Mutex
	all      []replaced
	replaced chan struct{}
}

type replaced struct {
	objects []string // "ns/name@rv", sorted
	rv      string
}

func (s *replaceLog) Replace(list []*corev1.Pod, rv string) error {
	objs := make([]string, 0, len(list))
	for _, p := range list {
		objs = append(objs, objkey.Key(p)+"@"+p.ResourceVersion)
	}
	slices.Sort(objs)
	s.mu.Lock()
	s.all = append(s.all, replaced{objects: objs, rv: rv})
	if len(s.all) == 1 {
		close(s.replaced)
	}
	s.mu.Unlock()
	return s.recorder.Replace(list, rv)
}

func (s *replaceLog) replaces() []replaced {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.all)
}
