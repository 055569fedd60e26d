package wire

import (
	"bytes"
	"fmt"
	"io"

	jsoniter "github.com/json-iterator/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// DefaultMaxItemBytes is the limit on one list item used when a list
// decoder is given a limit of zero or less.
const DefaultMaxItemBytes = 64 << 20

// ListMeta is what a list response says about itself: the resource version
// the list is consistent at, and, for a paged list, the token for the next
// page and an estimate of the items left.
type ListMeta struct {
	ResourceVersion    string
	Continue           string
	RemainingItemCount *int64
}

func listMetaOf(lm *metav1.ListMeta) ListMeta {
	return ListMeta{ResourceVersion: lm.ResourceVersion, Continue: lm.Continue, RemainingItemCount: lm.RemainingItemCount}
}

// DecodeJSONList decodes a JSON list body ({"kind":"PodList","metadata":
// {...},"items":[...]}) as it streams in: each item is decoded straight into
// a new T and handed to add before the next one is read, so the body is
// never held in memory. metadata may come before or after items.
//
// An item larger than maxItem bytes (zero or less: DefaultMaxItemBytes) fails
// with ErrListTooLarge; so do more than maxItem bytes between two items.
// If add returns an error, decoding stops and that error is returned as is.
// A Status body (kind "Status") is returned as a *StatusError. Keys match
// in their own case only (apimachinery finds the kind in any case): a
// "Kind" is no kind. An item of another kind fails the whole list with a
// *WrongKindError.
//
// A body without an "items" key fails with ErrMalformed: every list kind's
// OpenAPI schema requires it, and kube-apiserver writes "items":[] for a
// list of nothing, so a body without one ({} from a proxy,
// {"Kind":"Status"}) is not the server saying the collection is empty, and
// taking it as such would empty the cache. apimachinery reads such a body
// as an empty list.
//
// Any error means the list is incomplete: items already handed to add must
// be discarded.
func DecodeJSONList[T any](r io.Reader, codec *Codec[T], maxItem int, add func(T) error) (meta ListMeta, err error) {
	if maxItem <= 0 {
		maxItem = DefaultMaxItemBytes
	}
	src := &window{r: r, limit: int64(maxItem)}
	src.it = jsoniter.Parse(codec.json, src, readBufferSize)
	l := &jsonList[T]{codec: codec, src: src, it: src.it, add: add}
	defer func() {
		if r := recover(); r != nil {
			rethrowCallerPanic(r)
			meta, err = ListMeta{}, fmt.Errorf("%w: %s: decoder panicked: %v", ErrMalformed, l.what(), r)
		}
	}()
	return l.decode()
}

// jsonList is the state of one DecodeJSONList call.
type jsonList[T any] struct {
	codec *Codec[T]
	src   *window
	it    *jsoniter.Iterator
	add   func(T) error

	kind     string
	meta     metav1.ListMeta
	items    int
	sawItems bool // "items" was read
	inItem   bool
	stop     error             // add's error, or an item of the wrong kind
	statusKV map[string][]byte // the fields a Status body has, kept raw
}

func (l *jsonList[T]) decode() (ListMeta, error) {
	it := l.it
	if it.WhatIsNext() != jsoniter.ObjectValue {
		it.ReportError("read list", "expected a JSON object")
		return ListMeta{}, l.src.failure(it, l.what(), ErrListTooLarge)
	}
	it.ReadObjectCB(l.field)
	if l.stop != nil {
		return ListMeta{}, l.stop
	}
	if it.Error != nil {
		return ListMeta{}, l.src.failure(it, l.what(), ErrListTooLarge)
	}
	if l.kind == "Status" {
		return ListMeta{}, l.statusError()
	}
	if err := l.end(); err != nil {
		return ListMeta{}, err
	}
	if !l.sawItems {
		return ListMeta{}, fmt.Errorf("%w: JSON list: no \"items\" key: not a list, not even an empty one", ErrMalformed)
	}
	return listMetaOf(&l.meta), nil
}

// end checks that only white space follows the list's closing brace.
// apimachinery decodes a list body whole with encoding/json's rules, which
// refuse anything after the top-level value; a body with more is not one
// the server meant.
func (l *jsonList[T]) end() error {
	it := l.it
	if it.WhatIsNext() == jsoniter.InvalidValue && it.Error == io.EOF {
		return nil
	}
	if it.Error != nil {
		return l.src.failure(it, "JSON list, after its end", ErrListTooLarge)
	}
	return fmt.Errorf("%w: %s: data after the list's closing brace", ErrMalformed, l.what())
}

// field decodes one top-level field of the list body.
func (l *jsonList[T]) field(it *jsoniter.Iterator, name string) bool {
	switch name {
	case "kind":
		l.kind = it.ReadString()
		if it.Error == nil && l.kind != "Status" && !l.codec.acceptsList(l.kind) {
			l.stop = fmt.Errorf("JSON list: %w", &WrongKindError{
				Got:  schema.GroupVersionKind{Kind: l.kind},
				Want: schema.GroupVersionKind{Kind: l.codec.listKind},
			})
		}
	case "apiVersion":
		// Not checked, but a string (or null): apimachinery's JSON
		// serializer refuses another. (It also matches the key without
		// regard to case, and parses the group and version; this does
		// neither, for bodies no apiserver sends.)
		it.ReadString()
	case "metadata":
		it.ReadVal(&l.meta)
	case "items":
		if l.kind == "Status" {
			skipValue(it)
			break
		}
		if l.sawItems {
			// apimachinery's decoder keeps the last "items" only; the
			// first one's items are already handed over.
			l.stop = fmt.Errorf("%w: %s: \"items\" given twice", ErrMalformed, l.what())
			break
		}
		l.sawItems = true
		it.ReadArrayCB(l.item)
	case "status", "message", "reason", "details", "code":
		// A Status body's fields; a list has none of them.
		if l.statusKV == nil {
			l.statusKV = make(map[string][]byte)
		}
		l.statusKV[name] = skipAndReturnBytes(it)
	default:
		skipValue(it)
	}
	return it.Error == nil && l.stop == nil
}

// item decodes one element of "items" and hands it over.
func (l *jsonList[T]) item(it *jsoniter.Iterator) bool {
	l.inItem = true
	obj := l.codec.readJSON(it)
	if it.Error != nil {
		return false
	}
	if l.codec.fillListItem != nil {
		l.codec.fillListItem(obj, l.kind)
	}
	if err := l.codec.finishJSON(obj); err != nil {
		l.stop = fmt.Errorf("%s: %w", l.what(), err)
		return false
	}
	if err := callAdd(l.add, obj); err != nil {
		l.stop = err
		return false
	}
	l.items++
	l.inItem = false
	l.src.reset()
	return true
}

// statusError rebuilds the Status from the fields kept raw.
func (l *jsonList[T]) statusError() error {
	var b bytes.Buffer
	b.WriteString(`{"kind":"Status","apiVersion":"v1"`)
	for k, v := range l.statusKV {
		fmt.Fprintf(&b, ",%q:%s", k, v)
	}
	b.WriteByte('}')
	status, err := decodeJSONStatus(b.Bytes())
	if err != nil {
		return err
	}
	status.ListMeta = l.meta
	return &StatusError{Status: *status}
}

func (l *jsonList[T]) what() string {
	if l.inItem {
		return fmt.Sprintf("JSON list item %d", l.items)
	}
	return fmt.Sprintf("JSON list (after %d items)", l.items)
}
