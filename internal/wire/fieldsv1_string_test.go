//go:build fieldsv1string

package wire

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// sameFieldsV1 reports whether a and b share one copy of their bytes: the
// same unique.Handle. With this tag that holds whenever their contents are
// equal (apimachinery interns them), so the tests' checks of it add nothing
// here; they matter in the default build.
func sameFieldsV1(a, b *metav1.FieldsV1) bool { return *a == *b }
