package rest

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// A gzip bomb: a few KiB on the wire, much more once decompressed. Go's
// transport decompresses transparently; LimitReader bounds what comes out.
func TestLimitReaderBoundsDecompressedBody(t *testing.T) {
	var compressed bytes.Buffer
	zw := gzip.NewWriter(&compressed)
	if _, err := zw.Write(bytes.Repeat([]byte("a"), 8<<20)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") != "gzip" {
			t.Errorf("Accept-Encoding = %q, want gzip added by the transport", r.Header.Get("Accept-Encoding"))
		}
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(compressed.Bytes())
	}))
	defer srv.Close()

	c, err := NewClient(&Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, c.URL("/api/v1/pods", nil).String(), nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if !resp.Uncompressed {
		t.Error("the transport did not decompress the body")
	}
	n, err := io.Copy(io.Discard, LimitReader(resp.Body, 1<<20))
	if !errors.Is(err, ErrBodyTooLarge) || n != 1<<20 {
		t.Errorf("read %d bytes, err %v; want %d bytes and ErrBodyTooLarge", n, err, 1<<20)
	}
}
