//go:build !fieldsv1string

package wire

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// In apimachinery's default build a FieldsV1 holds its JSON in Raw, and the
// decoders set Raw to the intern table's copy of the bytes, so that every
// object with the same managedFields entry shares one copy. (SetRawBytes,
// which apimachinery asks callers to use instead of Raw, copies the bytes
// and would undo that.) With the fieldsv1string build tag, Raw does not
// exist, and fieldsv1_string.go replaces this file.

// setFieldsV1 makes f hold b, which it keeps: b must never change.
func setFieldsV1(f *metav1.FieldsV1, b []byte) {
	f.Raw = b //lint:ignore SA1019 Raw is the only way to keep b without a copy
}

// internFieldsV1 makes f hold t's copy of its bytes.
func internFieldsV1(f *metav1.FieldsV1, t *internTable) {
	f.Raw = t.internBytes(f.Raw) //lint:ignore SA1019 as in setFieldsV1
}
