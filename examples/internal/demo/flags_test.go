package demo

import (
	"bytes"
	"errors"
	"flag"
	"testing"
	"time"
)

func newFlagSet(f *Flags, out *bytes.Buffer) *flag.FlagSet {
	fs := flag.NewFlagSet("example", flag.ContinueOnError)
	fs.SetOutput(out)
	f.Register(fs)
	return fs
}

// Without -duration an example runs until Ctrl-C, and without
// -sync-timeout it waits for the caches as long as it takes: 0 is no
// bound, not a bound already passed.
func TestZeroDurationsMeanNoBound(t *testing.T) {
	var f Flags
	ctx, cancel := f.Timed(t.Context())
	defer cancel()
	if _, ok := ctx.Deadline(); ok || ctx.Err() != nil {
		t.Errorf("Timed without -duration: deadline set or ended (%v)", ctx.Err())
	}
	if f.SyncDeadline() != nil {
		t.Error("SyncDeadline without -sync-timeout is not nil (never)")
	}
	syncCtx, cancelSync := f.SyncContext(t.Context())
	defer cancelSync()
	if _, ok := syncCtx.Deadline(); ok || syncCtx.Err() != nil {
		t.Errorf("SyncContext without -sync-timeout: deadline set or ended (%v)", syncCtx.Err())
	}

	f = Flags{Duration: time.Hour, SyncTimeout: time.Minute}
	ctx, cancel = f.Timed(t.Context())
	defer cancel()
	if _, ok := ctx.Deadline(); !ok {
		t.Error("Timed with -duration 1h has no deadline")
	}
	if f.SyncDeadline() == nil {
		t.Error("SyncDeadline with -sync-timeout 1m is nil")
	}
}

// The -sync-timeout default is a minute.
func TestSyncTimeoutDefault(t *testing.T) {
	var f Flags
	var out bytes.Buffer
	if err := Parse(newFlagSet(&f, &out), nil); err != nil {
		t.Fatal(err)
	}
	if f.SyncTimeout != time.Minute {
		t.Errorf("-sync-timeout defaults to %v, want 1m", f.SyncTimeout)
	}
}

// A positional argument is a bad command line; -h is not (Main exits 0).
func TestParseRefusesArguments(t *testing.T) {
	var f Flags
	var out bytes.Buffer
	if err := Parse(newFlagSet(&f, &out), []string{"-sim", "pods"}); !errors.Is(err, ErrUsage) {
		t.Errorf("an argument: %v, want ErrUsage", err)
	}
	if !bytes.Contains(out.Bytes(), []byte(`unexpected argument "pods"`)) {
		t.Errorf("the error does not name the argument:\n%s", out.String())
	}
	out.Reset()
	if err := Parse(newFlagSet(&f, &out), []string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v, want flag.ErrHelp", err)
	}
}

// BadUsage says what is wrong before the usage.
func TestBadUsagePrintsItsMessage(t *testing.T) {
	var f Flags
	var out bytes.Buffer
	fs := newFlagSet(&f, &out)
	if err := BadUsage(fs, "-a and -b exclude each other"); !errors.Is(err, ErrUsage) {
		t.Errorf("BadUsage: %v, want ErrUsage", err)
	}
	if !bytes.HasPrefix(out.Bytes(), []byte("-a and -b exclude each other\n")) {
		t.Errorf("output does not start with the message:\n%s", out.String())
	}
}
