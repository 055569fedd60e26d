//go:build unix

package rest

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mkfifo makes a named pipe at path, for tests of what blocks on one.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A watched file (the token, the CA, a client certificate) that becomes a
// named pipe between its stat and its open is not waited on: a rotation
// by rename that races can do that, and the open, under the lock that
// every request takes, waited for a writer for ever, and with it every
// request of the Client, whatever its context.
func TestWatchedFileThatBecomesAPipeIsNotWaitedOn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte("aaaa"), 0o600); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	mkfifo(t, path)
	read := make(chan error, 1)
	go func() {
		_, err := readWatchedFile(fileStamp{info}, path)
		read <- err
	}()
	select {
	case err := <-read:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("reading a named pipe stamped as a regular file: %v, want not a regular file", err)
		}
	case <-time.After(5 * time.Second): // a blocked open: synctest cannot see it
		t.Error("reading a named pipe stamped as a regular file waits for a writer")
		if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close() // lets the open go on
		}
		<-read
	}
}
