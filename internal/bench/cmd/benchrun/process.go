package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/listwatch/listwatch/internal/bench/result"
)

// server is a running benchserver process.
type server struct {
	cmd  *exec.Cmd
	url  string
	done chan error
}

// startServer starts a benchserver and waits until it listens (it encodes
// every object first).
func startServer(ctx context.Context, bin string, args serverArgs) (*server, error) {
	cmd := exec.Command(filepath.Join(bin, "benchserver"), args.flags()...)
	cmd.Stderr = os.Stderr
	cmd.Env = clientEnv(nil)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, done: make(chan error, 1)}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		for sc.Scan() {
		}
		s.done <- cmd.Wait()
	}()
	select {
	case l, ok := <-line:
		url, found := strings.CutPrefix(l, "listening on ")
		if !ok || !found {
			s.stop()
			return nil, fmt.Errorf("benchserver did not start (said %q)", l)
		}
		s.url = url
		return s, nil
	case <-time.After(5 * time.Minute):
	case <-ctx.Done():
	}
	s.stop()
	return nil, fmt.Errorf("benchserver did not start in time")
}

// stop ends the server and waits for it.
func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// env is what every client and server gets: this process's environment
// without client-go feature-gate overrides (the comparison is of client-go's
// defaults) and with GOGC and GOMAXPROCS set the same for everyone.
type env struct {
	gogc, gomaxprocs string
	listwatchArgs    []string // appended to listwatch's benchclient flags
	baseline         bool     // client-go's arms run benchclient-baseline, a listwatch
}

// clientEnv returns the environment for a child process: the caller's,
// without what would change a library's defaults or the runtime's
// unrecorded (client-go's feature gates and its mutation and watch-list
// detectors; GOGC, GOMAXPROCS, GOMEMLIMIT, GODEBUG).
func clientEnv(e *env) []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "KUBE_FEATURE_") || strings.HasPrefix(kv, "KUBE_CACHE_MUTATION_DETECTOR=") ||
			strings.HasPrefix(kv, "KUBE_WATCHLIST_INCONSISTENCY_DETECTOR=") ||
			strings.HasPrefix(kv, "GOGC=") || strings.HasPrefix(kv, "GOMAXPROCS=") ||
			strings.HasPrefix(kv, "GOMEMLIMIT=") || strings.HasPrefix(kv, "GODEBUG=") {
			continue
		}
		out = append(out, kv)
	}
	if e != nil && e.gogc != "" {
		out = append(out, "GOGC="+e.gogc)
	}
	if e != nil && e.gomaxprocs != "" {
		out = append(out, "GOMAXPROCS="+e.gomaxprocs)
	}
	return out
}

// runClient runs one benchclient and parses its result line.
func runClient(ctx context.Context, bin string, e *env, url string, a arm, extra ...string) (result.Run, error) {
	exe, lib := "benchclient-listwatch", a.lib
	if a.lib == "client-go" {
		exe = "benchclient-client-go"
		if e != nil && e.baseline {
			exe, lib = "benchclient-baseline", "listwatch"
		}
	}
	args := append([]string{"-lib=" + lib, "-server=" + url}, a.args...)
	args = append(args, extra...)
	if (lib == "listwatch" || lib == "limit") && e != nil {
		// The limit decodes as listwatch does (-sharing), so that
		// of_limit divides like by like.
		args = append(args, e.listwatchArgs...)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, exe), args...)
	cmd.Env = clientEnv(e)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return result.Run{}, fmt.Errorf("%s %s: %v\n%s", exe, strings.Join(args, " "), err, lastLines(stderr.String(), 20))
	}
	var r result.Run
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		return result.Run{}, fmt.Errorf("%s: no result line: %v\n%s", exe, err, lastLines(stdout.String()+stderr.String(), 20))
	}
	return r, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
