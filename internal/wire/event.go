package wire

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// EventType is the "type" of a watch event as the server spells it.
type EventType string

// The event types a watch stream carries.
const (
	// Added: the object was created (or, with sendInitialEvents, is part of
	// the initial state).
	Added EventType = "ADDED"
	// Modified: the object changed; Object is the new state.
	Modified EventType = "MODIFIED"
	// Deleted: the object was deleted; Object is its last state.
	Deleted EventType = "DELETED"
	// Bookmark: nothing changed; Object carries only metadata (the
	// resourceVersion the watch has reached, and annotations such as
	// k8s.io/initial-events-end).
	Bookmark EventType = "BOOKMARK"
	// Error: the server ended the watch with a Status (410 Gone: the
	// resource version is too old, relist).
	Error EventType = "ERROR"
)

// parseEventType maps the wire spelling to the constant, so that decoded
// events share the constants' strings instead of holding a copy each.
func parseEventType(s string) (EventType, bool) {
	switch s {
	case "ADDED":
		return Added, true
	case "MODIFIED":
		return Modified, true
	case "DELETED":
		return Deleted, true
	case "BOOKMARK":
		return Bookmark, true
	case "ERROR":
		return Error, true
	}
	return "", false
}

// Event is one decoded watch event.
//
// For ADDED, MODIFIED, DELETED and BOOKMARK, Object is the decoded object
// (for BOOKMARK only its metadata is filled: resourceVersion and
// annotations) and Status is nil. For ERROR, Object is the zero T and Status
// is the server's Status: the event's object is read as a Status unless it
// names another kind: its kind and its apiVersion may be missing, and the
// apiVersion is not checked (client-go's decoder refuses an object that
// lacks either). An object of another kind gives a Status that holds only
// that kind and apiVersion, for rest.FromStatus to report.
type Event[T any] struct {
	Type   EventType
	Object T
	Status *metav1.Status
}
