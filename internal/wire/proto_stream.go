package wire

import (
	"bufio"
	"fmt"
	"io"
)

// protoStream reads protobuf fields from a stream, counting the bytes it
// consumes so that nested lengths can be checked without holding the
// enclosing message.
type protoStream struct {
	r     *bufio.Reader
	limit int    // the most bytes one field may be read into memory
	off   int64  // bytes consumed
	buf   []byte // reused for fields up to maxRetainedFrame
}

// remaining is the bound for a top-level field: the stream's end is unknown.
func (s *protoStream) remaining() int64 { return 1<<63 - 1 }

func (s *protoStream) varint() (uint64, error) {
	var v uint64
	for i := 0; i < 10; i++ {
		c, err := s.r.ReadByte()
		if err != nil {
			if i > 0 {
				return 0, eofIsUnexpected(err)
			}
			return 0, err
		}
		s.off++
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, nil
		}
	}
	return 0, fmt.Errorf("%w: varint longer than 10 bytes", errProtobuf)
}

// tag reads a field tag; io.EOF means the stream ended cleanly before it.
func (s *protoStream) tag() (num, typ uint64, err error) {
	t, err := s.varint()
	if err != nil {
		return 0, 0, err
	}
	num, typ = t>>3, t&7
	if num == 0 || num > maxFieldNumber {
		return 0, 0, fmt.Errorf("%w: field number %d", errProtobuf, num)
	}
	return num, typ, nil
}

// length reads a length prefix and checks it against the bytes left in
// the enclosing message.
func (s *protoStream) length(left int64) (uint64, error) {
	n, err := s.varint()
	if err != nil {
		return 0, eofIsUnexpected(err)
	}
	if n > uint64(left) {
		return 0, fmt.Errorf("%w: length %d exceeds the %d bytes left in the message", errProtobuf, n, left)
	}
	return n, nil
}

// bytesField reads a length-delimited field's length and contents.
func (s *protoStream) bytesField(name string, left int64) ([]byte, error) {
	n, err := s.length(left)
	if err != nil {
		return nil, err
	}
	return s.read(name, n)
}

// read reads n bytes into the reused buffer, refusing more than the limit
// before allocating anything. The bytes are valid until the next read.
func (s *protoStream) read(name string, n uint64) ([]byte, error) {
	if n > uint64(s.limit) {
		return nil, fmt.Errorf("%w: %s of %d bytes (limit %d)", ErrListTooLarge, name, n, s.limit)
	}
	keep := n <= maxRetainedFrame // else not kept for the next read
	dst := s.buf
	if !keep {
		dst = nil
	}
	b, err := readN(s.r, dst, int(n))
	s.off += int64(len(b))
	if err != nil {
		return nil, eofIsUnexpected(err)
	}
	if keep {
		s.buf = b
	}
	return b, nil
}

// skip consumes a field the decoder does not use, without keeping it.
func (s *protoStream) skip(num, typ uint64, left int64) error {
	var n uint64
	switch typ {
	case wireVarint:
		_, err := s.varint()
		return eofIsUnexpected(err)
	case wireFixed64:
		n = 8
	case wireFixed32:
		n = 4
	case wireBytes:
		var err error
		if n, err = s.length(left); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w: field %d: unsupported wire type %d", errProtobuf, num, typ)
	}
	if n > uint64(left) {
		return fmt.Errorf("%w: field %d runs past the end of its message", errProtobuf, num)
	}
	m, err := io.CopyN(io.Discard, s.r, int64(n))
	s.off += m
	return eofIsUnexpected(err)
}

// eofIsUnexpected turns io.EOF inside a message into io.ErrUnexpectedEOF.
func eofIsUnexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
