package demo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Flags are the flags every example takes. Register them on a FlagSet, then
// parse it with Parse. The zero value means: find a kubeconfig as kubectl
// does, run until Ctrl-C, default simulator workload.
type Flags struct {
	// Kubeconfig is the kubeconfig file; "" means $KUBECONFIG, then
	// ~/.kube/config.
	Kubeconfig string
	// Context is the kubeconfig context; "" means its current context.
	Context string
	// Sim forces the simulator even when a kubeconfig exists.
	Sim bool
	// Duration ends the example after that long, counted from when it is
	// connected (the simulator filled); 0 means until Ctrl-C.
	Duration time.Duration
	// SyncTimeout bounds the wait for the caches' first list; 0 means no
	// bound.
	SyncTimeout time.Duration
	// SimObjects is the number of pods in the simulator; the other
	// resources scale with it (see the Workload functions). 0 means 3000.
	SimObjects int
	// SimChurn is the simulator's writes per second to each resource.
	// 0 means 20.
	SimChurn float64
}

// Register defines the flags on fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Kubeconfig, "kubeconfig", "", "kubeconfig `file` (default: $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&f.Context, "context", "", "kubeconfig `context` (default: the current context)")
	fs.BoolVar(&f.Sim, "sim", false, "use the in-process apiserver simulator even if a kubeconfig exists")
	fs.Var((*duration)(&f.Duration), "duration", "exit after this long (a `duration`, such as 30s), once connected (default: run until Ctrl-C)")
	f.SyncTimeout = time.Minute
	fs.Var((*duration)(&f.SyncTimeout), "sync-timeout", "give up if the caches have not synced after this long (a `duration`; 0: never)")
	f.SimObjects = 3000
	fs.Var((*count)(&f.SimObjects), "sim-objects", "simulator: `number` of pods (other resources scale with it)")
	f.SimChurn = 20
	fs.Var((*rate)(&f.SimChurn), "sim-churn", "simulator: creates, updates and deletes per second, per resource (a `rate`)")
}

// The flags' values are checked when they are parsed: a value the
// example would have to replace by another is refused.

// rate is a flag.Value for a number of events per second, from one per
// 100 s to 100,000 (NaN, infinities and 0 are refused).
type rate float64

func (r *rate) String() string { return strconv.FormatFloat(float64(*r), 'g', -1, 64) }

func (r *rate) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil:
		return err.(*strconv.NumError).Err // invalid syntax, or value out of range
	case math.IsNaN(v) || v < 0.01 || v > 100_000:
		return errors.New("want a rate per second from 0.01 to 100000")
	}
	*r = rate(v)
	return nil
}

// count is a flag.Value for a number of objects, 1 or more.
type count int

func (c *count) String() string { return strconv.Itoa(int(*c)) }

func (c *count) Set(s string) error {
	v, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return err.(*strconv.NumError).Err
	case v < 1:
		return errors.New("want 1 or more")
	}
	*c = count(v)
	return nil
}

// duration is a flag.Value for a time.Duration that is not negative.
type duration time.Duration

func (d *duration) String() string { return time.Duration(*d).String() }

func (d *duration) Set(s string) error {
	v, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return errors.New("want a duration such as 30s or 5m")
	case v < 0:
		return errors.New("want a duration of 0 or more")
	}
	*d = duration(v)
	return nil
}

// Timed returns ctx bounded by the -duration flag, if set. Call it once
// connected.
func (f *Flags) Timed(ctx context.Context) (context.Context, context.CancelFunc) {
	if f.Duration > 0 {
		return context.WithTimeout(ctx, f.Duration)
	}
	return context.WithCancel(ctx)
}

// SyncDeadline returns a channel that receives when -sync-timeout has
// passed, or nil (never) when there is no timeout.
func (f *Flags) SyncDeadline() <-chan time.Time {
	if f.SyncTimeout <= 0 {
		return nil
	}
	return time.After(f.SyncTimeout)
}

// SyncContext returns ctx bounded by -sync-timeout, if set: the context to
// wait for caches with.
func (f *Flags) SyncContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if f.SyncTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, f.SyncTimeout)
}

// ErrUsage marks a bad command line (one the flag package rejected, or see
// BadUsage); the error and the usage have been printed already, and Main
// exits 2.
var ErrUsage = errors.New("usage")

// ErrStopped is what Connect returns when the run's context ended (Ctrl-C)
// before it could connect: Main ends the program cleanly, with a summary.
var ErrStopped = errors.New("stopped before connecting")

// Parse parses args into fs, which must use flag.ContinueOnError, and
// rejects positional arguments.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return ErrUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return ErrUsage
	}
	return nil
}

// BadUsage reports a command line that parsed but makes no sense (two
// flags that exclude each other): it prints msg and the usage, and returns
// the error with which Main exits 2.
func BadUsage(fs *flag.FlagSet, msg string) error {
	fmt.Fprintln(fs.Output(), msg)
	fs.Usage()
	return ErrUsage
}

// Main runs an example: run gets a context that ends on the first Ctrl-C
// (SIGINT) or SIGTERM — a second one kills the program — the command-line
// arguments and standard output. Main exits 0 when run returns nil or after
// -h, 2 on a bad command line, and 1 with the error on standard error
// otherwise.
func Main(run func(ctx context.Context, args []string, stdout io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// Once the first signal has arrived, the next one gets the default
	// behaviour again: the program exits at once.
	context.AfterFunc(ctx, stop)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.Is(err, ErrStopped):
		fmt.Fprintf(os.Stdout, "%v\nsummary: synced=0 events=0\n", err)
		os.Exit(0)
	case errors.Is(err, ErrUsage):
		os.Exit(2)
	default:
		fmt.Fprintf(os.Stderr, "%s: %v\n", filepath.Base(os.Args[0]), err)
		os.Exit(1)
	}
}
