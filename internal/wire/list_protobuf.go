package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// DecodeProtobufList decodes a protobuf list body (Content-Type
// application/vnd.kubernetes.protobuf): "k8s\x00" and a runtime.Unknown
// whose raw field is an XxxList {metadata = 1 (ListMeta), items = 2
// (repeated, each an object's bytes)}.
//
// Although the list is one protobuf message, every field is length-prefixed,
// so it is decoded as it streams in: each item is read into one reused
// buffer (an item over 1 MiB into its own, grown as its bytes arrive),
// unmarshalled into a new T and handed to add before the next is read.
// Memory is bounded by the largest item, not by the list.
//
// Limits and errors are those of DecodeJSONList: an item, or any other
// field read into memory, larger than maxItem bytes (zero or less:
// DefaultMaxItemBytes) fails with ErrListTooLarge; add's error is returned
// as is; a Status body is returned as a *StatusError; ErrProtobufUnsupported
// if the codec has no protobuf form.
func DecodeProtobufList[T any](r io.Reader, codec *Codec[T], maxItem int, add func(T) error) (meta ListMeta, err error) {
	if !codec.SupportsProtobuf() {
		return ListMeta{}, fmt.Errorf("protobuf list of %s: %w", codec.objKind, ErrProtobufUnsupported)
	}
	if maxItem <= 0 {
		maxItem = DefaultMaxItemBytes
	}
	l := &protoList[T]{codec: codec, s: protoStream{r: bufio.NewReaderSize(r, readBufferSize), limit: maxItem}, add: add}
	defer func() {
		if r := recover(); r != nil {
			rethrowCallerPanic(r)
			meta, err = ListMeta{}, fmt.Errorf("%w: %s: decoder panicked: %v", ErrMalformed, l.what(), r)
		}
	}()
	return l.decode()
}

// protoList is the state of one DecodeProtobufList call.
type protoList[T any] struct {
	codec      *Codec[T]
	s          protoStream
	add        func(T) error
	kind       string
	apiVersion string
	meta       ListMeta
	items      int
	inItem     bool
}

func (l *protoList[T]) decode() (ListMeta, error) {
	var magic [4]byte
	if _, err := io.ReadFull(l.s.r, magic[:]); err != nil {
		return ListMeta{}, l.fail("the k8s\\x00 prefix", err)
	}
	if !bytes.Equal(magic[:], protobufMagic) {
		return ListMeta{}, fmt.Errorf("%w: protobuf list: the body does not start with k8s\\x00 (got %q)", ErrMalformed, magic[:])
	}
	l.s.off = int64(len(magic))
	sawList := false
	for {
		num, typ, err := l.s.tag()
		if err == io.EOF {
			break
		}
		if err != nil {
			return ListMeta{}, l.fail("the envelope", err)
		}
		switch {
		case num == 1 && typ == wireBytes: // typeMeta
			b, err := l.s.bytesField("Unknown.typeMeta", l.s.remaining())
			if err != nil {
				return ListMeta{}, l.fail("the envelope", err)
			}
			apiVersion, kind, err := parseTypeMeta(b)
			if err != nil {
				return ListMeta{}, l.fail("the envelope", err)
			}
			if kind == nil {
				// runtime.Unknown's Unmarshal merges a repeated
				// typeMeta: one without a kind keeps the kind before.
				break
			}
			if sawList {
				// apimachinery decodes the raw bytes as the envelope's
				// final kind (an empty one: the list's own); the items
				// are handed over already.
				if string(kind) == "Status" {
					return ListMeta{}, l.fail("the envelope", fmt.Errorf("%w: a typeMeta after the list says kind Status", errProtobuf))
				}
				if !l.codec.acceptsList(string(kind)) {
					return ListMeta{}, l.wrongKind(apiVersion, string(kind))
				}
				break
			}
			l.kind, l.apiVersion = string(kind), string(apiVersion)
		case num == 2 && typ == wireBytes: // raw: the list itself
			if sawList {
				// The generated code keeps the last raw; its items are
				// handed over already, and cannot be taken back.
				return ListMeta{}, l.fail("the envelope", fmt.Errorf("%w: a second list (raw field repeated)", errProtobuf))
			}
			n, err := l.s.length(l.s.remaining())
			if err != nil {
				return ListMeta{}, l.fail("the envelope", err)
			}
			if l.kind == "Status" {
				return ListMeta{}, l.status(n)
			}
			if !l.codec.acceptsList(l.kind) {
				return ListMeta{}, l.wrongKind([]byte(l.apiVersion), l.kind)
			}
			if err := l.list(l.s.off + int64(n)); err != nil {
				return ListMeta{}, err
			}
			sawList = true
		case (num == 3 || num == 4) && typ == wireBytes: // contentEncoding, contentType
			b, err := l.s.bytesField("Unknown.content", l.s.remaining())
			if err != nil {
				return ListMeta{}, l.fail("the envelope", err)
			}
			u := unknown{}
			if num == 3 {
				u.contentEncoding = b
			} else {
				u.contentType = b
			}
			if err := u.check(); err != nil {
				return ListMeta{}, l.fail("the envelope", err)
			}
		case num <= 4: // typeMeta, raw, contentEncoding, contentType: refused as runtime.Unknown's Unmarshal refuses them
			return ListMeta{}, l.fail("the envelope", fmt.Errorf("%w: Unknown field %d has wire type %d, want 2", errProtobuf, num, typ))
		default:
			if err := l.s.skip(num, typ, l.s.remaining()); err != nil {
				return ListMeta{}, l.fail("the envelope", err)
			}
		}
	}
	if !sawList {
		return ListMeta{}, fmt.Errorf("%w: protobuf list: the envelope holds no list", ErrMalformed)
	}
	return l.meta, nil
}

// list reads the XxxList message that ends at offset end.
func (l *protoList[T]) list(end int64) error {
	for l.s.off < end {
		num, typ, err := l.s.tag()
		if err != nil {
			return l.fail("the list", eofIsUnexpected(err))
		}
		left := end - l.s.off
		if left < 0 {
			return l.fail("the list", fmt.Errorf("%w: a field's tag runs past the end of the list", errProtobuf))
		}
		switch {
		case num == 1 && typ == wireBytes:
			b, err := l.s.bytesField("ListMeta", left)
			if err != nil {
				return l.fail("the list metadata", err)
			}
			if err := parseListMeta(b, &l.meta); err != nil {
				return l.fail("the list metadata", err)
			}
		case num == 2 && typ == wireBytes:
			l.inItem = true
			b, err := l.s.bytesField("item", left)
			if err != nil {
				return l.fail("the item", err)
			}
			obj, err := l.codec.decodeProto(b)
			if err != nil {
				return fmt.Errorf("%s: %w", l.what(), err)
			}
			if err := callAdd(l.add, obj); err != nil {
				return err
			}
			l.items++
			l.inItem = false
		case num == 1 || num == 2:
			return l.fail("the list", fmt.Errorf("%w: field %d has wire type %d, want 2", errProtobuf, num, typ))
		default:
			if err := l.s.skip(num, typ, left); err != nil {
				return l.fail("the list", err)
			}
		}
	}
	if l.s.off != end {
		return l.fail("the list", fmt.Errorf("%w: a field runs past the end of the list", errProtobuf))
	}
	return nil
}

// status reads a Status body's n bytes.
func (l *protoList[T]) status(n uint64) error {
	b, err := l.s.read("Status", n)
	if err != nil {
		return l.fail("the Status", err)
	}
	status, err := unmarshalStatus(b)
	if err != nil {
		return err
	}
	return &StatusError{Status: *status}
}

func parseListMeta(b []byte, meta *ListMeta) (err error) {
	for len(b) > 0 {
		var f protoField
		if f, b, err = nextField(b); err != nil {
			return err
		}
		var v []byte
		switch f.num {
		case 1:
			// selfLink: not kept, but of its wire type.
			_, err = bytesField(f, "ListMeta.selfLink")
		case 5:
			// shardInfo: not kept, but a ShardInfo, as ListMeta's
			// Unmarshal wants it.
			if v, err = bytesField(f, "ListMeta.shardInfo"); err == nil {
				if uerr := new(metav1.ShardInfo).Unmarshal(v); uerr != nil {
					err = fmt.Errorf("%w: ListMeta.shardInfo: %v", errProtobuf, uerr)
				}
			}
		case 2:
			if v, err = bytesField(f, "ListMeta.resourceVersion"); err == nil {
				meta.ResourceVersion = string(v)
			}
		case 3:
			if v, err = bytesField(f, "ListMeta.continue"); err == nil {
				meta.Continue = string(v)
			}
		case 4:
			if f.typ != wireVarint {
				return fmt.Errorf("%w: ListMeta.remainingItemCount has wire type %d", errProtobuf, f.typ)
			}
			n := int64(f.varint)
			meta.RemainingItemCount = &n
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// fail wraps an error met at part of the body with what it means.
func (l *protoList[T]) fail(part string, err error) error {
	switch {
	case errors.Is(err, ErrListTooLarge):
		return fmt.Errorf("%s: %s: %w", l.what(), part, err)
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%s: the body ended inside %s: %w", l.what(), part, io.ErrUnexpectedEOF)
	case errors.Is(err, errProtobuf):
		return fmt.Errorf("%w: %s (byte %d): %s: %v", ErrMalformed, l.what(), l.s.off, part, err)
	default:
		return fmt.Errorf("%s: reading %s: %w", l.what(), part, err)
	}
}

func (l *protoList[T]) what() string {
	if l.inItem {
		return fmt.Sprintf("protobuf list item %d", l.items)
	}
	return fmt.Sprintf("protobuf list (after %d items)", l.items)
}

func (l *protoList[T]) wrongKind(apiVersion []byte, kind string) error {
	return fmt.Errorf("protobuf list: %w", &WrongKindError{
		Got:  schema.FromAPIVersionAndKind(string(apiVersion), kind),
		Want: schema.GroupVersionKind{Kind: l.codec.listKind},
	})
}
