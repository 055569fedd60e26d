//go:build !fieldsv1string

package wire

import (
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// sameFieldsV1 reports whether a and b share one copy of their bytes.
func sameFieldsV1(a, b *metav1.FieldsV1) bool {
	return unsafe.SliceData(a.GetRawBytes()) == unsafe.SliceData(b.GetRawBytes())
}
