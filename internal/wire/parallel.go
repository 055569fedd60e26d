package wire

import (
	"errors"
	"io"
	"sync"
)

// ParallelWatchDecoder decodes a watch stream on several goroutines and
// hands the events out in stream order.
//
// Decoding is most of what a client spends on a watch: a 4 KB pod costs
// tens of microseconds to decode and well under one to cut from the
// stream. So one goroutine (the reader) only cuts the stream into frames,
// a few workers decode them side by side, and Next returns them one at a
// time, in the order they were read:
//
//	body ─► reader ─► work ─► worker ─┐
//	           │       └────► worker ─┤ (each job: done)
//	           └───────► order ───────┴─► Next
//
// A fixed set of jobs circulates: the reader takes a free one, fills its
// frame and puts it on both queues; a worker decodes it; Next takes jobs
// from the order queue, waits for each to be decoded, and frees it. The
// number of jobs bounds the events read ahead, and a byte budget bounds
// the frames held at once, so a stream of huge events is read no further
// ahead than one of them (beyond the budget) at a time.
//
// Next has the contract of the sequential decoders (JSONWatchDecoder.Next),
// and is not safe for concurrent use. Close stops the goroutines and waits
// for them; the caller must first close the body, or the reader may stay
// blocked reading it.
type ParallelWatchDecoder[T any] struct {
	free  chan *frameJob[T] // jobs not in use
	work  chan *frameJob[T] // read, waiting for a worker
	order chan *frameJob[T] // read, in stream order, waiting for Next
	stop  chan struct{}
	bytes byteBudget
	wg    sync.WaitGroup
	once  sync.Once
	err   error // sticky, as in the sequential decoders

	// sequential, if set, decodes the rest of a stream that its framer
	// cannot cut (errNotOnePerLine), from event n on; the reader
	// then decodes on its own, one event after the other.
	sequential func(n int) func() (Event[T], error)
}

// frameJob is one event on its way through a ParallelWatchDecoder.
type frameJob[T any] struct {
	frame []byte // the event's bytes; reused by the next event this job carries
	n     int    // the event's number in the stream, from 1
	ev    Event[T]
	err   error
	done  chan struct{} // buffered: the worker signals, Next receives
}

// parallelBudget is how many bytes of frames a ParallelWatchDecoder holds
// at most, beyond the one frame that may exceed it on its own.
const parallelBudget = 8 << 20

// MaxParallelWorkers is the most workers a ParallelWatchDecoder starts;
// more are lowered to it. The one reader cuts an event from the stream in
// well under a microsecond and a worker decodes it in tens, so a few dozen
// workers keep the reader busy: more would only add jobs (two per worker)
// and hand-offs.
const MaxParallelWorkers = 64

// NewParallelProtobufWatchDecoder is NewProtobufWatchDecoder decoding on
// workers goroutines (at least one, at most MaxParallelWorkers).
func NewParallelProtobufWatchDecoder[T any](r io.Reader, codec *Codec[T], maxFrame, workers int) *ParallelWatchDecoder[T] {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrameBytes
	}
	src := &protobufFramer{r: r, max: maxFrame}
	return newParallel(src, workers, func() func([]byte, int) (Event[T], error) {
		return func(frame []byte, n int) (Event[T], error) {
			if !codec.SupportsProtobuf() {
				return Event[T]{}, unsupportedProtobuf(codec)
			}
			return decodeProtobufEvent(codec, frame, n)
		}
	}, nil)
}

// NewParallelJSONWatchDecoder is NewJSONWatchDecoder decoding on workers
// goroutines (at least one, at most MaxParallelWorkers).
func NewParallelJSONWatchDecoder[T any](r io.Reader, codec *Codec[T], maxFrame, workers int) *ParallelWatchDecoder[T] {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrameBytes
	}
	src := newJSONFramer(r, maxFrame)
	sequential := func(n int) func() (Event[T], error) {
		d := NewJSONWatchDecoder(src.rest(), codec, maxFrame)
		d.events = n - 1
		return d.Next
	}
	return newParallel(src, workers, func() func([]byte, int) (Event[T], error) {
		return newJSONFrameDecoder(codec).decodeFrame
	}, sequential)
}

// newParallel starts the reader and the workers; newDecoder makes each
// worker its own decode function; sequential may be nil.
func newParallel[T any](src framer, workers int, newDecoder func() func([]byte, int) (Event[T], error), sequential func(n int) func() (Event[T], error)) *ParallelWatchDecoder[T] {
	workers = min(max(workers, 1), MaxParallelWorkers)
	jobs := 2*workers + 2
	p := &ParallelWatchDecoder[T]{
		free:       make(chan *frameJob[T], jobs),
		work:       make(chan *frameJob[T], jobs),
		order:      make(chan *frameJob[T], jobs),
		stop:       make(chan struct{}),
		sequential: sequential,
	}
	p.bytes.init(parallelBudget)
	for range jobs {
		p.free <- &frameJob[T]{done: make(chan struct{}, 1)}
	}
	p.wg.Add(1 + workers)
	go func() {
		defer p.wg.Done()
		p.read(src)
	}()
	for range workers {
		go p.decode(newDecoder())
	}
	return p
}

// read is the reader goroutine: it cuts frames until the stream ends or
// the decoder is closed. The queues hold every job, so sending on them
// never blocks; only taking a free job and the byte budget wait.
func (p *ParallelWatchDecoder[T]) read(src framer) {
	for {
		var j *frameJob[T]
		select {
		case j = <-p.free:
		case <-p.stop:
			return
		}
		j.frame, j.n, j.err = src.next(j.frame)
		if j.err == errNotOnePerLine && p.sequential != nil {
			p.readSequential(j, p.sequential(j.n))
			return
		}
		if j.err != nil {
			j.frame = j.frame[:0]
			j.done <- struct{}{}
			p.order <- j
			return // the stream is over; Next reports why
		}
		if !p.bytes.acquire(len(j.frame)) {
			return
		}
		p.order <- j
		p.work <- j
	}
}

// readSequential is the reader once the stream must be decoded in order:
// it decodes each event itself, starting with job j, and queues it as
// done.
func (p *ParallelWatchDecoder[T]) readSequential(j *frameJob[T], next func() (Event[T], error)) {
	for {
		j.frame = j.frame[:0]
		ev, err := next()
		j.ev, j.err = ev, err
		j.done <- struct{}{}
		p.order <- j // j is Next's now
		if err != nil && !errors.Is(err, ErrWrongKind) {
			return
		}
		select {
		case j = <-p.free:
		case <-p.stop:
			return
		}
	}
}

// decode is a worker goroutine: it decodes frames with decodeFrame.
func (p *ParallelWatchDecoder[T]) decode(decodeFrame func([]byte, int) (Event[T], error)) {
	defer p.wg.Done()
	for {
		select {
		case j := <-p.work:
			j.ev, j.err = decodeFrame(j.frame, j.n)
			j.done <- struct{}{}
		case <-p.stop:
			return
		}
	}
}

// Next returns the next event in stream order; see JSONWatchDecoder.Next.
// After Close it returns io.ErrClosedPipe.
func (p *ParallelWatchDecoder[T]) Next() (Event[T], error) {
	if p.err != nil {
		return Event[T]{}, p.err
	}
	select {
	case <-p.stop: // first: a select would pick at random among ready cases
		p.err = io.ErrClosedPipe
		return Event[T]{}, p.err
	default:
	}
	var j *frameJob[T]
	select {
	case j = <-p.order:
	case <-p.stop:
		p.err = io.ErrClosedPipe
		return Event[T]{}, p.err
	}
	select {
	case <-j.done:
	case <-p.stop:
		p.err = io.ErrClosedPipe
		return Event[T]{}, p.err
	}
	ev, err := j.ev, j.err
	j.ev, j.err = Event[T]{}, nil
	p.bytes.release(len(j.frame))
	if cap(j.frame) > maxRetainedFrame {
		j.frame = nil
	}
	p.free <- j
	if err != nil && !errors.Is(err, ErrWrongKind) {
		p.err = err
	}
	return ev, err
}

// Close stops the reader and the workers and waits for them. Close the
// stream first: a reader blocked reading it only returns when the read
// fails. Close may be called more than once, from any goroutine.
func (p *ParallelWatchDecoder[T]) Close() {
	p.once.Do(func() {
		close(p.stop)
		p.bytes.close()
	})
	p.wg.Wait()
}

// byteBudget bounds the bytes of the frames in flight. A frame that does
// not fit waits until the others are done; a frame larger than the whole
// budget goes alone.
type byteBudget struct {
	mu     sync.Mutex
	cond   sync.Cond
	used   int
	limit  int
	closed bool
}

func (b *byteBudget) init(limit int) {
	b.limit = limit
	b.cond.L = &b.mu
}

// acquire waits until n bytes fit (or nothing else is held) and takes
// them; it returns false if the budget was closed.
func (b *byteBudget) acquire(n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.used > 0 && b.used+n > b.limit && !b.closed {
		b.cond.Wait()
	}
	if b.closed {
		return false
	}
	b.used += n
	return true
}

func (b *byteBudget) release(n int) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	b.cond.Signal()
}

func (b *byteBudget) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.cond.Broadcast()
}
