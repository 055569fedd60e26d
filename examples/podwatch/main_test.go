package main

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/examples/internal/demo"
	"github.com/listwatch/listwatch/examples/internal/demotest"
)

func TestPodwatch(t *testing.T) {
	event := regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3} (ADDED|MODIFIED|DELETED\??) +([a-z-]+)/([a-z]+-\d+) +(Pending|Running|Failed) +rv=\d+$`)
	for _, tc := range []struct {
		name string
		args []string
		// want reports whether an event for namespace/name belongs.
		want func(namespace, name string) bool
	}{
		{"protobuf", []string{"-protobuf"}, func(string, string) bool { return true }},
		{"json,namespace,selector", []string{"-json", "-namespace", "payments", "-selector", "app!=web"},
			func(ns, name string) bool { return ns == "payments" && !strings.HasPrefix(name, "web-") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lines := demotest.Run(t, run, tc.args...)
			synced := regexp.MustCompile(`^synced \d+ pods in `)
			if !slices.ContainsFunc(lines, synced.MatchString) {
				t.Errorf("no line says the cache has synced:\n%s", strings.Join(lines, "\n"))
			}
			events := 0
			for _, l := range lines {
				m := event.FindStringSubmatch(l)
				if m == nil {
					continue
				}
				events++
				if !tc.want(m[2], m[3]) {
					t.Errorf("event outside %v: %q", tc.args, l)
				}
			}
			if events == 0 {
				t.Errorf("no event lines (time, type, namespace/name, phase, rv):\n%s", strings.Join(lines, "\n"))
			}
		})
	}
}

func TestPodwatchFlags(t *testing.T) {
	if err := run(t.Context(), []string{"-protobuf", "-json"}, nil); !errors.Is(err, demo.ErrUsage) {
		t.Errorf("-protobuf with -json: %v, want a usage error (exit status 2)", err)
	}
}
