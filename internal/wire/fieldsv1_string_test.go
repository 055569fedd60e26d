//go:build fieldsv1string

package wire

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// sameFieldsV1 reports whether a and b share one copy of their bytes: the
// same unique.Handle.
func sameFieldsV1(a, b *metav1.FieldsV1) bool { return *a == *b }
