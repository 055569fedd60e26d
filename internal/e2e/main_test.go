package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/e2e/cluster"
)

// update makes the conformance tests rewrite their golden files.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/conformance from the real apiserver")

// Set once by TestMain, read-only afterwards.
var (
	kubeBin string           // folder holding kube-apiserver and etcd
	shared  *cluster.Cluster // the cluster that tests without faults share, each in its own namespaces
)

// TestMain locates (or builds) the binaries and starts the shared cluster.
// Without them every test fails: a missing apiserver is an error here, not
// a reason to skip.
func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// A cold build takes about 14 minutes on 2 cores.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	var err error
	kubeBin, err = cluster.LocateBinaries(ctx, "kubebin/build.sh")
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: the end-to-end tests need kube-apiserver and etcd: %v\n", err)
		return 1
	}
	start := time.Now()
	// The shared cluster never compacts etcd (kube-apiserver compacts
	// every 5 minutes by default), so that what the recordings say of old
	// resourceVersions does not depend on how long the run took to get
	// there. The tests of compaction have clusters of their own.
	shared, err = cluster.Start(ctx, cluster.Options{Binaries: kubeBin, APIServerFlags: []string{"--etcd-compaction-interval=0"}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: starting the shared cluster: %v\n", err)
		return 1
	}
	took := time.Since(start)
	fmt.Printf("e2e: shared cluster (binaries in %s) ready in %v at %s\n", kubeBin, took.Round(time.Millisecond), shared.URL())
	timings.m["cluster start (etcd and kube-apiserver, to /readyz 200)"] = took.Round(10 * time.Millisecond).String()
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "shared cluster logs:\n%s", shared.LogTail(30))
	}
	if err := shared.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: stopping the shared cluster: %v\n", err)
		return 1
	}
	if left := shared.Processes(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: processes of the shared cluster left after Stop: %v\n", left)
		return 1
	}
	if *update {
		if err := writeTimings(); err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
			return 1
		}
	}
	return code
}

// startCluster starts a cluster of the test's own, with extra apiserver
// flags, and stops it when the test ends (printing its logs if the test
// failed).
func startCluster(t *testing.T, apiserverFlags ...string) *cluster.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := cluster.Start(ctx, cluster.Options{Binaries: kubeBin, APIServerFlags: apiserverFlags})
	if err != nil {
		t.Fatalf("starting a cluster with %q: %v", apiserverFlags, err)
	}
	t.Logf("dedicated cluster %q ready in %v", apiserverFlags, time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cluster logs:\n%s", c.LogTail(40))
		}
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the cluster: %v", err)
		}
		if left := c.Processes(); len(left) > 0 {
			t.Errorf("processes left after Stop: %v", left)
		}
	})
	return c
}
