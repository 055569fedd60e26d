package reliability

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/listwatch/listwatch/internal/objkey"
)

// recorder is a handler that builds the view a controller builds from its
// notifications, and checks as they arrive that:
//
//   - (O) each key's resourceVersions only grow: an Add or an Update
//     carries a resourceVersion above every one the key has shown, and an
//     Update starts from the state the handler last saw, with the same uid;
//   - (D) deletes are exact: a Delete is for a key the view holds; a
//     delete inferred from a relist (final state unknown) carries the last
//     state the handler saw;
//   - an Add is for a key the view does not hold (a recreated object comes
//     as Delete then Add, never as an Update across uids).
//
// Comparing its view with the server's state at the end checks (C) and
// (D) together: an object that vanished without a Delete stays in the view.
// A recorder is safe for concurrent use.
type recorder struct {
	name string

	mu         sync.Mutex
	view       map[string]*corev1.Pod
	highest    map[string]uint64 // the largest resourceVersion each key has shown
	violations []string
	adds       int
	updates    int
	deletes    int
	unknown    int // deletes with the final state unknown
}

func newRecorder(name string) *recorder {
	return &recorder{name: name, view: map[string]*corev1.Pod{}, highest: map[string]uint64{}}
}

func (r *recorder) OnAdd(obj *corev1.Pod, _ bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := objkey.Key(obj)
	r.adds++
	if old, ok := r.view[key]; ok {
		r.violate("Add of %s@%s while the view holds it at %s", key, obj.ResourceVersion, old.ResourceVersion)
	}
	r.grow(key, obj, "Add")
	r.view[key] = obj
}

func (r *recorder) OnUpdate(old, obj *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := objkey.Key(obj)
	r.updates++
	cur, ok := r.view[key]
	switch {
	case !ok:
		r.violate("Update of %s@%s, which the view does not hold", key, obj.ResourceVersion)
	case cur.ResourceVersion != old.ResourceVersion:
		r.violate("Update of %s from %s, but the handler last saw %s", key, old.ResourceVersion, cur.ResourceVersion)
	}
	if old.UID != obj.UID {
		r.violate("Update of %s across uids %s -> %s: want Delete then Add", key, old.UID, obj.UID)
	}
	r.grow(key, obj, "Update")
	r.view[key] = obj
}

func (r *recorder) OnDelete(obj *corev1.Pod, finalStateUnknown bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := objkey.Key(obj)
	r.deletes++
	cur, ok := r.view[key]
	switch {
	case !ok:
		r.violate("Delete of %s@%s, which the view does not hold", key, obj.ResourceVersion)
	case finalStateUnknown:
		r.unknown++
		if cur.UID != obj.UID || cur.ResourceVersion != obj.ResourceVersion {
			r.violate("Delete (final state unknown) of %s@%s, but the handler last saw %s", key, obj.ResourceVersion, cur.ResourceVersion)
		}
	default:
		if rv := parseRV(obj.ResourceVersion); rv < r.highest[key] {
			r.violate("Delete of %s at %s after the key showed %d", key, obj.ResourceVersion, r.highest[key])
		}
	}
	delete(r.view, key)
}

// grow records a new state of key, checking (O).
func (r *recorder) grow(key string, obj *corev1.Pod, what string) {
	rv, err := strconv.ParseUint(obj.ResourceVersion, 10, 64)
	if err != nil {
		return // a broken server's (Row 8): nothing to order it by
	}
	if rv <= r.highest[key] {
		r.violate("(O) %s of %s at %s after the key showed %d", what, key, obj.ResourceVersion, r.highest[key])
	}
	r.highest[key] = max(r.highest[key], rv)
}

func (r *recorder) violate(format string, args ...any) {
	if len(r.violations) < 50 {
		r.violations = append(r.violations, r.name+": "+fmt.Sprintf(format, args...))
	}
}

// state returns the view as sorted "key@rv#uid" lines.
func (r *recorder) state() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.view))
	for _, p := range r.view {
		out = append(out, line(p))
	}
	slices.Sort(out)
	return out
}

// problems returns the (O) and (D) violations seen so far.
func (r *recorder) problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.violations)
}

// counts returns how many notifications of each kind the handler got.
func (r *recorder) counts() (adds, updates, deletes, unknown int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.adds, r.updates, r.deletes, r.unknown
}

// stateOf returns pods as sorted "key@rv#uid" lines.
func stateOf(pods []*corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, line(p))
	}
	slices.Sort(out)
	return out
}

// line is a pod's key, resourceVersion, UID and labels (which the writers
// change, and which informers that share their objects' parts share).
func line(p *corev1.Pod) string {
	return objkey.Key(p) + "@" + p.ResourceVersion + "#" + string(p.UID) + "{" + labels.Set(p.Labels).String() + "}"
}

// diff describes how got differs from want, in a few lines.
func diff(want, got []string) string {
	var missing, extra []string
	w, g := map[string]bool{}, map[string]bool{}
	for _, s := range want {
		w[s] = true
	}
	for _, s := range got {
		g[s] = true
		if !w[s] {
			extra = append(extra, s)
		}
	}
	for _, s := range want {
		if !g[s] {
			missing = append(missing, s)
		}
	}
	clip := func(s []string) string {
		if len(s) > 8 {
			return strings.Join(s[:8], " ") + fmt.Sprintf(" ... (%d more)", len(s)-8)
		}
		return strings.Join(s, " ")
	}
	out := fmt.Sprintf("%d want, %d got; missing [%s]; unexpected [%s]", len(want), len(got), clip(missing), clip(extra))
	if d := duplicates(want); len(d) > 0 {
		out += fmt.Sprintf("; repeated in want [%s]", clip(d))
	}
	if d := duplicates(got); len(d) > 0 {
		out += fmt.Sprintf("; repeated in got [%s]", clip(d))
	}
	return out
}

// duplicates returns the entries of sorted that appear more than once.
func duplicates(sorted []string) []string {
	var out []string
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			out = append(out, sorted[i])
		}
	}
	return out
}

// parseRV parses a resourceVersion; 0 when it does not parse.
func parseRV(rv string) uint64 {
	n, _ := strconv.ParseUint(rv, 10, 64)
	return n
}
