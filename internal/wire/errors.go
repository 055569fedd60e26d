package wire

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// These errors come wrapped with context (which event, which item, how
// many bytes); test for them with errors.Is. Apart from ErrWrongKind, every
// decoding error leaves the stream at an unknown position: the caller closes
// the body and reconnects (for a watch: from the last resource version seen).
// None carries a Status: a malformed watch event is no answer from the
// server (client-go's watch makes up a 500 InternalError Status for one, as
// if the server had sent it in an ERROR event).
var (
	// ErrMalformed reports bytes that are not valid JSON or protobuf, or a
	// valid value of the wrong shape (an event that is not an object, a
	// list whose items are not an array or that has no "items" at all, a
	// "type" that is not a string).
	// Retrying the same request usually gets the same bytes; a server or
	// proxy bug is likely.
	ErrMalformed = errors.New("malformed data from the server")

	// ErrUnknownEventType reports a watch event whose type is none of
	// ADDED, MODIFIED, DELETED, BOOKMARK, ERROR. The wrapping error names it.
	ErrUnknownEventType = errors.New("unknown watch event type")

	// ErrMissingObject reports a watch event without an object (or with
	// "object": null).
	ErrMissingObject = errors.New("watch event without an object")

	// ErrFrameTooLarge reports a watch event larger than the decoder's
	// maxFrame. The decoder stops reading at the limit, so memory stays
	// bounded.
	ErrFrameTooLarge = errors.New("watch event larger than the limit (reflector.WithMaxFrameBytes)")

	// ErrListTooLarge reports a list item, or the list's bytes between two
	// items (its metadata, whitespace), larger than the decoder's limit.
	// The decoder stops reading at the limit, so a hostile or compressed
	// body cannot exhaust memory.
	ErrListTooLarge = errors.New("list item larger than the limit (reflector.WithMaxItemBytes)")

	// ErrProtobufUnsupported reports a protobuf decoder built with a codec
	// that has no protobuf form (unstructured objects, types without an
	// Unmarshal method). Ask the server for JSON instead.
	ErrProtobufUnsupported = errors.New("object type has no protobuf decoding")

	// ErrWrongKind reports an object whose kind or apiVersion is not the
	// one the codec decodes. It is the only error after which a watch
	// decoder may be used again: the event was read completely, and the
	// caller may skip it. It is always wrapped in a *WrongKindError.
	ErrWrongKind = errors.New("object of the wrong kind")
)

// WrongKindError names the kind the server sent and the kind the codec
// expected. It unwraps to ErrWrongKind.
type WrongKindError struct {
	// Got is what the object (or the protobuf envelope) said it is.
	Got schema.GroupVersionKind
	// Want is what the codec decodes.
	Want schema.GroupVersionKind
}

// Error implements error.
func (e *WrongKindError) Error() string {
	return fmt.Sprintf("%v: got %s, want %s", ErrWrongKind, gvkString(e.Got), gvkString(e.Want))
}

// Unwrap returns ErrWrongKind.
func (e *WrongKindError) Unwrap() error { return ErrWrongKind }

func gvkString(gvk schema.GroupVersionKind) string {
	if gvk.Kind == "" && gvk.Version == "" && gvk.Group == "" {
		return "(no kind)"
	}
	apiVersion, kind := gvk.ToAPIVersionAndKind()
	if apiVersion == "" {
		return kind
	}
	return kind + " " + apiVersion
}

// StatusError is a metav1.Status the server sent where a list was expected
// (an error body such as 410 Expired for a stale continue token, or 403
// Forbidden). Inspect Status.Code and Status.Reason to decide what to do;
// k8s.io/apimachinery/pkg/api/errors.FromObject understands the same Status.
type StatusError struct {
	Status metav1.Status
}

// Error implements error, summarising the Status.
func (e *StatusError) Error() string {
	s := &e.Status
	msg := fmt.Sprintf("server returned Status %s", s.Status)
	if s.Code != 0 {
		msg += fmt.Sprintf(" %d", s.Code)
	}
	if s.Reason != "" {
		msg += " " + string(s.Reason)
	}
	if s.Message != "" {
		msg += ": " + s.Message
	}
	return msg
}

// The list decoders turn a panic while decoding into ErrMalformed: bytes
// the generated code chokes on are the server's fault. A panic in the
// caller's add is not, and goes on up as it was: callAdd marks it, and the
// decoders' recover hands it back (rethrowCallerPanic).

// callerPanic is a panic raised by the caller's own code.
type callerPanic struct{ value any }

// callAdd calls add, marking a panic in it as the caller's.
func callAdd[T any](add func(T) error, obj T) error {
	defer func() {
		if r := recover(); r != nil {
			panic(callerPanic{r})
		}
	}()
	return add(obj)
}

// rethrowCallerPanic panics again with the caller's value if r, a
// recovered panic, was the caller's.
func rethrowCallerPanic(r any) {
	if p, ok := r.(callerPanic); ok {
		panic(p.value)
	}
}
