//go:build !linux

package rest

import (
	"syscall"
	"time"
)

// userTimeoutControl returns nil: TCP_USER_TIMEOUT exists on Linux only.
// Elsewhere TCP keepalive alone detects a dead peer.
func userTimeoutControl(time.Duration) func(network, address string, c syscall.RawConn) error {
	return nil
}
