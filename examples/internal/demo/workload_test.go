package demo

import (
	"math/rand/v2"
	"testing"
)

// Synthetic names cycle through the apps ten at a time, and an object's
// app is its name without the number, which the examples' selectors
// (app=web) rely on.
func TestObjectNames(t *testing.T) {
	for i, want := range map[int]string{0: "web-0", 9: "web-9", 10: "api-10", 79: "queue-79", 80: "web-80"} {
		if got := objectName(i); got != want {
			t.Errorf("objectName(%d) = %q, want %q", i, got, want)
		}
	}
	for name, want := range map[string]string{"web-12": "web", "api-0": "api", "my-app-3": "my-app", "plain": "plain"} {
		if got := appOf(name); got != want {
			t.Errorf("appOf(%q) = %q, want %q", name, got, want)
		}
	}
}

// A deployment the churn creates has no ready replica yet; its next change
// completes the rollout.
func TestNewDeploymentsRollOut(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	d := newUnreadyDeployment("ns", "web-1", r)
	if d.Status.ReadyReplicas != 0 || d.Status.AvailableReplicas != 0 {
		t.Fatalf("a new deployment has ready replicas: %+v", d.Status)
	}
	changeDeployment(d, r)
	if want := *d.Spec.Replicas; d.Status.ReadyReplicas != want || d.Status.UpdatedReplicas != want {
		t.Errorf("after its rollout %d/%d ready: %+v", d.Status.ReadyReplicas, want, d.Status)
	}
}
