package rest

import (
	"testing"
	"time"
)

// HTTP/2 health checks shorter than MinHTTP2PingInterval are raised to it:
// each PING's answer is a frame, so a read-idle time of a nanosecond sent
// PINGs back to back (a core's worth of CPU on an idle watch). Zero still
// means the default and negative still means off.
func TestHTTP2PingSettingsHaveAFloor(t *testing.T) {
	for _, tc := range []struct {
		in, want time.Duration
	}{
		{time.Nanosecond, MinHTTP2PingInterval},
		{time.Millisecond, MinHTTP2PingInterval},
		{0, DefaultHTTP2ReadIdleTimeout},
		{-1, 0},
		{time.Minute, time.Minute},
	} {
		c := Config{HTTP2ReadIdleTimeout: tc.in, HTTP2PingTimeout: tc.in}.withDefaults()
		if c.HTTP2ReadIdleTimeout != tc.want || c.HTTP2PingTimeout != tc.want {
			t.Errorf("%v: read idle %v, ping timeout %v; want %v", tc.in, c.HTTP2ReadIdleTimeout, c.HTTP2PingTimeout, tc.want)
		}
	}
}
