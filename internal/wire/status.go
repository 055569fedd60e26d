package wire

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
)

// A list body that turns out to be a Status, and the Status of a protobuf
// watch's ERROR event, are decoded here; the body of an error response is
// internal/rest's to decode (CheckResponse).

// decodeJSONStatus decodes a JSON Status, or fails with ErrMalformed. It
// uses sigs.k8s.io/json, the decoder k8s.io/apimachinery uses: a Status is
// small and rare, so building a json-iterator decoder for it would cost
// more than it saves.
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
