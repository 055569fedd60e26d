package main

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The command that internal/bench/run hands benchrun to quote in the
// report is one a shell runs again with the same arguments, an argument
// with "|" or spaces included; plain arguments stay as typed. Before, it
// was "$*": -only 'a|b' came back as a pipeline.
func TestRunQuotesTheCommand(t *testing.T) {
	script, err := os.ReadFile("../../run")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for l := range strings.SplitSeq(string(script), "\n") {
		if strings.HasPrefix(l, "cmdline=") || strings.Contains(l, "cmdline+=") {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		t.Fatal("no cmdline= line in internal/bench/run")
	}
	line := strings.Join(lines, "\n")
	for _, tc := range []struct {
		args []string
		want string // the command, if it is to be checked as is
	}{
		{nil, "internal/bench/run"},
		{[]string{"-quick", "-out", "/tmp/bench.json"}, "internal/bench/run -quick -out /tmp/bench.json"},
		{[]string{"-only", "watch-latency|slow-handler", "-listwatch-args=-sharing -decode-workers=2", "-rounds", "1"}, ""},
		{[]string{"-only", "it's", "-gogc", ""}, ""},
	} {
		// Run the script's line with the arguments, print the command, then
		// have the shell split it again.
		prog := line + "\nprintf '%s\\n' \"$cmdline\"\neval \"set -- $cmdline\"\nprintf '%s\\000' \"$@\""
		cmd := exec.Command("bash", append([]string{"-c", prog, "run"}, tc.args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%q: %v\n%s", tc.args, err, stderr.String())
		}
		command, rest, _ := strings.Cut(string(out), "\n")
		if tc.want != "" && command != tc.want {
			t.Errorf("%q: command %q, want %q", tc.args, command, tc.want)
		}
		again := strings.Split(strings.TrimSuffix(rest, "\x00"), "\x00")
		if want := append([]string{"internal/bench/run"}, tc.args...); !slices.Equal(again, want) || stderr.Len() > 0 {
			t.Errorf("%q: the command %s runs again as %q, want %q\n%s", tc.args, command, again, want, stderr.String())
		}
	}
}

// Run without internal/bench/run, benchrun quotes its own arguments as
// the command, -bin apart, the same way.
func TestCommandQuotesItsArguments(t *testing.T) {
	args := os.Args
	defer func() { os.Args = args }()
	os.Args = []string{"bin/benchrun", "-bin", "bin", "-only", "watch-latency|slow-handler", "-gogc", "", "-listwatch-args=it's -sharing", "-quick"}
	got := command()
	if want := `internal/bench/run -only 'watch-latency|slow-handler' -gogc '' '-listwatch-args=it'\''s -sharing' -quick`; got != want {
		t.Errorf("command %s, want %s", got, want)
	}
	out, err := exec.Command("bash", "-c", "eval \"set -- $1\"; printf '%s\\000' \"$@\"", "x", got).Output()
	if err != nil {
		t.Fatal(err)
	}
	again := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if want := []string{"internal/bench/run", "-only", "watch-latency|slow-handler", "-gogc", "", "-listwatch-args=it's -sharing", "-quick"}; !slices.Equal(again, want) {
		t.Errorf("runs again as %q, want %q", again, want)
	}
}
