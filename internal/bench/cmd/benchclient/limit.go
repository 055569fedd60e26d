//go:build !clientgo

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/internal/bench/result"
	"github.com/listwatch/listwatch/internal/wire"
)

// limitThroughput is the reference for watch throughput: the same watch
// bytes, decoded into typed objects by listwatch's wire decoder in a tight
// loop, with no FIFO, cache or handler. It measures the rate twice: reading
// from the connection as the libraries do, and from memory (the bytes read
// whole first), which is the decoder alone.
func limitThroughput(ctx context.Context, c config, info serverInfo, r *result.Run) error {
	if info.Events == 0 {
		return fmt.Errorf("the server has no events to replay (-events)")
	}
	r.Events = info.Events
	r.Options = []string{"content=" + c.content, "internal/wire decoder, no pipeline"}
	if c.sharing {
		// The limit of listwatch with WithSharing is a decoder that
		// shares too: it skips the parts it has met before.
		r.Options = append(r.Options, "WithSharedParts")
	}
	if c.decodeWorkers > 1 {
		r.Options = append(r.Options, "one decode goroutine (not -decode-workers)")
	}
	var decode func(io.Reader) (int, error)
	var warm func(io.Reader) error
	switch info.Resource {
	case "pods":
		decode, warm = decodeLoop[*corev1.Pod](c.sharing, c.content, corev1.SchemeGroupVersion.WithKind("Pod"), info.Events)
	case "configmaps":
		decode, warm = decodeLoop[*corev1.ConfigMap](c.sharing, c.content, corev1.SchemeGroupVersion.WithKind("ConfigMap"), info.Events)
	default:
		return fmt.Errorf("unknown resource %q", info.Resource)
	}

	// The list first, untimed, as an informer's sync decodes it before
	// its watch: the decoder's table of strings then holds the objects'
	// names, labels and images, as listwatch's does when its watch
	// begins, and neither pays for copying them in the timed part.
	if err := list(ctx, c, info, warm); err != nil {
		return err
	}

	// From the connection.
	body, err := openWatch(ctx, c, info, false)
	if err != nil {
		return err
	}
	stopProfile, err := profile(c)
	if err != nil {
		return err
	}
	start, use := time.Now(), rusage()
	if err := post(ctx, c.server, "/bench/go"); err != nil {
		return err
	}
	n, err := decode(body)
	elapsed := time.Since(start)
	use.measure(r)
	stopProfile()
	body.Close()
	if err != nil {
		return fmt.Errorf("after %d events: %w", n, err)
	}
	r.EventsPerSecond = float64(n) / elapsed.Seconds()

	// From memory: the server closes the stream after the replay.
	body, err = openWatch(ctx, c, info, true)
	if err != nil {
		return err
	}
	all, err := io.ReadAll(body)
	body.Close()
	if err != nil {
		return err
	}
	start = time.Now()
	n, err = decode(bytes.NewReader(all))
	elapsed = time.Since(start)
	if err != nil {
		return fmt.Errorf("from memory, after %d events: %w", n, err)
	}
	r.InMemoryEventsPerSecond = float64(n) / elapsed.Seconds()
	r.PeakRSSBytes = peakRSS()
	return nil
}

// limitClient reads the limit's watch with the read buffer listwatch's
// transport has per connection (internal/rest: 64 KiB; net/http's default
// is 4 KiB), so that the two make as many reads from the socket: with 4 KiB
// the protobuf limit made nine times as many (75k against 8.5k for 100k
// events, counted with strace) and used 4-12% more CPU.
var limitClient = &http.Client{Transport: &http.Transport{ReadBufferSize: 64 << 10}}

// openWatch opens the watch from the list's resourceVersion, as an
// informer's first watch does.
func openWatch(ctx context.Context, c config, info serverInfo, closeAfterReplay bool) (io.ReadCloser, error) {
	q := url.Values{"watch": {"1"}, "resourceVersion": {info.ListRV}, "allowWatchBookmarks": {"true"}}
	if closeAfterReplay {
		q.Set("benchClose", "1")
	}
	return get(ctx, c, "/api/v1/"+info.Resource+"?"+q.Encode())
}

// list reads the whole list of the objects with decode.
func list(ctx context.Context, c config, info serverInfo, decode func(io.Reader) error) error {
	body, err := get(ctx, c, "/api/v1/"+info.Resource)
	if err != nil {
		return err
	}
	defer body.Close()
	if err := decode(body); err != nil {
		return fmt.Errorf("list: %w", err)
	}
	return nil
}

// get sends a GET of path, asking for c's content type, and returns the
// body of a 200.
func get(ctx context.Context, c config, path string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.server+path, nil)
	if err != nil {
		return nil, err
	}
	if c.content == "protobuf" {
		req.Header.Set("Accept", "application/vnd.kubernetes.protobuf")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	resp, err := limitClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return resp.Body, nil
}

// decodeLoop returns a function that decodes want MODIFIED events of type
// T from a watch stream and returns how many it decoded, and one that
// decodes a list with the same codec (sharing identical parts with
// sharing, as listwatch's WithSharing does).
func decodeLoop[T runtime.Object](sharing bool, content string, gvk schema.GroupVersionKind, want int) (decode func(io.Reader) (int, error), decodeList func(io.Reader) error) {
	var opts []wire.CodecOption
	if sharing {
		opts = append(opts, wire.WithSharedParts())
	}
	codec, err := wire.TypedCodec[T](gvk, opts...)
	decodeList = func(r io.Reader) error {
		if err != nil {
			return err
		}
		discard := func(T) error { return nil }
		if content == "protobuf" {
			_, err := wire.DecodeProtobufList(r, codec, 0, discard)
			return err
		}
		_, err := wire.DecodeJSONList(r, codec, 0, discard)
		return err
	}
	return func(r io.Reader) (int, error) {
		if err != nil {
			return 0, err
		}
		var next func() (wire.Event[T], error)
		if content == "protobuf" {
			next = wire.NewProtobufWatchDecoder(r, codec, 0).Next
		} else {
			next = wire.NewJSONWatchDecoder(r, codec, 0).Next
		}
		for n := 0; n < want; n++ {
			ev, err := next()
			if err != nil {
				return n, err
			}
			if ev.Type != wire.Modified {
				return n, fmt.Errorf("event %d is %s, want MODIFIED", n, ev.Type)
			}
		}
		return want, nil
	}, decodeList
}
