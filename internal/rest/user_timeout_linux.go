//go:build linux

package rest

import (
	"fmt"
	"math"
	"os"
	"strings"
	"syscall"
	"time"
)

// tcpUserTimeout is TCP_USER_TIMEOUT from linux/tcp.h (the syscall package
// does not name it).
const tcpUserTimeout = 0x12

// userTimeoutControl returns a net.Dialer Control function that sets
// TCP_USER_TIMEOUT to d on TCP sockets: data left unacknowledged for d, or
// keepalive probes left unanswered for d, make the kernel close the
// connection, so a read on a half-open connection fails instead of hanging.
// It returns nil when d is not positive.
func userTimeoutControl(d time.Duration) func(network, address string, c syscall.RawConn) error {
	if d <= 0 {
		return nil
	}
	// The kernel takes whole milliseconds in an int: round up (less than
	// one would be zero, the kernel's default) and stay within it.
	ms := d / time.Millisecond
	if d%time.Millisecond != 0 {
		ms++
	}
	ms = min(ms, math.MaxInt32)
	return func(network, _ string, c syscall.RawConn) error {
		if !strings.HasPrefix(network, "tcp") {
			return nil
		}
		var sockErr error
		if err := c.Control(func(fd uintptr) {
			sockErr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpUserTimeout, int(ms))
		}); err != nil {
			return err
		}
		if sockErr != nil {
			return fmt.Errorf("setting TCP_USER_TIMEOUT: %w", os.NewSyscallError("setsockopt", sockErr))
		}
		return nil
	}
}
