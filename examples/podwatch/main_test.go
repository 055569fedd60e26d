package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/listwatch/listwatch/examples/internal/demo"
	"github.com/listwatch/listwatch/examples/internal/demotest"
	"github.com/listwatch/listwatch/internal/apisim"
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

// podwatch closes its Client's connections once its informer has stopped.
// Before, over HTTP/2 (a real cluster's, here the simulator's over TLS)
// its connection stayed open after run returned, until the transport's
// idle timeout of 90 s: code copied from it into a long-running program
// would leave a connection behind for each informer it stopped.
func TestPodwatchClosesItsConnections(t *testing.T) {
	sim := apisim.New(apisim.WithResources(apisim.Pods()))
	if err := sim.StartTLS(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	if err := sim.Populate(apisim.Pods(), 20, []string{"ns"}, func(ns string, i int) runtime.Object {
		return apisim.MakePod(ns, fmt.Sprintf("web-%d", i))
	}); err != nil {
		t.Fatal(err)
	}
	path := demotest.Kubeconfig(t, sim)
	if err := run(t.Context(), []string{"-kubeconfig", path, "-duration", "1s"}, io.Discard); err != nil {
		t.Fatal(err)
	}
	// A guard, well under the idle timeout: the server sees the
	// connections closed as soon as it reads their end.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := sim.WaitConnections(ctx, 0); err != nil {
		t.Error(err)
	}
}
