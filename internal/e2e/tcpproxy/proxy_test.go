package tcpproxy_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/listwatch/listwatch/internal/e2e/tcpproxy"
)

// echoServer answers each line with the same line until the client closes.
// It stops, and waits for its goroutines, at the end of the test.
func echoServer(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			})
		}
	})
	tb.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// roundTrip sends line and reads the echo, failing after timeout.
func roundTrip(c net.Conn, r *bufio.Reader, line string, timeout time.Duration) (string, error) {
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return "", err
	}
	got, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	return got[:len(got)-1], nil
}

func dial(t *testing.T, p *tcpproxy.Proxy) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

func newProxy(t *testing.T) *tcpproxy.Proxy {
	t.Helper()
	p, err := tcpproxy.New(echoServer(t))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p
}

func TestForwards(t *testing.T) {
	p := newProxy(t)
	c, r := dial(t, p)
	got, err := roundTrip(c, r, "hello", 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, "hello", got)
	require.Equal(t, 1, p.Accepted())
	require.Equal(t, 1, p.Open())
}

func TestCutAllResets(t *testing.T) {
	p := newProxy(t)
	c, r := dial(t, p)
	_, err := roundTrip(c, r, "one", 5*time.Second)
	require.NoError(t, err)

	p.CutAll()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = r.ReadString('\n')
	require.Error(t, err)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the read timed out instead of seeing the cut: %v", err)

	// New connections still work.
	c2, r2 := dial(t, p)
	got, err := roundTrip(c2, r2, "two", 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, "two", got)
}

func TestStallAndResume(t *testing.T) {
	p := newProxy(t)
	c, r := dial(t, p)
	_, err := roundTrip(c, r, "before", 5*time.Second)
	require.NoError(t, err)

	p.Stall()
	_, err = roundTrip(c, r, "during", 300*time.Millisecond)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "a stalled connection must stay silent and open")

	// A connection opened while stalled is held too.
	c2, r2 := dial(t, p)
	_, err = roundTrip(c2, r2, "new", 300*time.Millisecond)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)

	p.Resume()
	require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
	got, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "during\n", got, "bytes held during the stall arrive after Resume")
	require.NoError(t, c2.SetDeadline(time.Now().Add(5*time.Second)))
	got, err = r2.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "new\n", got)
}

func TestBlackHole(t *testing.T) {
	p := newProxy(t)
	p.BlackHole()
	c, r := dial(t, p)
	_, err := roundTrip(c, r, "lost", 300*time.Millisecond)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)

	p.Resume()
	_, err = roundTrip(c, r, "still lost", 300*time.Millisecond)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "a black-holed connection stays black-holed")
	c2, r2 := dial(t, p)
	got, err := roundTrip(c2, r2, "found", 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, "found", got)

	p.CutAll()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = r.ReadString('\n')
	require.Error(t, err)
	require.NotErrorIs(t, err, os.ErrDeadlineExceeded)
}

func TestCloseEndsConnections(t *testing.T) {
	p, err := tcpproxy.New(echoServer(t))
	require.NoError(t, err)
	c, r := dial(t, p)
	_, err = roundTrip(c, r, "x", 5*time.Second)
	require.NoError(t, err)
	p.Stall()
	require.NoError(t, p.Close()) // returns although the link is stalled
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = r.ReadString('\n')
	require.Error(t, err)
	require.NotErrorIs(t, err, os.ErrDeadlineExceeded)
	_, err = net.Dial("tcp", p.Addr())
	require.Error(t, err, "the proxy no longer listens")
}

func Example() {
	// A target: an echo server.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_, _ = io.Copy(c, c)
		c.Close()
	}()
	defer ln.Close()

	p, _ := tcpproxy.New(ln.Addr().String())
	defer p.Close()
	c, _ := net.Dial("tcp", p.Addr())
	fmt.Fprintln(c, "through the proxy")
	line, _ := bufio.NewReader(c).ReadString('\n')
	fmt.Print(line)
	p.CutAll()
	_, err := c.Read(make([]byte, 1))
	fmt.Println("after CutAll:", err != nil)
	// Output:
	// through the proxy
	// after CutAll: true
}
