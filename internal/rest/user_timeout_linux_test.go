//go:build linux

package rest

import (
	"context"
	"math"
	"net"
	"syscall"
	"testing"
	"time"
)

// The transport's connections carry TCP_USER_TIMEOUT and keepalive, so that
// a half-open HTTP/1.1 connection fails in the kernel. (A user-space proxy
// cannot fake a dead peer at the TCP level, so the options are checked
// instead.)
func TestDialerSetsTCPOptions(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	tests := []struct {
		name          string
		cfg           Config
		wantUserTO    int // milliseconds; 0: unset
		wantKeepAlive bool
		wantIdle      int // seconds
	}{
		{"defaults", Config{}, int(DefaultTCPUserTimeout / time.Millisecond), true, int(DefaultDialKeepAlive / time.Second)},
		{"custom", Config{TCPUserTimeout: 1500 * time.Millisecond, DialKeepAlive: 2 * time.Second}, 1500, true, 2},
		{"disabled", Config{TCPUserTimeout: -1, DialKeepAlive: -1}, 0, false, 0},
		// Under a millisecond is rounded up, not down to 0 (the kernel's
		// default, which would switch it off); past the kernel's int
		// range, as long as it goes (an overflow failed every dial, or set
		// hours instead of weeks); keepalive within what Linux takes.
		{"a microsecond", Config{TCPUserTimeout: time.Microsecond}, 1, true, int(DefaultDialKeepAlive / time.Second)},
		{"30 days", Config{TCPUserTimeout: 30 * 24 * time.Hour, DialKeepAlive: 10 * time.Hour}, math.MaxInt32, true, 32767},
		{"for ever", Config{TCPUserTimeout: math.MaxInt64, DialKeepAlive: math.MaxInt64}, math.MaxInt32, true, 32767},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg.withDefaults()
			tr, err := newTransport(&cfg, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			conn, err := tr.DialContext(context.Background(), "tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			raw, err := conn.(*net.TCPConn).SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			var userTO, keepAlive, idle int
			var errs [3]error
			if err := raw.Control(func(fd uintptr) {
				userTO, errs[0] = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpUserTimeout)
				keepAlive, errs[1] = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE)
				idle, errs[2] = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE)
			}); err != nil {
				t.Fatal(err)
			}
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			if userTO != tt.wantUserTO {
				t.Errorf("TCP_USER_TIMEOUT = %d ms, want %d", userTO, tt.wantUserTO)
			}
			if (keepAlive != 0) != tt.wantKeepAlive {
				t.Errorf("SO_KEEPALIVE = %d, want %v", keepAlive, tt.wantKeepAlive)
			}
			if tt.wantKeepAlive && idle != tt.wantIdle {
				t.Errorf("TCP_KEEPIDLE = %d s, want %d", idle, tt.wantIdle)
			}
		})
	}
}
