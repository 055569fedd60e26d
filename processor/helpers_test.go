package processor_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/processor"
)

type note = processor.Notification[*corev1.Pod]

func pod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

func addOf(name, rv string, initial bool) note {
	return note{Kind: processor.Add, Key: "ns/" + name, New: pod(name, rv), IsInInitialList: initial}
}

func updateOf(name, oldRV, newRV string) note {
	return note{Kind: processor.Update, Key: "ns/" + name, Old: pod(name, oldRV), New: pod(name, newRV)}
}

func deleteOf(name, rv string, finalStateUnknown bool) note {
	return note{Kind: processor.Delete, Key: "ns/" + name, Old: pod(name, rv), FinalStateUnknown: finalStateUnknown}
}

// recorder is a Handler that records what it is called with, one line per
// call: "Add ns/a 1 initial", "Update ns/a 1->2", "Delete ns/a 2 unknown".
// If before is set, it is called with the line first, and may block or
// panic.
type recorder struct {
	before func(line string)

	mu  sync.Mutex
	got []string
}

func (r *recorder) record(line string) {
	if r.before != nil {
		r.before(line)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, line)
}

func (r *recorder) OnAdd(obj *corev1.Pod, initial bool) {
	line := fmt.Sprintf("Add %s/%s %s", obj.Namespace, obj.Name, obj.ResourceVersion)
	if initial {
		line += " initial"
	}
	r.record(line)
}

func (r *recorder) OnUpdate(oldObj, newObj *corev1.Pod) {
	r.record(fmt.Sprintf("Update %s/%s %s->%s", newObj.Namespace, newObj.Name, oldObj.ResourceVersion, newObj.ResourceVersion))
}

func (r *recorder) OnDelete(obj *corev1.Pod, finalStateUnknown bool) {
	line := fmt.Sprintf("Delete %s/%s %s", obj.Namespace, obj.Name, obj.ResourceVersion)
	if finalStateUnknown {
		line += " unknown"
	}
	r.record(line)
}

func (r *recorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// checkLines fails the test unless r has recorded exactly want.
func checkLines(t *testing.T, what string, r *recorder, want []string) {
	t.Helper()
	if got := r.lines(); !slices.Equal(got, want) {
		t.Errorf("%s handled\n\t%q\nwant\n\t%q", what, got, want)
	}
}

// run runs p in a goroutine. stop ends it and returns once Run has returned.
func run(p *processor.Processor[*corev1.Pod]) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// gate is a channel a handler waits on: closing it lets the handler go.
type gate chan struct{}

func (g gate) wait() { <-g }
func (g gate) open() { close(g) }

// errorLog collects the errors reported to a processor's error handler.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (e *errorLog) report(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.errs = append(e.errs, err)
}

func (e *errorLog) all() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.errs)
}
