package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/examples/internal/demotest"
)

func TestCRD(t *testing.T) {
	lines := demotest.Run(t, run)
	event := regexp.MustCompile(`^\S+ (ADDED|MODIFIED|DELETED) +\S+/\S+ +(Ready|Resizing) +rv=\d+ spec=\{"color":"[a-z]+","size":\d+\}$`)
	for _, l := range lines {
		if event.MatchString(l) {
			return
		}
	}
	t.Errorf("no event line with the widget's phase and spec:\n%s", strings.Join(lines, "\n"))
}

// -namespace watches that namespace alone.
func TestCRDInANamespace(t *testing.T) {
	lines := demotest.Run(t, run, "-namespace", "payments")
	event := regexp.MustCompile(`^\S+ (ADDED|MODIFIED|DELETED\??) +(\S+)/\S+ `)
	events := 0
	for _, l := range lines {
		if m := event.FindStringSubmatch(l); m != nil {
			events++
			if m[2] != "payments" {
				t.Errorf("an event outside -namespace payments: %q", l)
			}
		}
	}
	if events == 0 {
		t.Errorf("no events in payments:\n%s", strings.Join(lines, "\n"))
	}
}

// A long spec is cut to 60 characters, never inside a multi-byte one.
func TestTruncate(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"short", "short"},
		{strings.Repeat("a", 60), strings.Repeat("a", 60)},
		{strings.Repeat("a", 61), strings.Repeat("a", 60) + "…"},
		{strings.Repeat("é", 60), strings.Repeat("é", 60)}, // 120 bytes, 60 runes: kept whole
		{strings.Repeat("é", 61), strings.Repeat("é", 60) + "…"},
	} {
		if got := truncate(tc.in, 60); got != tc.want {
			t.Errorf("truncate(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
