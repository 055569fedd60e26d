package reflector

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestWithBackoffKeepsAUsableRange(t *testing.T) {
	for _, tc := range []struct {
		name             string
		initial, max     time.Duration
		wantInit, wantMx time.Duration
	}{
		{"as given", time.Second, time.Minute, time.Second, time.Minute},
		{"max below initial is raised to it", 5 * time.Second, 0, 5 * time.Second, 5 * time.Second},
		{"no initial keeps the default", 0, 10 * time.Second, 800 * time.Millisecond, 10 * time.Second},
		{"negative initial keeps the default", -time.Second, -time.Second, 800 * time.Millisecond, 800 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := defaultOptions[*corev1.Pod]()
			WithBackoff[*corev1.Pod](tc.initial, tc.max)(&o)
			assert.Equal(t, tc.wantInit, o.backoffInitial, "initial")
			assert.Equal(t, tc.wantMx, o.backoffMax, "max")
		})
	}
}
