package main

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A handler's updates must carry ListRV+1, +2, ... each once, in order.
func TestSequence(t *testing.T) {
	at := func(rv string) metav1.Object { return &metav1.ObjectMeta{ResourceVersion: rv} }
	info := serverInfo{ListRV: "100", Events: 3}
	for _, c := range []struct {
		name string
		rvs  []string
		ok   bool
	}{
		{"in order", []string{"101", "102", "103"}, true},
		{"one lost", []string{"101", "103"}, false},
		{"one twice", []string{"101", "102", "102", "103"}, false},
		{"reordered", []string{"102", "101", "103"}, false},
		{"one more after the last", []string{"101", "102", "103", "103"}, false},
		{"not a number", []string{"101", "x", "103"}, false},
	} {
		s, err := newSequence(info)
		if err != nil {
			t.Fatal(err)
		}
		for _, rv := range c.rvs {
			s.see(at(rv))
		}
		if err := s.check(int64(len(c.rvs))); (err == nil) != c.ok {
			t.Errorf("%s: check() = %v", c.name, err)
		}
	}
}
