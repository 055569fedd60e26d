package deltafifo

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeltaType says what happened to an object. The zero value is not a valid
// delta type.
type DeltaType uint8

// The kinds of change a [Delta] records.
const (
	// Added: a watch reported a new object.
	Added DeltaType = iota + 1
	// Updated: a watch reported a changed object.
	Updated
	// Deleted: the object is gone. See [Delta.FinalStateUnknown].
	Deleted
	// Replaced: the object was in a fresh list (see [FIFO.Replace]). It may
	// or may not differ from the state the consumer holds.
	Replaced
	// Sync: a periodic resync re-delivers the object the consumer already
	// holds (see [FIFO.Resync]).
	Sync
)

// String returns the name of the delta type, such as "Added".
func (t DeltaType) String() string {
	switch t {
	case Added:
		return "Added"
	case Updated:
		return "Updated"
	case Deleted:
		return "Deleted"
	case Replaced:
		return "Replaced"
	case Sync:
		return "Sync"
	}
	return "DeltaType(" + strconv.Itoa(int(t)) + ")"
}

// Delta is one change to one object. The zero value has no meaning.
type Delta[T metav1.Object] struct {
	Type DeltaType
	// Object is the object after the change; for Deleted, the last state
	// known before the deletion.
	Object T
	// FinalStateUnknown is set only on Deleted deltas made by Replace for a
	// key the list lacks: the object was deleted while we were not watching,
	// and Object is then the last state we knew, not its state at deletion.
	FinalStateUnknown bool
}
