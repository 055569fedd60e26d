//go:build !unix

package rest

import "os"

// openNonBlocking opens path for reading. Outside Unix, no file in the
// file system is a named pipe whose opening waits for a writer.
func openNonBlocking(path string) (*os.File, error) { return os.Open(path) }
