package listwatchtest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/reflector"
)

// noWatcher is a ListerWatcher whose Watch returns no Watcher and no error.
type noWatcher struct {
	reflector.ListerWatcher[*corev1.Pod]
}

func (noWatcher) Watch(context.Context, reflector.WatchOptions) (reflector.Watcher[*corev1.Pod], error) {
	return nil, nil
}

// copies passes a nil Watcher on as nil, which the reflector reports,
// rather than wrapping it in one whose Next panics.
func TestCopiesKeepsANilWatcherNil(t *testing.T) {
	w, err := copies[*corev1.Pod]{noWatcher{}}.Watch(t.Context(), reflector.WatchOptions{})
	assert.NoError(t, err)
	assert.Nil(t, w)
}
