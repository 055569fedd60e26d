package main

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A handler's updates must carry ListRV+1, +2, ... each once, each
// object's in order; the order across objects is free.
func TestSequence(t *testing.T) {
	// "a@101" is pod a at resourceVersion 101.
	at := func(s string) metav1.Object {
		name, rv, _ := strings.Cut(s, "@")
		return &metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}
	}
	info := serverInfo{ListRV: "100", Events: 4, Objects: 2}
	for _, c := range []struct {
		name string
		seen []string
		ok   bool
	}{
		{"in order", []string{"a@101", "b@102", "a@103", "b@104"}, true},
		{"one object's two together", []string{"a@101", "a@103", "b@102", "b@104"}, true},
		{"one lost", []string{"a@101", "b@102", "a@103"}, false},
		{"one twice", []string{"a@101", "b@102", "b@102", "a@103", "b@104"}, false},
		{"one object's reordered", []string{"a@103", "b@102", "a@101", "b@104"}, false},
		{"one more after the last", []string{"a@101", "b@102", "a@103", "b@104", "b@104"}, false},
		{"not the replay's", []string{"a@101", "b@102", "a@103", "b@105"}, false},
		{"before the replay", []string{"a@100", "b@102", "a@103", "b@104"}, false},
		{"not a number", []string{"a@101", "b@x", "a@103", "b@104"}, false},
	} {
		s, err := newSequence(info)
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range c.seen {
			s.see(at(obj))
		}
		if err := s.check(int64(len(c.seen))); (err == nil) != c.ok {
			t.Errorf("%s: check() = %v", c.name, err)
		}
	}
}
