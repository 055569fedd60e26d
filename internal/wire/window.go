package wire

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"unsafe"

	jsoniter "github.com/json-iterator/go"
)

// window is the reader under a streaming JSON decoder. It counts the bytes
// handed to the decoder since the last reset and refuses to hand out more
// than limit, so one event (or one list item) cannot make the decoder hold
// unbounded memory. The decoder reads ahead by up to readBufferSize, so an
// over-limit value is caught after at most limit plus one read buffer.
//
// It also records why reading stopped, because json-iterator reports a
// truncated value as a syntax error.
type window struct {
	r        io.Reader
	it       *jsoniter.Iterator // the decoder reading from this window
	limit    int64
	n        int64 // bytes handed out since reset
	total    int64 // bytes handed out since the start
	pending  error // an error that came with data, returned on the next call
	eof      bool  // the source ended (io.EOF with no data)
	tooLarge bool  // the limit was hit
	readErr  error // any other error from the source
	idle     int   // consecutive (0, nil) reads
}

func (w *window) reset() { w.n = 0 }

// Read implements io.Reader.
func (w *window) Read(p []byte) (int, error) {
	if w.pending != nil {
		return 0, w.fail(w.note(w.pending))
	}
	if w.n >= w.limit {
		w.tooLarge = w.tooLarge || w.clean()
		return 0, w.fail(errLimit)
	}
	if rem := w.limit - w.n; int64(len(p)) > rem {
		p = p[:rem]
	}
	n, err := w.r.Read(p)
	w.n += int64(n)
	w.total += int64(n)
	if n > 0 {
		w.idle = 0
		w.pending = err
		return n, nil
	}
	if err == nil {
		// json-iterator retries (0, nil) forever; a reader that keeps
		// returning it is broken.
		if w.idle++; w.idle <= 100 {
			return 0, nil
		}
		err = io.ErrNoProgress
	}
	return 0, w.fail(w.note(err))
}

// fail hands json-iterator err, the end of what it will read, and empties
// its buffer (head and tail 0), all of which it has consumed, or it would
// not be reading. Capturing a value (SkipAndReturnBytes), json-iterator
// appends its buffer, from where the capture stands to the tail, to what it
// captured at every read attempt, and once the stream has failed it
// attempts again at every level of nesting it unwinds: a value cut 10,000
// levels deep made 32 KiB of input into 1.5 GB of allocations. Emptied,
// the buffer adds nothing after the first.
func (w *window) fail(err error) error {
	if w.it != nil && iterFields.ok {
		p := unsafe.Pointer(w.it)
		*(*int)(unsafe.Add(p, iterFields.head)) = 0
		*(*int)(unsafe.Add(p, iterFields.tail)) = 0
	}
	return err
}

// note records why the source stopped, unless the decoder had already
// found bad bytes: json-iterator keeps reading after a syntax error, and
// the syntax error is the one to report.
func (w *window) note(err error) error {
	switch {
	case err == nil || !w.clean():
		// nothing to note, or a syntax error already is the news
	case err == io.EOF:
		w.eof = true
	default:
		if w.readErr == nil {
			w.readErr = err
		}
	}
	return err
}

// clean reports whether the decoder has not met an error yet.
func (w *window) clean() bool { return w.it == nil || w.it.Error == nil }

// errLimit is what window hands json-iterator at the limit; decoders
// translate it into ErrFrameTooLarge or ErrListTooLarge.
var errLimit = errors.New("size limit reached")

// failure explains why json-iterator stopped, in the order that is true:
// the limit, a read error, the end of the stream, or bad bytes. what says
// where ("watch event 3"); tooLarge is the sentinel for the limit.
func (w *window) failure(it *jsoniter.Iterator, what string, tooLarge error) error {
	switch {
	case w.tooLarge:
		return fmt.Errorf("%s: %w (limit %d bytes)", what, tooLarge, w.limit)
	case w.readErr != nil:
		return fmt.Errorf("%s: reading the body: %w", what, w.readErr)
	case w.eof || it.Error == io.EOF:
		return fmt.Errorf("%s: the body ended in the middle of a value: %w", what, io.ErrUnexpectedEOF)
	case it.Error != nil:
		return fmt.Errorf("%w: %s (%d bytes read): %s", ErrMalformed, what, w.total, withoutData(it.Error))
	default:
		return fmt.Errorf("%w: %s (%d bytes read)", ErrMalformed, what, w.total)
	}
}

// withoutData is a json-iterator error's text without the bytes around
// where it was found, which it quotes (", error found in #10 byte of
// ...|<bytes>|..., bigger context ...|<bytes>|..."): they may be a
// Secret's data, a token in a custom resource, and the error is logged.
// Errors that wrap others (a part decoded on its own iterator) carry their
// quotes after the first marker too. The caller says where it was found
// (the bytes read), as apimachinery's errors do without quoting data.
func withoutData(err error) string {
	s := err.Error()
	if i := strings.Index(s, ", error found in #"); i >= 0 {
		return s[:i]
	}
	return s
}
