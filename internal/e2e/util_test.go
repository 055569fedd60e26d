package e2e

import (
	"strconv"
	"testing"
)

// parseRV parses a kube-apiserver resource version, a decimal integer.
func parseRV(t testing.TB, rv string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		t.Fatalf("resource version %q is not a decimal integer: %v", rv, err)
	}
	return n
}
