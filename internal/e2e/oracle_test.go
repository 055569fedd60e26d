package e2e

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The oracle of the scenarios: what the handlers of an informer were told,
// checked as it arrives, and compared at the end with a fresh LIST.

// oracle is a handler (for any object type, through handlerOf) that
// builds the view a controller builds from its notifications, and checks
// as they arrive that:
//
//   - each object's resourceVersions only grow: an Add or an Update carries
//     a resourceVersion above every one its key has shown, and an Update
//     starts from the state the handler last saw, with the same uid;
//   - deletes are exact: a Delete is for a key the view holds; a delete
//     inferred from a relist (final state unknown) carries the last state
//     the handler saw;
//   - an Add is for a key the view does not hold (an object deleted and
//     created again comes as Delete then Add, never as an Update);
//   - an Add says it is in the initial list exactly while the handler's
//     registration has not synced: the registration syncs when the handler
//     has returned from the last such Add, and every later Add is news.
//
// Comparing the view with the server's state at the end checks that every
// delete was delivered: an object that vanished without a Delete stays in
// the view. An oracle is safe for concurrent use.
type oracle struct {
	name string

	mu       sync.Mutex
	view     map[string]state
	highest  map[string]uint64 // the largest resourceVersion each key has shown
	deletes  map[string][]bool // each key's deletes, true when the final state was unknown
	goneUIDs map[string]bool   // uids the handler was told were deleted
	// noSelector: the informer selects nothing away, so an object it was
	// told was deleted never comes back with the same uid (with a
	// selector, one that leaves it and comes back does).
	noSelector bool
	// registrationSynced is the HasSynced of the handler's registration,
	// set before the informer runs.
	registrationSynced func() bool
	violations         []string
	adds               int
	updates            int
}

// state is what the oracle keeps of an object.
type state struct {
	rv     string
	uid    string
	labels string
}

func labelsOf(obj metav1.Object) string {
	var kv []string
	for k, v := range obj.GetLabels() {
		kv = append(kv, k+"="+v)
	}
	slices.Sort(kv)
	return strings.Join(kv, ",")
}

func newOracle(name string) *oracle {
	return &oracle{name: name, view: map[string]state{}, highest: map[string]uint64{}, deletes: map[string][]bool{}, goneUIDs: map[string]bool{}}
}

// handlerOf adapts an oracle to processor.Handler[T].
type handlerOf[T metav1.Object] struct{ r *oracle }

func (h handlerOf[T]) OnAdd(obj T, isInInitialList bool)      { h.r.onAdd(obj, isInInitialList) }
func (h handlerOf[T]) OnUpdate(old, obj T)                    { h.r.onUpdate(old, obj) }
func (h handlerOf[T]) OnDelete(obj T, finalStateUnknown bool) { h.r.onDelete(obj, finalStateUnknown) }

func (r *oracle) onAdd(obj metav1.Object, isInInitialList bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := keyOf(obj)
	r.adds++
	if r.registrationSynced != nil {
		switch synced := r.registrationSynced(); {
		case isInInitialList && synced:
			r.violate("Add of %s@%s in the initial list after the registration synced", key, obj.GetResourceVersion())
		case !isInInitialList && !synced:
			r.violate("Add of %s@%s not in the initial list before the registration synced", key, obj.GetResourceVersion())
		}
	}
	if cur, ok := r.view[key]; ok {
		r.violate("Add of %s@%s while the view holds it at %s", key, obj.GetResourceVersion(), cur.rv)
	}
	if r.noSelector && r.goneUIDs[string(obj.GetUID())] {
		r.violate("Add of %s@%s with uid %s, which was deleted: an update delivered as Delete then Add", key, obj.GetResourceVersion(), obj.GetUID())
	}
	r.grow(key, obj, "Add")
	r.view[key] = stateOf(obj)
}

func (r *oracle) onUpdate(old, obj metav1.Object) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := keyOf(obj)
	r.updates++
	cur, ok := r.view[key]
	switch {
	case !ok:
		r.violate("Update of %s@%s, which the view does not hold", key, obj.GetResourceVersion())
	case cur.rv != old.GetResourceVersion():
		r.violate("Update of %s from %s, but the handler last saw %s", key, old.GetResourceVersion(), cur.rv)
	}
	if old.GetUID() != obj.GetUID() {
		r.violate("Update of %s across uids %s -> %s: want Delete then Add", key, old.GetUID(), obj.GetUID())
	}
	r.grow(key, obj, "Update")
	r.view[key] = stateOf(obj)
}

func (r *oracle) onDelete(obj metav1.Object, finalStateUnknown bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := keyOf(obj)
	r.deletes[key] = append(r.deletes[key], finalStateUnknown)
	cur, ok := r.view[key]
	switch {
	case !ok:
		r.violate("Delete of %s@%s, which the view does not hold", key, obj.GetResourceVersion())
	case finalStateUnknown:
		if cur != stateOf(obj) {
			r.violate("Delete (final state unknown) of %s@%s, but the handler last saw %s", key, obj.GetResourceVersion(), cur.rv)
		}
	default:
		if rv := rvNumber(obj.GetResourceVersion()); rv < r.highest[key] {
			r.violate("Delete of %s at %s after the key showed %d", key, obj.GetResourceVersion(), r.highest[key])
		}
	}
	r.goneUIDs[string(obj.GetUID())] = true
	delete(r.view, key)
}

// grow records a new state of key, checking that its resourceVersion grew.
func (r *oracle) grow(key string, obj metav1.Object, what string) {
	rv := rvNumber(obj.GetResourceVersion())
	if rv <= r.highest[key] {
		r.violate("%s of %s at %s after the key showed %d", what, key, obj.GetResourceVersion(), r.highest[key])
	}
	r.highest[key] = max(r.highest[key], rv)
}

func (r *oracle) violate(format string, args ...any) {
	if len(r.violations) < 50 {
		r.violations = append(r.violations, r.name+": "+fmt.Sprintf(format, args...))
	}
}

// lines returns the view as sorted "key@rv#uid" lines, keeping only the
// keys keep accepts.
func (r *oracle) lines(keep func(key string) bool) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []string{}
	for key, s := range r.view {
		if keep(key) {
			out = append(out, key+"@"+s.rv+"#"+s.uid+"{"+s.labels+"}")
		}
	}
	slices.Sort(out)
	return out
}

// problems returns the violations seen so far.
func (r *oracle) problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.violations)
}

// deletesOf returns the deletes the handler got for key, in order: true
// for each one whose final state was unknown (inferred from a relist).
func (r *oracle) deletesOf(key string) []bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.deletes[key])
}

// counts returns how many adds, updates and deletes the handler got.
func (r *oracle) counts() (adds, updates, deletes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.deletes {
		deletes += len(d)
	}
	return r.adds, r.updates, deletes
}

// keyOf is an object's cache key: "namespace/name", or "name".
func keyOf(obj metav1.Object) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}

func stateOf(obj metav1.Object) state {
	return state{rv: obj.GetResourceVersion(), uid: string(obj.GetUID()), labels: labelsOf(obj)}
}

// linesOf returns objects as sorted "key@rv#uid" lines, keeping only the
// keys keep accepts.
func linesOf[T metav1.Object](objs []T, keep func(key string) bool) []string {
	out := []string{}
	for _, o := range objs {
		if key := keyOf(o); keep(key) {
			out = append(out, key+"@"+o.GetResourceVersion()+"#"+string(o.GetUID())+"{"+labelsOf(o)+"}")
		}
	}
	slices.Sort(out)
	return out
}

// rvNumber parses a kube-apiserver resourceVersion (a decimal integer); 0
// when it does not parse.
func rvNumber(rv string) uint64 {
	n, _ := strconv.ParseUint(rv, 10, 64)
	return n
}

// diff describes how got differs from want, in a few lines.
func diff(want, got []string) string {
	w, g := map[string]bool{}, map[string]bool{}
	for _, s := range want {
		w[s] = true
	}
	var missing, extra []string
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
	return fmt.Sprintf("%d want, %d got; missing [%s]; unexpected [%s]", len(want), len(got), clip(missing), clip(extra))
}

// errorLog records the list and watch errors an informer reported, with
// when. It is safe for concurrent use.
type errorLog struct {
	mu   sync.Mutex
	errs []loggedError
}

type loggedError struct {
	err error
	at  time.Time
}

func (l *errorLog) add(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, loggedError{err: err, at: time.Now()})
}

// since returns the errors reported at or after t.
func (l *errorLog) since(t time.Time) []loggedError {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []loggedError
	for _, e := range l.errs {
		if !e.at.Before(t) {
			out = append(out, e)
		}
	}
	return out
}

// String lists the errors, one a line, for failure messages.
func (l *errorLog) String() string {
	var b strings.Builder
	for _, e := range l.since(time.Time{}) {
		fmt.Fprintf(&b, "\n\t%s %v", e.at.Format("15:04:05.000"), e.err)
	}
	return b.String()
}
