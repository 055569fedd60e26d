package demo

import (
	"bytes"
	"testing"
	"time"
)

// Off a terminal, each status is a line of its own, and clearing prints
// nothing: a log of the run has no escape codes.
func TestProgressOffATerminal(t *testing.T) {
	var out bytes.Buffer
	p := NewProgress(&out)
	p.Show("listing pods: %d so far", 100)
	p.Clear()
	p.Show("listing pods: %d so far", 200)
	p.Clear()
	if want := "listing pods: 100 so far\nlisting pods: 200 so far\n"; out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
	if p.Interval() != time.Second {
		t.Errorf("interval %v off a terminal, want 1s", p.Interval())
	}
}

func TestPerSecond(t *testing.T) {
	if got := PerSecond(300, 2*time.Second); got != 150 {
		t.Errorf("300 in 2s: %v/s, want 150", got)
	}
	if got := PerSecond(5, 0); got != 0 {
		t.Errorf("5 in no time: %v/s, want 0", got)
	}
}

// On a terminal, each status replaces the last in place, and Clear erases
// the line once, so that what is printed next starts on a clean line.
func TestProgressOnATerminal(t *testing.T) {
	var out bytes.Buffer
	p := &Progress{w: &out, tty: true}
	p.Clear() // nothing shown yet: nothing to erase
	p.Show("listing pods: %d so far", 100)
	p.Show("listing pods: %d so far", 200)
	p.Clear()
	p.Clear()
	const erase = "\r\033[K"
	if want := erase + "listing pods: 100 so far" + erase + "listing pods: 200 so far" + erase; out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
	if p.Interval() != 200*time.Millisecond {
		t.Errorf("interval %v on a terminal, want 200ms", p.Interval())
	}
}
