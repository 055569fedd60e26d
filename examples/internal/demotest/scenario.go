package demotest

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/apisim"
)

// The helpers below run an example against a simulator of the test's own,
// reached through a kubeconfig as a real cluster would be: with no churn,
// every event the example prints is one the test caused, and the test can
// inject faults.

// Guard bounds every wait of these helpers, as a failure guard only: a
// passing test never waits for it.
const Guard = 30 * time.Second

// Sim starts a simulator serving res, closed when t ends, and returns it
// with the path of a kubeconfig that points at it.
func Sim(t testing.TB, res ...apisim.Resource) (*apisim.Server, string) {
	t.Helper()
	sim := apisim.New(apisim.WithResources(res...))
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	return sim, Kubeconfig(t, sim)
}

// Kubeconfig writes a kubeconfig that points at sim, started already,
// trusting its CA if it serves TLS, and returns its path.
func Kubeconfig(t testing.TB, sim *apisim.Server) string {
	t.Helper()
	cluster := fmt.Sprintf("{server: %q}", sim.URL())
	if ca := sim.CAPEM(); ca != nil {
		cluster = fmt.Sprintf("{server: %q, certificate-authority-data: %q}", sim.URL(), base64.StdEncoding.EncodeToString(ca))
	}
	path := filepath.Join(t.TempDir(), "config")
	config := fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: sim
  cluster: %s
contexts:
- name: sim
  context: {cluster: sim, user: sim}
users:
- name: sim
  user: {}
current-context: sim
`, cluster)
	if err := os.WriteFile(path, config, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Output is an example's standard output, kept line by line. Writes never
// block, however many lines nobody has read.
type Output struct {
	mu      sync.Mutex
	partial []byte   // the last line, until its newline comes
	lines   []string // every whole line written
	read    int      // lines[:read] have been passed by Next
	more    chan struct{}
}

// NewOutput returns an empty Output.
func NewOutput() *Output { return &Output{more: make(chan struct{})} }

// Write keeps p's whole lines, and the rest for the next Write.
func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.partial = append(o.partial, p...)
	added := false
	for {
		i := strings.IndexByte(string(o.partial), '\n')
		if i < 0 {
			break
		}
		o.lines = append(o.lines, string(o.partial[:i]))
		o.partial = o.partial[i+1:]
		added = true
	}
	if added {
		close(o.more)
		o.more = make(chan struct{})
	}
	return len(p), nil
}

// Lines returns the whole lines written so far.
func (o *Output) Lines() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.lines...)
}

// String returns the whole lines written so far, one per line.
func (o *Output) String() string { return strings.Join(o.Lines(), "\n") }

// Next returns the submatches of the first line after those Next has
// passed that matches re, passing it and the lines before it. It fails t
// if no such line comes within Guard.
func (o *Output) Next(t testing.TB, re *regexp.Regexp) []string {
	t.Helper()
	timeout := time.After(Guard)
	for {
		o.mu.Lock()
		for o.read < len(o.lines) {
			line := o.lines[o.read]
			o.read++
			if m := re.FindStringSubmatch(line); m != nil {
				o.mu.Unlock()
				return m
			}
		}
		more := o.more
		o.mu.Unlock()
		select {
		case <-more:
		case <-timeout:
			t.Fatalf("no line matching %q within %v; output:\n%s", re, Guard, o)
			return nil
		}
	}
}

// Start runs an example's run function with args until the returned stop
// function is called, which ends run's context and returns its error.
func Start(t testing.TB, run func(context.Context, []string, io.Writer) error, args ...string) (*Output, func() error) {
	t.Helper()
	out := NewOutput()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, out) }()
	stopped := false
	stop := func() error {
		t.Helper()
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(Guard):
			t.Fatalf("run did not return within %v of its context's end; output:\n%s", Guard, out)
			return nil
		}
	}
	t.Cleanup(func() {
		if !stopped {
			_ = stop() // a test that failed before stopping must not leave run behind
		}
	})
	return out, stop
}

// CreateUntilStopped calls create with 0, 1, 2, ... on a goroutine of its
// own, as fast as it returns (with a millisecond's pause every 20 calls),
// until the returned stop function is called, which returns once the
// goroutine has. An error from create fails t and ends the goroutine.
func CreateUntilStopped(t testing.TB, create func(i int) error) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			if err := create(i); err != nil {
				t.Error(err)
				return
			}
			if i%20 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	})
	return func() { close(done); wg.Wait() }
}
