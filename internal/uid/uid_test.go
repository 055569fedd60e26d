package uid

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
)

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestNewIsARandomVersion4UUID(t *testing.T) {
	a, b := New(), New()
	assert.Regexp(t, uuidV4, string(a))
	assert.NotEqual(t, a, b)
}

func TestFormatSetsVersionAndVariant(t *testing.T) {
	var ones [16]byte
	for i := range ones {
		ones[i] = 0xff
	}
	assert.Equal(t, "ffffffff-ffff-4fff-bfff-ffffffffffff", string(Format(ones)))
}
