//go:build unix

package rest

import (
	"os"
	"syscall"
)

// openNonBlocking opens path for reading without waiting for a writer, as
// opening a named pipe otherwise does.
func openNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
