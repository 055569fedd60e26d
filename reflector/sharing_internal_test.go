package reflector

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// WithSharing shares parts while decoding when it can (the HTTP
// ListerWatcher, no transform), in a copy of the ListerWatcher, and after
// the transform otherwise.
func TestSharingWhere(t *testing.T) {
	client, err := NewClient(&Config{Host: "http://127.0.0.1:1"})
	require.NoError(t, err)
	lw, err := NewListerWatcher[*corev1.Pod](client, Target{})
	require.NoError(t, err)

	r := New(lw, nil, WithSharing[*corev1.Pod]())
	require.Nil(t, r.parts, "no walk")
	shared, ok := r.lw.(*HTTPListerWatcher[*corev1.Pod])
	require.True(t, ok)
	assert.True(t, shared.codec.SharesParts())
	assert.False(t, lw.codec.SharesParts(), "the ListerWatcher given is left as it was")

	identity := func(p *corev1.Pod) (*corev1.Pod, error) { return p, nil }
	r = New(lw, nil, WithSharing[*corev1.Pod](), WithTransform(identity))
	assert.NotNil(t, r.parts, "a walk after the transform")
	assert.Same(t, lw, r.lw)

	r = New(lw, nil)
	assert.Nil(t, r.parts)
	assert.Same(t, lw, r.lw)
}
