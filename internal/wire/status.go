package wire

import (
	"bytes"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
)

// DecodeStatus decodes a metav1.Status body, JSON or protobuf (told apart by
// the k8s\x00 prefix): the body of an error response, or of a 200 response
// that turned out to be a Status. It fails with ErrMalformed when data is
// not a Status; the caller then reports the HTTP status and the raw body.
func DecodeStatus(data []byte) (*metav1.Status, error) {
	if bytes.HasPrefix(data, protobufMagic) {
		u, err := parseEnvelope(data)
		if err != nil {
			return nil, fmt.Errorf("%w: Status: %v", ErrMalformed, err)
		}
		if len(u.kind) != 0 && string(u.kind) != "Status" {
			return nil, fmt.Errorf("%w: expected a Status, got kind %q", ErrMalformed, u.kind)
		}
		return unmarshalStatus(u.raw)
	}
	return decodeJSONStatus(data)
}

// decodeJSONStatus uses sigs.k8s.io/json, the decoder k8s.io/apimachinery
// uses: a Status is small and rare, so building a json-iterator decoder for
// it would cost more than it saves.
func decodeJSONStatus(data []byte) (*metav1.Status, error) {
	status := new(metav1.Status)
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, status); err != nil {
		return nil, fmt.Errorf("%w: Status: %v", ErrMalformed, err)
	}
	if status.Kind != "Status" {
		return nil, fmt.Errorf("%w: expected a Status, got kind %q", ErrMalformed, status.Kind)
	}
	return status, nil
}

// unmarshalStatus decodes a Status's protobuf bytes; a panic in generated
// code becomes an error.
func unmarshalStatus(data []byte) (status *metav1.Status, err error) {
	defer func() {
		if r := recover(); r != nil {
			status, err = nil, fmt.Errorf("%w: Status: decoder panicked: %v", ErrMalformed, r)
		}
	}()
	status = new(metav1.Status)
	if err := status.Unmarshal(data); err != nil {
		return nil, fmt.Errorf("%w: Status: %v", ErrMalformed, err)
	}
	if status.Kind == "" {
		status.APIVersion, status.Kind = "v1", "Status"
	}
	return status, nil
}
