//go:build unix

package rest

import (
	"syscall"
	"testing"
)

// mkfifo makes a named pipe at path, for tests of what blocks on one.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
}
