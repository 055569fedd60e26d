package wire

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A kind without an apiVersion (a list body's kind is checked alone) reads
// without a trailing space: "got WidgetCollection , want WidgetList ".
func TestWrongKindErrorReadsWithoutAnAPIVersion(t *testing.T) {
	err := &WrongKindError{Got: schema.GroupVersionKind{Kind: "WidgetCollection"}, Want: schema.GroupVersionKind{Kind: "WidgetList"}}
	if got, want := err.Error(), "object of the wrong kind: got WidgetCollection, want WidgetList"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	err = &WrongKindError{Got: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}}
	if got, want := err.Error(), "object of the wrong kind: got Widget example.com/v1, want (no kind)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
