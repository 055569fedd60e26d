package rest

import (
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"testing/iotest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// protobufStatus encodes status the way the apiserver does for a client
// that accepts application/vnd.kubernetes.protobuf.
func protobufStatus(t *testing.T, status *metav1.Status) []byte {
	t.Helper()
	raw, err := status.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	u := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "Status"}, Raw: raw}
	wrapped, err := u.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte("k8s\x00"), wrapped...)
}

func TestLimitReader(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		limit   int64
		want    string
		tooLong bool
	}{
		{"shorter", "hello", 10, "hello", false},
		{"exact", "hello", 5, "hello", false},
		{"one more", "hello!", 5, "hello", true},
		{"much more", strings.Repeat("x", 100000), 1000, strings.Repeat("x", 1000), true},
		{"zero limit, empty", "", 0, "", false},
		{"zero limit, one byte", "x", 0, "", true},
		{"negative limit", "x", -5, "", true},
		{"no limit to speak of", "hello", math.MaxInt64, "hello", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// OneByteReader makes the limit fall between reads as well.
			for _, r := range []io.Reader{strings.NewReader(tt.body), iotest.OneByteReader(strings.NewReader(tt.body))} {
				got, err := io.ReadAll(LimitReader(r, tt.limit))
				if string(got) != tt.want {
					t.Errorf("read %d bytes, want %d", len(got), len(tt.want))
				}
				if errors.Is(err, ErrBodyTooLarge) != tt.tooLong {
					t.Errorf("err = %v, want too large: %v", err, tt.tooLong)
				}
			}
		})
	}
}

func TestLimitReaderErrorIsSticky(t *testing.T) {
	r := LimitReader(strings.NewReader("abcdef"), 2)
	if _, err := io.ReadAll(r); !errors.Is(err, ErrBodyTooLarge) {
		t.Fatalf("err = %v", err)
	}
	if n, err := r.Read(make([]byte, 10)); n != 0 || !errors.Is(err, ErrBodyTooLarge) {
		t.Errorf("second Read = %d, %v; want 0, ErrBodyTooLarge", n, err)
	}
	if err := iotest.TestReader(LimitReader(strings.NewReader("abcdef"), 6), []byte("abcdef")); err != nil {
		t.Error(err)
	}
}
