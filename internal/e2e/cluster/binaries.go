package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// EnvKubeBin names the environment variable that points at a folder holding
// the kube-apiserver and etcd executables.
const EnvKubeBin = "LISTWATCH_KUBEBIN"

// LocateBinaries returns the folder holding kube-apiserver and etcd: the one
// named by $LISTWATCH_KUBEBIN when set, otherwise the folder printed by the
// build script buildScript (internal/e2e/kubebin/build.sh), which builds the
// binaries when its cache lacks them (its progress goes to stderr). The
// build runs in a process group of its own, killed whole when ctx ends. The
// error says what to do when neither works.
func LocateBinaries(ctx context.Context, buildScript string) (string, error) {
	if dir := os.Getenv(EnvKubeBin); dir != "" {
		if err := checkBinaries(dir); err != nil {
			return "", fmt.Errorf("$%s=%s: %w", EnvKubeBin, dir, err)
		}
		return dir, nil
	}
	script, err := filepath.Abs(buildScript)
	if err != nil {
		return "", fmt.Errorf("locating the kube-apiserver build script: %w", err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, script)
	cmd.Stdout, cmd.Stderr = &stdout, io.MultiWriter(&stderr, os.Stderr)
	// The script's go build goes on after the script is killed: kill
	// its whole group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building kube-apiserver and etcd with %s (set $%s to a folder holding both to skip the build): %w\n%s",
			script, EnvKubeBin, err, tail(stderr.String(), 20))
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	dir := strings.TrimSpace(lines[len(lines)-1])
	if err := checkBinaries(dir); err != nil {
		return "", fmt.Errorf("%s printed %q: %w", script, dir, err)
	}
	return dir, nil
}

// checkBinaries reports whether dir holds both executables.
func checkBinaries(dir string) error {
	for _, name := range []string{"kube-apiserver", "etcd"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("no %s executable: %w", name, err)
		}
		if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return fmt.Errorf("%s is not an executable file", filepath.Join(dir, name))
		}
	}
	return nil
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
