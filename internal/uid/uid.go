// Package uid makes the UIDs that kube-apiserver gives the objects it
// creates: random RFC 4122 version 4 UUIDs (rest.FillObjectMetaSystemFields
// calls uuid.NewUUID, which is github.com/google/uuid's NewRandom), unique
// across the cluster. internal/apisim and listwatchtest stamp them.
package uid

import (
	"crypto/rand"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
)

// New returns a random RFC 4122 version 4 UUID, such as
// "3f2b8c1e-9d4a-4f6b-8e2c-7a1d5b9c0e3f". It is safe for concurrent use.
func New() types.UID {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return Format(b)
}

// Format returns the 16 bytes b as a version 4 UUID: it sets the version
// and variant bits, whatever b has.
func Format(b [16]byte) types.UID {
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]))
}
