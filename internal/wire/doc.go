// Package wire decodes what kube-apiserver sends for LIST and WATCH into
// typed objects: it is the bottom of the flow, between the HTTP response
// body and the reflector.
//
//	HTTP body ──► wire decoder ──► T (one object at a time) ──► reflector
//
// A Codec[T] describes one object type: TypedCodec for generated API types
// such as *corev1.Pod (JSON and protobuf), UnstructuredCodec for custom
// resources (JSON), MetadataCodec for *metav1.PartialObjectMetadata (JSON
// and protobuf). WithoutManagedFields makes any of them skip
// metadata.managedFields while decoding, so those entries are never
// allocated. Typed and metadata codecs share short repeated strings,
// managedFields bytes and parsed quantities between the objects they
// decode, from JSON and from protobuf (WithoutStringInterning turns this
// off). A JSON string, managedFields value or shared part is looked up by
// its bytes where they lie in json-iterator's read buffer, and copied only
// when the table does not have it (json_buffer.go); a string with escapes,
// or longer than that buffer, is copied out in runs and allocated once at
// its size (json_string.go), where json-iterator appends it byte by byte;
// base64 []byte values (Secret data) are decoded from the same bytes.
// WithSharedParts makes them share identical maps, slices and pointed-to
// values too, by the bytes of those parts while decoding, skipping the
// parts seen before (proto_share.go, json_share.go); unstructured objects
// share nothing (internal/share's walk, which they go through, does not
// look inside their map[string]interface{} trees). A codec remembers at
// most 2048 parts, each of at most 2 KiB of bytes that decode to at most 8
// times that many (or 2 KiB), counting slices, map entries and pointed-to
// structs: what it keeps of deleted objects is bounded.
//
// Watch streams are read event by event:
//
//	dec := wire.NewJSONWatchDecoder(body, codec, 0) // or NewProtobufWatchDecoder
//	for {
//		ev, err := dec.Next()
//		switch {
//		case err == io.EOF: // the server closed the stream: watch again from the last RV
//		case errors.Is(err, wire.ErrWrongKind): continue // skip the event
//		case err != nil: // close the body, reconnect
//		}
//		... ev.Type, ev.Object, ev.Status ...
//	}
//
// NewParallelJSONWatchDecoder and NewParallelProtobufWatchDecoder give the
// same events, in the same order, decoded on several goroutines: one reads
// and cuts the stream into events (a protobuf frame says its length; a
// JSON event ends where its braces balance), workers decode, Next hands the
// events out in order. A JSON stream that is not one event per line, as
// kube-apiserver writes it, is decoded in order from the first line break
// inside an event on, so errors surface exactly as in the sequential
// decoder. Close stops the goroutines, after the body has been closed.
//
// List bodies are decoded as they stream in, each item handed to a callback
// (DecodeJSONList, DecodeProtobufList), so a list of any size is never held
// in memory twice. Every decoder bounds what it buffers (one watch event,
// one list item) and stops reading at the bound, so a hostile or
// decompressed body cannot exhaust memory. No input makes a decoder panic.
//
// Each event and item is decoded in one pass: JSON straight from the
// stream into the typed value with json-iterator, whose struct decoders
// are replaced with ones that skip unknown fields checking their syntax
// only, as encoding/json does (json_struct.go, json_skip.go: a number
// beyond float64's range is skipped, or kept raw in a RawExtension); an
// object is read, skipped or decoded into a struct by one walker of its
// members in the read buffer (json_object.go). Protobuf is decoded in one
// pass too, by walking the envelopes (WatchEvent, runtime.Unknown,
// XxxList) by hand in the read buffer and decoding the object's bytes with
// a decoder compiled from its Go type (proto_decode.go), which gives what
// the generated Unmarshal gives with a third of its allocations.
//
// Decoders are not safe for concurrent use; codecs are.
package wire
