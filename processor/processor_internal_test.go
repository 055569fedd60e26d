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

// Adding listeners appends in place when the slice has room: it used to copy
// every listener on every add, O(L²) for L handlers.
func TestAddListenerAppendsInPlace(t *testing.T) {
	p := New[*corev1.Pod]()
	moves := 0
	var at **Listener[*corev1.Pod]
	for range 1000 {
		p.AddListener(HandlerFuncs[*corev1.Pod]{}, ListenerOptions{})
		if &p.listeners[0] != at {
			moves++
			at = &p.listeners[0]
		}
	}
	if moves > 30 {
		t.Errorf("1000 AddListener calls moved the listeners %d times, want O(log n)", moves)
	}
}
