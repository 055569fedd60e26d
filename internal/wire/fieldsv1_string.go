//go:build fieldsv1string

package wire

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// With apimachinery's fieldsv1string build tag, a FieldsV1 holds a
// unique.Handle of its JSON: apimachinery interns the bytes itself, so
// every object with the same managedFields entry shares one copy already.
// fieldsv1_raw.go is the default build's version of this file.

// setFieldsV1 makes f hold b's contents.
func setFieldsV1(f *metav1.FieldsV1, b []byte) { f.SetRawBytes(b) }

// internFieldsV1 does nothing: f's contents are interned already.
func internFieldsV1(*metav1.FieldsV1, *internTable) {}
