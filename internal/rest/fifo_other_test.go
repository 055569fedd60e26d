//go:build !unix

package rest

import "testing"

// mkfifo skips the test: named pipes in the file system are Unix's.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	t.Skip("needs a named pipe (Unix)")
}
