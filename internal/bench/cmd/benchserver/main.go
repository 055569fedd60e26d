// Command benchserver serves one resource (pods or configmaps) over HTTP on
// 127.0.0.1 the way kube-apiserver does for list and watch, from bytes
// encoded once at start-up, so that it is never what a benchmark measures.
//
// It holds an initial state of -objects objects and a replay of -events
// MODIFIED events that cycle over the first -distinct objects. It serves:
//
//	GET /api/v1/<resource>?limit=&continue=        paged LIST (JSON or protobuf)
//	GET /api/v1/<resource>?watch=1&resourceVersion=RV
//	    watch: the replayed events after RV
//	GET ...?watch=1&sendInitialEvents=true&allowWatchBookmarks=true
//	    streaming list: ADDED for every object, the initial-events-end
//	    BOOKMARK, then the replay
//	GET  /bench/info    {"resource","objects","events","list_rv",...}
//	POST /bench/reset   hold the replay until the next /bench/go; zero the stats
//	POST /bench/go      release the replay on every watch, present and future
//	GET  /bench/stats   what was served since the last reset
//
// Events are written as fast as the client reads them (in 64 KB writes), or
// with -rate at a fixed number per second, each one flushed and stamped with
// the time it was written (annotation fixture.SentAnnotation) so that the
// client can compute write-to-handler latency on the same clock.
//
// The first line on stdout is "listening on URL", once every object is
// encoded. The server stops on SIGINT or SIGTERM.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/listwatch/listwatch/internal/bench/fixture"
)

func main() {
	var (
		addr     = flag.String("addr", "127.0.0.1:0", "address to listen on")
		resource = flag.String("resource", "pods", "pods or configmaps")
		objects  = flag.Int("objects", 1000, "objects in the initial state")
		events   = flag.Int("events", 0, "MODIFIED events in the replay")
		distinct = flag.Int("distinct", 1000, "how many objects the replay's events cycle over (at most -objects)")
		rate     = flag.Float64("rate", 0, "events per second, each flushed and time-stamped; 0: as fast as the client reads")
		formats  = flag.String("formats", "json,protobuf", "encodings to prepare: json, protobuf or both")
	)
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("benchserver: ")

	kind, err := fixture.KindOf(*resource)
	if err != nil {
		log.Fatal(err)
	}
	s, err := newServer(kind, *objects, *events, min(*distinct, *objects), *rate, strings.Split(*formats, ","))
	if err != nil {
		log.Fatal(err)
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: s}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	os.Stdout.Sync()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		log.Fatal(err)
	case <-ctx.Done():
	}
	// Watches never end on their own: close everything.
	srv.Close()
	<-done
}

// server is the replaying apiserver.
type server struct {
	kind     fixture.Kind
	objects  int
	events   int
	distinct int
	rate     float64
	listRV   uint64
	enc      map[bool]*encoding // by "is protobuf"

	mu    sync.Mutex
	goCh  chan struct{} // closed by /bench/go
	stats stats
}

// stats counts what was served since the last reset.
type stats struct {
	Lists         atomic.Int64
	Watches       atomic.Int64
	WatchLists    atomic.Int64
	EventsWritten atomic.Int64
}

// encoding holds every byte the server sends, in one format.
type encoding struct {
	items    [][]byte           // list items: JSON without type metadata, or protobuf messages
	bookmark []byte             // the initial-events-end BOOKMARK event
	events   []fixture.Template // one MODIFIED event per distinct object
}

func newServer(k fixture.Kind, objects, events, distinct int, rate float64, formats []string) (*server, error) {
	if objects < 1 || events < 0 || distinct < 1 {
		return nil, fmt.Errorf("need objects ≥ 1, events ≥ 0, distinct ≥ 1")
	}
	s := &server{
		kind: k, objects: objects, events: events, distinct: distinct, rate: rate,
		listRV: fixture.ListRV(objects),
		enc:    map[bool]*encoding{},
		goCh:   make(chan struct{}),
	}
	if s.listRV+uint64(events) > fixture.MaxRV {
		return nil, fmt.Errorf("too many objects and events for ten-digit resource versions")
	}
	close(s.goCh) // released until someone resets
	for _, f := range formats {
		var proto bool
		switch strings.TrimSpace(f) {
		case "json":
		case "protobuf":
			proto = true
		default:
			return nil, fmt.Errorf("unknown format %q", f)
		}
		e, err := s.encode(proto)
		if err != nil {
			return nil, err
		}
		s.enc[proto] = e
	}
	return s, nil
}

// encode prepares every object, the bookmark and the event templates.
func (s *server) encode(proto bool) (*encoding, error) {
	e := &encoding{items: make([][]byte, s.objects)}
	for i := range s.objects {
		b, err := encodeItem(s.kind.New(i), proto)
		if err != nil {
			return nil, err
		}
		e.items[i] = b
	}
	var err error
	e.bookmark, err = encodeEvent(s.kind, "BOOKMARK", bookmarkObject(s.kind, s.listRV), proto)
	if err != nil {
		return nil, err
	}
	if s.events > 0 {
		e.events = make([]fixture.Template, s.distinct)
		for i := range s.distinct {
			b, err := encodeEvent(s.kind, "MODIFIED", s.kind.Modified(i), proto)
			if err != nil {
				return nil, err
			}
			if e.events[i], err = fixture.NewTemplate(b); err != nil {
				return nil, fmt.Errorf("event template %d: %w", i, err)
			}
		}
	}
	return e, nil
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/api/v1/"+s.kind.Resource && r.Method == http.MethodGet:
		if isTrue(r.URL.Query().Get("watch")) {
			s.serveWatch(w, r)
		} else {
			s.serveList(w, r)
		}
	case r.URL.Path == "/bench/info":
		writeJSON(w, s.info())
	case r.URL.Path == "/bench/stats":
		writeJSON(w, s.snapshot())
	case r.URL.Path == "/bench/reset" && r.Method == http.MethodPost:
		s.mu.Lock()
		select {
		case <-s.goCh:
			s.goCh = make(chan struct{})
		default:
		}
		s.stats.Lists.Store(0)
		s.stats.Watches.Store(0)
		s.stats.WatchLists.Store(0)
		s.stats.EventsWritten.Store(0)
		s.mu.Unlock()
	case r.URL.Path == "/bench/go" && r.Method == http.MethodPost:
		s.mu.Lock()
		select {
		case <-s.goCh:
		default:
			close(s.goCh)
		}
		s.mu.Unlock()
	default:
		notFound(w, r)
	}
}

// Info is what /bench/info answers.
type Info struct {
	Resource string  `json:"resource"`
	Objects  int     `json:"objects"`
	Events   int     `json:"events"`
	Distinct int     `json:"distinct"`
	Rate     float64 `json:"rate"`
	ListRV   string  `json:"list_rv"`
}

func (s *server) info() Info {
	return Info{
		Resource: s.kind.Resource, Objects: s.objects, Events: s.events,
		Distinct: s.distinct, Rate: s.rate, ListRV: fmt.Sprint(s.listRV),
	}
}

func (s *server) snapshot() map[string]int64 {
	return map[string]int64{
		"lists":          s.stats.Lists.Load(),
		"watches":        s.stats.Watches.Load(),
		"watch_lists":    s.stats.WatchLists.Load(),
		"events_written": s.stats.EventsWritten.Load(),
	}
}

// released returns the channel closed once the replay may start.
func (s *server) released() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.goCh
}

func isTrue(v string) bool { return v == "1" || v == "true" }

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func notFound(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource (%s %s)","reason":"NotFound","code":404}`+"\n",
		r.Method, r.URL.Path)
}

// sleepUntil waits until t or until ctx is done; it reports whether t came.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
