package demo

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/listwatch/listwatch/internal/apisim"
)

// noKubeconfig makes the environment one without any kubeconfig.
func noKubeconfig(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", dir)
}

// writeKubeconfig writes a kubeconfig whose current context points at
// server, and returns its path.
func writeKubeconfig(t *testing.T, server string) string {
	path := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: %s
contexts:
- name: test
  context:
    cluster: test
    user: test
users:
- name: test
  user: {}
current-context: test
`, server), 0o600))
	return path
}

func TestConnectWithoutKubeconfigStartsTheSimulator(t *testing.T) {
	noKubeconfig(t)
	var out bytes.Buffer
	c, err := Connect(t.Context(), Flags{SimObjects: 50}, &out, Pods(), Widgets())
	require.NoError(t, err)
	defer c.Close()
	assert.True(t, c.Simulated)
	assert.True(t, strings.HasPrefix(out.String(), "simulator (no kubeconfig found): "), out.String())
	assert.Contains(t, out.String(), "50 pods, 5 widgets in 10 namespaces")
	n, err := c.sim.Len(apisim.Pods())
	require.NoError(t, err)
	assert.InDelta(t, 50, n, 5)
}

func TestConnectToAKubeconfigsCluster(t *testing.T) {
	sim := apisim.New(apisim.WithResources(apisim.Pods()))
	require.NoError(t, sim.Start())
	defer sim.Close()
	path := writeKubeconfig(t, sim.URL())

	var out bytes.Buffer
	c, err := Connect(t.Context(), Flags{Kubeconfig: path}, &out, Pods())
	require.NoError(t, err)
	defer c.Close()
	assert.False(t, c.Simulated)
	assert.Equal(t, sim.URL(), c.Config.Host)
	assert.Equal(t, "cluster: "+sim.URL()+" (the kubeconfig's current context, Kubernetes v1.37.2); this example only lists and watches, it changes nothing\n", out.String())
	n, err := sim.Len(apisim.Pods())
	require.NoError(t, err)
	assert.Zero(t, n, "nothing is written to a real cluster")

	// The same through $KUBECONFIG.
	t.Setenv("KUBECONFIG", path)
	c2, err := Connect(t.Context(), Flags{}, &out, Pods())
	require.NoError(t, err)
	c2.Close()
	assert.False(t, c2.Simulated)
}

func TestConnectToAnUnreachableClusterFails(t *testing.T) {
	// A port nobody listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	path := writeKubeconfig(t, "http://"+addr)

	var out bytes.Buffer
	_, err = Connect(t.Context(), Flags{Kubeconfig: path}, &out, Pods())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot reach the cluster at http://"+addr)
	assert.Empty(t, out.String(), "no fallback to the simulator")
}

// A kubeconfig server that carries user info (which the client refuses)
// is named without it: a password, or a user name that is a token.
func TestConnectNamesTheServerWithoutItsUserInfo(t *testing.T) {
	for _, userinfo := range []string{"admin:s3cret", "s3cret"} {
		path := writeKubeconfig(t, "https://"+userinfo+"@127.0.0.1:1")
		_, err := Connect(t.Context(), Flags{Kubeconfig: path}, io.Discard, Pods())
		require.Error(t, err)
		assert.NotContains(t, err.Error(), "s3cret")
		assert.Contains(t, err.Error(), "cannot reach the cluster at https://xxxxx@127.0.0.1:1")
	}
}

// Ctrl-C while the cluster has not answered yet is a stop, not the
// cluster's fault: ErrStopped, which Main ends cleanly.
func TestConnectStoppedBeforeTheClusterAnswers(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	quiet := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cancel() // the Ctrl-C, while Connect waits for the answer
		<-r.Context().Done()
	}))
	defer quiet.Close()
	path := writeKubeconfig(t, quiet.URL)
	var out bytes.Buffer
	_, err := Connect(ctx, Flags{Kubeconfig: path}, &out, Pods())
	assert.ErrorIs(t, err, ErrStopped)
	assert.NotContains(t, err.Error(), "cannot reach")
}

// Ctrl-C while the simulator is being filled is a stop too. Before, the
// fill went on to its end (34 s for -sim-objects 200000).
func TestConnectStoppedWhileTheSimulatorIsFilled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var out bytes.Buffer
	_, err := Connect(ctx, Flags{Sim: true, SimObjects: 200_000}, &out, Pods())
	assert.ErrorIs(t, err, ErrStopped)
}

// The simulator is filled in chunks: all its objects, each name once
// (Populate refuses a name twice).
func TestSimulatorFilledInChunks(t *testing.T) {
	var out bytes.Buffer
	c, err := Connect(t.Context(), Flags{Sim: true, SimObjects: 2500, SimChurn: 0.01}, &out, Pods())
	require.NoError(t, err)
	defer c.Close()
	n, err := c.sim.Len(apisim.Pods())
	require.NoError(t, err)
	assert.InDelta(t, 2500, n, 1)
}

func TestConnectToAMissingKubeconfigFails(t *testing.T) {
	noKubeconfig(t)
	for _, f := range []Flags{
		{Kubeconfig: filepath.Join(t.TempDir(), "nope")},
		{Context: "prod"},
	} {
		var out bytes.Buffer
		_, err := Connect(t.Context(), f, &out, Pods())
		require.Error(t, err, "%+v", f)
		assert.Contains(t, err.Error(), "use -sim")
		assert.Empty(t, out.String())
	}
}

func TestSimForcedDespiteAKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", writeKubeconfig(t, "http://127.0.0.1:1"))
	var out bytes.Buffer
	c, err := Connect(t.Context(), Flags{Sim: true, SimObjects: 10}, &out, ConfigMaps())
	require.NoError(t, err)
	defer c.Close()
	assert.True(t, c.Simulated)
	assert.True(t, strings.HasPrefix(out.String(), "simulator (-sim): "), out.String())
}

// -sim-churn takes a rate from 0.01 to 100000: NaN, infinities and others
// are a bad command line (NaN passed every check and made the simulator's
// ticker panic; 0 ran at the default 20, 1e-10 at 0.01).
func TestSimChurnIsARate(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want float64 // -1: refused
	}{
		{"20", 20}, {"0.5", 0.5}, {"0.01", 0.01}, {"1e5", 1e5},
		{"0", -1}, {"1e-10", -1}, {"2e5", -1},
		{"NaN", -1}, {"Inf", -1}, {"-Inf", -1}, {"-1", -1}, {"fast", -1},
	} {
		var f Flags
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f.Register(fs)
		err := Parse(fs, []string{"-sim-churn", tc.arg})
		switch {
		case tc.want < 0 && !errors.Is(err, ErrUsage):
			t.Errorf("-sim-churn %s: %v, want a usage error", tc.arg, err)
		case tc.want >= 0 && (err != nil || f.SimChurn != tc.want):
			t.Errorf("-sim-churn %s: %v, %v; want %v", tc.arg, f.SimChurn, err, tc.want)
		}
	}
	var f Flags
	f.Register(flag.NewFlagSet("test", flag.ContinueOnError))
	if f.SimChurn != 20 {
		t.Errorf("default %v, want 20", f.SimChurn)
	}
}

// -sim-objects takes 1 or more, -duration and -sync-timeout a duration of
// 0 or more; other values are a bad command line. Before, -sim-objects -5
// filled the simulator with 3000 pods, and a negative duration meant no
// limit, without a word.
func TestFlagsRefuseValuesTheyWouldReplace(t *testing.T) {
	for _, args := range [][]string{
		{"-sim-objects", "0"}, {"-sim-objects", "-5"}, {"-sim-objects", "many"},
		{"-duration", "-1s"}, {"-sync-timeout", "-1m"}, {"-duration", "10"},
	} {
		var f Flags
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f.Register(fs)
		if err := Parse(fs, args); !errors.Is(err, ErrUsage) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	var f Flags
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	f.Register(fs)
	if f.SimObjects != 3000 || f.SyncTimeout != time.Minute || f.Duration != 0 {
		t.Errorf("defaults %+v", f)
	}
	if err := Parse(fs, []string{"-sim-objects", "7", "-duration", "2s", "-sync-timeout", "0"}); err != nil {
		t.Fatal(err)
	}
	if f.SimObjects != 7 || f.Duration != 2*time.Second || f.SyncTimeout != 0 {
		t.Errorf("parsed %+v", f)
	}
}

// A cluster that answers /version with 403 Forbidden is reachable, and
// knows us: the example goes on, without the version.
func TestConnectWithoutLeaveToReadTheVersion(t *testing.T) {
	forbidding := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,`+
			`"message":"forbidden: User \"dev\" cannot get path \"/version\""}`)
	}))
	defer forbidding.Close()
	var out bytes.Buffer
	c, err := Connect(t.Context(), Flags{Kubeconfig: writeKubeconfig(t, forbidding.URL)}, &out, Pods())
	require.NoError(t, err)
	defer c.Close()
	assert.Contains(t, out.String(), "(the kubeconfig's current context, Kubernetes version unknown)")
}

// Each workload's size follows -sim-objects, the smallest being one object;
// a churn rate below one write per 100 s is raised to it (Connect's
// caller may not have parsed it from a flag).
func TestSimulatorSizesAndRate(t *testing.T) {
	var out bytes.Buffer
	c, err := Connect(t.Context(), Flags{Sim: true, SimObjects: 60, SimChurn: 1e-12}, &out,
		Pods(), Deployments(), ConfigMaps(), Widgets())
	require.NoError(t, err)
	defer c.Close()
	assert.Contains(t, out.String(), "with 60 pods, 6 deployments, 20 configmaps, 6 widgets in 10 namespaces, 0.01 changes/s to each\n")

	out.Reset()
	c2, err := Connect(t.Context(), Flags{Sim: true, SimObjects: 1, SimChurn: 1}, &out, Pods(), Deployments())
	require.NoError(t, err)
	defer c2.Close()
	assert.Contains(t, out.String(), "with 1 pods, 1 deployments in 10 namespaces")
}

// A kubeconfig that exists but cannot be used is an error: the simulator
// is only for when there is no kubeconfig at all.
func TestConnectWithABrokenKubeconfigFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.WriteFile(path, []byte("apiVersion: v1\nkind: Config\ncurrent-context: [unclosed\n"), 0o600))
	t.Setenv("KUBECONFIG", path)
	var out bytes.Buffer
	c, err := Connect(t.Context(), Flags{}, &out, Pods())
	if err == nil {
		c.Close()
	}
	assert.Error(t, err)
	assert.Empty(t, out.String(), "no fallback to the simulator")
}
