package demo

import (
	"fmt"
	"io"
	"os"
	"time"
)

// Progress shows a status line that keeps changing, such as "listing pods:
// 1200 so far": on a terminal it is rewritten in place every Interval, and
// elsewhere (a pipe, a file, a test) printed as a new line every Interval.
// A Progress is used from one goroutine.
type Progress struct {
	w     io.Writer
	tty   bool
	shown bool
}

// NewProgress returns a Progress that writes to w.
func NewProgress(w io.Writer) *Progress {
	f, ok := w.(*os.File)
	if !ok {
		return &Progress{w: w}
	}
	st, err := f.Stat()
	return &Progress{w: w, tty: err == nil && st.Mode()&os.ModeCharDevice != 0}
}

// Interval is how often Show should be called.
func (p *Progress) Interval() time.Duration {
	if p.tty {
		return 200 * time.Millisecond
	}
	return time.Second
}

// Show replaces the status line.
func (p *Progress) Show(format string, args ...any) {
	if !p.tty {
		fmt.Fprintf(p.w, format+"\n", args...)
		return
	}
	fmt.Fprintf(p.w, "\r\033[K"+format, args...)
	p.shown = true
}

// Clear removes the status line, before ordinary lines are printed.
func (p *Progress) Clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

// PerSecond returns n per second over d, for rates in messages.
func PerSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}
