package apisim

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A server whose clients only watch (an informer after its first list)
// forgets the keys of the objects gone, as one that is listed does: keys
// were dropped only when a list asked for them, so churn of unique names
// (pods of Jobs) kept one key for every object ever created.
func TestKeysOfDeletedObjectsAreForgottenWithoutLists(t *testing.T) {
	s := New(WithResources(Pods()), WithHistorySize(100))
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pods := Of[*corev1.Pod](s, Pods())
	pod := func(i int) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "jobs", Name: fmt.Sprint("job-pod-", i)}}
	}
	const live, cycles = 100, 20_000
	for i := range live {
		if _, err := pods.Create(pod(i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := live; i < live+cycles; i++ {
		if _, err := pods.Create(pod(i)); err != nil {
			t.Fatal(err)
		}
		if _, err := pods.Delete("jobs", pod(i-live).Name); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := s.collection(Pods())
	s.mu.Lock()
	chains, keys := len(c.store.chains), len(c.store.sorted)+len(c.store.pending)
	s.mu.Unlock()
	if keys > 2*chains+1024 {
		t.Errorf("%d keys held for %d objects, after %d creates and deletes", keys, chains, cycles)
	}
}
