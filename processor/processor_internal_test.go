package processor

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// A listener added to a stopped Processor is stopped and not kept: the
// Processor used to keep every one of them for good.
func TestStoppedProcessorKeepsNoNewListener(t *testing.T) {
	p := New[*corev1.Pod]()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	p.Run(ctx)
	l := p.AddListener(HandlerFuncs[*corev1.Pod]{}, ListenerOptions{})
	<-l.Stopped()
	if n := len(p.listeners); n != 0 {
		t.Errorf("the stopped Processor keeps %d listeners, want 0", n)
	}
}
