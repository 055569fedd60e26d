//go:build !fieldsv1string

package wire

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// sameFieldsV1 reports whether a and b share one copy of their bytes.
func sameFieldsV1(a, b *metav1.FieldsV1) bool {
	return unsafe.SliceData(a.GetRawBytes()) == unsafe.SliceData(b.GetRawBytes())
}

// Managed fields shared by their bytes have no spare capacity: a pod's
// copy read out of the stream (not whole in the read buffer) kept the
// capacity json-iterator gave it, and the next pod got that same slice,
// so an append to one pod's FieldsV1.Raw wrote into the other's spare
// room, under the other's append.
func TestSharedFieldsV1HasNoSpareCapacity(t *testing.T) {
	codec := mustCodec[*corev1.Pod](t, podGVK)
	head := `{"items":[{"metadata":{"annotations":{"p":"`
	mid := `"},"managedFields":[{"fieldsV1":`
	fields := `{"f:metadata":{"f:labels":{}}}`
	// The first pod's fieldsV1 straddles the end of the read buffer.
	pad := strings.Repeat("x", readBufferSize-len(head)-len(mid)-len(fields)/2)
	body := head + pad + mid + fields + `}]}},{"metadata":{"managedFields":[{"fieldsV1":` + fields + `}]}}]}`
	var pods []*corev1.Pod
	_, err := DecodeJSONList(strings.NewReader(body), codec, 0, func(p *corev1.Pod) error {
		pods = append(pods, p)
		return nil
	})
	require.NoError(t, err)
	require.Len(t, pods, 2)
	a, b := pods[0].ManagedFields[0].FieldsV1.Raw, pods[1].ManagedFields[0].FieldsV1.Raw
	require.True(t, sameFieldsV1(pods[0].ManagedFields[0].FieldsV1, pods[1].ManagedFields[0].FieldsV1), "shared, as the test means")
	assert.Equal(t, len(a), cap(a), "spare capacity in a shared slice")
	a = append(a, 'A')
	b = append(b, 'B')
	assert.Equal(t, fields+"A", string(a))
	assert.Equal(t, fields+"B", string(b))
}
