package wire

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	jsoniter "github.com/json-iterator/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// JSON is decoded with json-iterator, which reads a value straight from an
// io.Reader into a typed Go value in one pass and is several times faster
// than encoding/json (see BenchmarkJSONLibraries). It is configured the way
// k8s.io/apimachinery used it for years: field names match case-sensitively,
// unknown fields are ignored, and types with their own UnmarshalJSON
// (metav1.Time, resource.Quantity, intstr.IntOrString) decode themselves.

// readBufferSize is the read size of the streaming JSON decoders. It is
// also the precision of their size limits (see window).
const readBufferSize = 32 << 10

// newJSONAPI returns a json-iterator configuration of its own (its decoder
// cache is not shared with other codecs, so the managedFields option of one
// codec cannot leak into another).
func newJSONAPI(dropManagedFields bool) jsoniter.API {
	api := jsoniter.Config{CaseSensitive: true}.Froze()
	api.RegisterExtension(&valueTypes{})
	if dropManagedFields {
		api.RegisterExtension(&managedFieldsSkipper{})
	}
	return api
}

var objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()

// managedFieldsSkipper unbinds ObjectMeta.ManagedFields from its JSON name:
// the decoder then treats "managedFields" as an unknown field and skips its
// value without allocating anything.
type managedFieldsSkipper struct{ jsoniter.DummyExtension }

// UpdateStructDescriptor implements jsoniter.Extension.
func (*managedFieldsSkipper) UpdateStructDescriptor(sd *jsoniter.StructDescriptor) {
	if sd.Type.Type1() != objectMetaType {
		return
	}
	for _, b := range sd.Fields {
		if b.Field.Name() == "ManagedFields" {
			b.FromNames = nil
		}
	}
}

// readUnstructured decodes the next JSON object into an Unstructured in one
// pass, with k8s.io/apimachinery's number rules (int64 when the number is
// an integer that fits, float64 otherwise).
func readUnstructured(it *jsoniter.Iterator, dropManagedFields bool) *unstructured.Unstructured {
	if it.WhatIsNext() != jsoniter.ObjectValue {
		it.ReportError("decode object", "expected a JSON object")
		return nil
	}
	m := make(map[string]any)
	it.ReadMapCB(func(it *jsoniter.Iterator, key string) bool {
		if key == "metadata" && dropManagedFields && it.WhatIsNext() == jsoniter.ObjectValue {
			m[key] = readMap(it, "managedFields")
		} else {
			m[key] = readAny(it)
		}
		return it.Error == nil
	})
	return &unstructured.Unstructured{Object: m}
}

// readMap reads an object, skipping the value of the key named skip.
func readMap(it *jsoniter.Iterator, skip string) map[string]any {
	m := make(map[string]any)
	it.ReadMapCB(func(it *jsoniter.Iterator, key string) bool {
		if skip != "" && key == skip {
			it.Skip()
		} else {
			m[key] = readAny(it)
		}
		return it.Error == nil
	})
	return m
}

// readAny reads any JSON value as map[string]any, []any, string, int64,
// float64, bool or nil. json-iterator bounds the nesting depth (10000).
func readAny(it *jsoniter.Iterator) any {
	switch it.WhatIsNext() {
	case jsoniter.StringValue:
		return it.ReadString()
	case jsoniter.NumberValue:
		n := it.ReadNumber()
		v, err := convertNumber(string(n))
		if err != nil {
			it.ReportError("decode number", err.Error())
		}
		return v
	case jsoniter.NilValue:
		it.ReadNil()
		return nil
	case jsoniter.BoolValue:
		return it.ReadBool()
	case jsoniter.ArrayValue:
		s := make([]any, 0)
		it.ReadArrayCB(func(it *jsoniter.Iterator) bool {
			s = append(s, readAny(it))
			return it.Error == nil
		})
		return s
	case jsoniter.ObjectValue:
		return readMap(it, "")
	default:
		it.ReportError("decode value", "expected a JSON value")
		return nil
	}
}

// convertNumber applies sigs.k8s.io/json's rule: an integer that fits is an
// int64, anything else a float64, and a number out of float64's range is an
// error.
func convertNumber(s string) (any, error) {
	if !strings.Contains(s, ".") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("number %s: %w", s, err)
	}
	return f, nil
}

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
		return 0, w.note(w.pending)
	}
	if w.n >= w.limit {
		w.tooLarge = w.tooLarge || w.clean()
		return 0, errLimit
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
		if w.idle++; w.idle > 100 {
			err = io.ErrNoProgress
		}
	}
	return 0, w.note(err)
}

// note records why the source stopped, unless the decoder had already
// found bad bytes: json-iterator keeps reading after a syntax error, and
// the syntax error is the one to report.
func (w *window) note(err error) error {
	switch {
	case err == nil || !w.clean():
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
		return fmt.Errorf("%w: %s (%d bytes read): %v", ErrMalformed, what, w.total, it.Error)
	default:
		return fmt.Errorf("%w: %s (%d bytes read)", ErrMalformed, what, w.total)
	}
}
