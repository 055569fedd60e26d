package apisim_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/internal/apisim"
)

// countFrames reads a watch stream until n events (JSON lines or protobuf
// frames) arrived, without decoding them: the measure is the server's.
func countFrames(b *testing.B, body io.Reader, n int, proto bool) {
	buf := make([]byte, 256<<10)
	if !proto {
		for seen := 0; seen < n; {
			k, err := body.Read(buf)
			seen += bytes.Count(buf[:k], []byte{'\n'})
			if err != nil && seen < n {
				b.Fatalf("stream ended after %d of %d events: %v", seen, n, err)
			}
		}
		return
	}
	var head [4]byte
	for range n {
		if _, err := io.ReadFull(body, head[:]); err != nil {
			b.Fatal(err)
		}
		size := int(binary.BigEndian.Uint32(head[:]))
		if size > len(buf) {
			buf = make([]byte, size)
		}
		if _, err := io.ReadFull(body, buf[:size]); err != nil {
			b.Fatal(err)
		}
	}
}

func openBenchWatch(b *testing.B, s *apisim.Server, ctx context.Context, rv string, proto bool) io.ReadCloser {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/api/v1/configmaps?watch=1&resourceVersion="+rv, nil)
	if err != nil {
		b.Fatal(err)
	}
	if proto {
		req.Header.Set("Accept", "application/vnd.kubernetes.protobuf")
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		b.Fatal(err)
	}
	return resp.Body
}

// BenchmarkWatchThroughput measures how many small events (a ~150-byte
// config map) per second one client reads from a watch over real HTTP on
// loopback.
//
//   - replay: the events come from the history (a watch resuming from an
//     old resourceVersion): the serving path alone.
//   - live: a writer updates objects through the Go API while the client
//     watches: write path, fan-out and serving together.
func BenchmarkWatchThroughput(b *testing.B) {
	for _, proto := range []bool{false, true} {
		name := "json"
		if proto {
			name = "protobuf"
		}
		b.Run("replay/"+name, func(b *testing.B) { benchReplay(b, proto) })
		b.Run("live/"+name, func(b *testing.B) { benchLive(b, proto) })
	}
}

func benchReplay(b *testing.B, proto bool) {
	const window = 100_000
	s := apisim.New(apisim.WithResources(apisim.ConfigMaps()), apisim.WithHistorySize(window), apisim.WithBookmarkInterval(0))
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	cms := apisim.Of[*corev1.ConfigMap](s, apisim.ConfigMaps())
	start := s.ResourceVersion()
	for i := range window {
		if _, err := cms.Create(apisim.MakeConfigMap("default", "cm-"+strconv.Itoa(i), 16)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	began := time.Now()
	for left := b.N; left > 0; left -= window {
		ctx, cancel := context.WithCancel(context.Background())
		body := openBenchWatch(b, s, ctx, start, proto)
		countFrames(b, body, min(left, window), proto)
		cancel()
		body.Close()
	}
	b.ReportMetric(float64(b.N)/time.Since(began).Seconds(), "events/s")
}

func benchLive(b *testing.B, proto bool) {
	s := apisim.New(apisim.WithResources(apisim.ConfigMaps()), apisim.WithWatchBuffer(1<<16), apisim.WithBookmarkInterval(0))
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	cms := apisim.Of[*corev1.ConfigMap](s, apisim.ConfigMaps())
	const objects = 100
	var live []*corev1.ConfigMap
	for i := range objects {
		cm, err := cms.Create(apisim.MakeConfigMap("default", "cm-"+strconv.Itoa(i), 16))
		if err != nil {
			b.Fatal(err)
		}
		live = append(live, cm)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := openBenchWatch(b, s, ctx, s.ResourceVersion(), proto)
	defer body.Close()

	b.ReportAllocs()
	b.ResetTimer()
	began := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range b.N {
			cm := live[i%objects]
			cm.Data["data"] = strconv.Itoa(i)
			cm.ResourceVersion = "" // unconditional update
			if _, err := cms.Update(cm); err != nil {
				b.Error(err)
				return
			}
		}
	}()
	countFrames(b, body, b.N, proto)
	b.ReportMetric(float64(b.N)/time.Since(began).Seconds(), "events/s")
	<-done
}
