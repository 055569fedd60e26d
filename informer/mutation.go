package informer

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"

	"github.com/listwatch/listwatch/internal/semantic"
	"github.com/listwatch/listwatch/reflector"
)

// MutationError reports a cached object that was changed after the informer
// cached it. The cache, every handler and every Lister caller share one copy
// of each object, so whoever changed it changed it for all of them, and the
// cache no longer says what the server says. Copy an object (DeepCopy)
// before changing it.
type MutationError struct {
	Resource string // the informer's resource, such as `pods in "default"`
	Key      string // the object's namespace/name
	Diff     string // a unified diff of the object's JSON: as cached (-), as found (+); a Secret's values redacted
}

func (e *MutationError) Error() string {
	return fmt.Sprintf("%s: cached object %s was modified after it was cached (copy an object before changing it):\n%s",
		e.Resource, e.Key, e.Diff)
}

// WithMutationDetector makes the informer check that nobody changes the
// objects it caches, which handlers and Lister callers share (see
// MutationError). It keeps a deep copy of every object it caches and, every
// period and once more when Run returns, compares each cached object, and
// each object replaced or deleted in the last minute (kept until the first
// check after that minute; under heavy churn, only the newest of them: at
// most twice as many as the cache holds, or 20,000), with its copy
// (semantically, as
// k8s.io/apimachinery/pkg/api/equality does: a Quantity that caches its
// string form is not a change, and neither is a nil map or slice made
// empty, or a Quantity rewritten with the same value). Each change found
// is passed to report as a *MutationError, once, and so is each object
// that cannot be copied (so not checked; a change that leaves an object
// so is reported, and it is not checked after); report runs on the detector's
// goroutine, or on Run's for the last check, never two at once; in a test,
// it may call t.Error. A nil report logs with the informer's logger
// instead, as does a report that panics; a period ≤ 0 means one second,
// and one under 100 ms is raised to that (every check compares the whole
// cache).
//
// It keeps a second copy of the cache, and of every object replaced since
// the last check more than a minute ago, and compares them all every
// period: it is meant for tests
// and CI, where it catches a handler that changes what it is given. It
// matters most with WithSharing, where such a change also changes the
// other objects that share the changed part.
func WithMutationDetector[T reflector.Object](period time.Duration, report func(error)) Option[T] {
	return func(o *options[T]) {
		o.mutations = &mutationOptions[T]{period: period, report: report, deepCopy: deepCopy[T]}
	}
}

// minMutationPeriod is the shortest period WithMutationDetector takes.
const minMutationPeriod = 100 * time.Millisecond

type mutationOptions[T metav1.Object] struct {
	period   time.Duration
	report   func(error)
	deepCopy func(T) (T, error)
}

// deepCopy copies obj with its generated DeepCopyObject. A panic in it
// (Unstructured.DeepCopy panics on a value that is not JSON, which a
// transform may have put there) is an error: the detector must not bring
// down an informer that works without it.
func deepCopy[T reflector.Object](obj T) (c T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("DeepCopyObject of %T panicked: %v", obj, r)
		}
	}()
	copied := obj.DeepCopyObject()
	c, ok := copied.(T)
	if !ok {
		return c, fmt.Errorf("DeepCopyObject of %T returned a %T", obj, copied)
	}
	return c, nil
}

// keepRetired is how long an object stays checked after it left the cache:
// handlers may still hold it, as the old side of an update or as a deleted
// object, and change it.
const keepRetired = time.Minute

// mutationDetector keeps a deep copy of each object the informer caches and
// compares the two. The informer's goroutine calls copyOf before it caches
// an object, and remember and forget in the order it changes the cache;
// check runs on the detector's goroutine,
// and once more after everything has stopped.
type mutationDetector[T metav1.Object] struct {
	resource string
	period   time.Duration
	report   func(error)
	log      func(error) // where a panic in report goes
	deepCopy func(T) (T, error)

	mu      sync.Mutex
	cached  map[string]*copied[T] // by key: the object the cache holds
	retired []*copied[T]          // left the cache, in the order they left
	failed  []error               // copies that failed since the last check, for it to report
}

// copied is one object and its copy. copy is read and replaced only by
// check, which runs on one goroutine at a time.
type copied[T metav1.Object] struct {
	key     string
	obj     T
	copy    T
	copyErr error     // why obj could not be copied (then it is not checked)
	retired time.Time // when obj left the cache; zero while cached
}

func newMutationDetector[T metav1.Object](resource string, o *mutationOptions[T], log func(error)) *mutationDetector[T] {
	d := &mutationDetector[T]{
		resource: resource,
		period:   o.period,
		report:   o.report,
		log:      log,
		deepCopy: o.deepCopy,
		cached:   map[string]*copied[T]{},
	}
	switch {
	case d.period <= 0:
		d.period = time.Second
	case d.period < minMutationPeriod:
		d.period = minMutationPeriod
	}
	if d.report == nil {
		d.report = log
	}
	return d
}

// run checks every period until ctx ends.
func (d *mutationDetector[T]) run(ctx context.Context) {
	t := time.NewTicker(d.period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			d.check()
		}
	}
}

// copyOf copies obj, which the cache is about to hold under key, for
// remember; nil if the detector watches obj already (a resync). It must be
// called before anyone else can see obj, and without the informer's locks:
// DeepCopyObject may be user code. An object that cannot be copied is not
// checked, and the next check reports it (so that report runs where the
// doc says); the cache takes it all the same.
func (d *mutationDetector[T]) copyOf(key string, obj T) *copied[T] {
	d.mu.Lock()
	held := d.cached[key]
	d.mu.Unlock()
	if held != nil && samePointer(held.obj, obj) {
		return nil
	}
	c, err := d.deepCopy(obj)
	return &copied[T]{key: key, obj: obj, copy: c, copyErr: err}
}

// remember records that the cache now holds the object of c, from copyOf,
// and retires what it held before under that key. Nothing for nil.
func (d *mutationDetector[T]) remember(c *copied[T]) {
	if c == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.retireLocked(c.key)
	d.cached[c.key] = c
	if c.copyErr != nil {
		d.failed = append(d.failed, fmt.Errorf("%s: mutation detector cannot check %s: %w", d.resource, c.key, c.copyErr))
	}
}

// forget records that the cache no longer holds key.
func (d *mutationDetector[T]) forget(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.retireLocked(key)
}

func (d *mutationDetector[T]) retireLocked(key string) {
	if held := d.cached[key]; held != nil {
		held.retired = time.Now()
		d.retired = append(d.retired, held)
		delete(d.cached, key)
	}
	// Under heavy churn, a minute of objects that left the cache (and
	// their copies) would outgrow the cache: keep the newest.
	if limit := max(len(d.cached), minRetiredKept); len(d.retired) > 2*limit {
		d.retired = slices.Clone(d.retired[len(d.retired)-limit:])
	}
}

// minRetiredKept is the fewest retired objects the detector keeps when it
// drops the oldest (see retireLocked): as many as the cache holds, and at
// least this many.
const minRetiredKept = 10_000

// check compares every object it watches with its copy and reports each
// one that changed, copying it again so that it is reported once per
// change. Then it drops the retired objects that have been checked long
// enough: after comparing them, so that one changed while it was cached
// and retired more than keepRetired before the check (a period above a
// minute) is still reported.
func (d *mutationDetector[T]) check() {
	defer d.dropRetired(time.Now().Add(-keepRetired))
	d.mu.Lock()
	all := make([]*copied[T], 0, len(d.cached)+len(d.retired))
	for _, c := range d.cached {
		all = append(all, c)
	}
	all = append(all, d.retired...)
	failed := d.failed
	d.failed = nil
	d.mu.Unlock()

	for _, err := range failed {
		d.safeReport(err)
	}
	for _, c := range all {
		if c.copyErr != nil || semantic.Equal(c.copy, c.obj) {
			continue
		}
		err := &MutationError{Resource: d.resource, Key: c.key, Diff: mutationDiff(c.copy, c.obj)}
		if fresh, cerr := d.deepCopy(c.obj); cerr == nil {
			c.copy = fresh
		} else {
			// Changed into something that cannot be copied (an
			// Unstructured holding a Go int): reported now, and not
			// checked again, or it would be reported every period.
			c.copyErr = cerr
		}
		d.safeReport(err)
	}
}

// dropRetired drops the objects retired before cutoff.
func (d *mutationDetector[T]) dropRetired(cutoff time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	i := 0
	for i < len(d.retired) && d.retired[i].retired.Before(cutoff) {
		i++
	}
	if i > 0 {
		d.retired = slices.Clone(d.retired[i:])
	}
}

// safeReport calls report, logging a panic in it: the goroutine is the
// informer's, and the other changes are still to be reported.
func (d *mutationDetector[T]) safeReport(err error) {
	defer func() {
		if p := recover(); p != nil {
			d.log(fmt.Errorf("the mutation detector's report function panicked on %w: %v", err, p))
		}
	}()
	d.report(err)
}

// samePointer reports whether a and b are the same pointer.
func samePointer[T any](a, b T) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Kind() == reflect.Pointer && vb.Kind() == reflect.Pointer && va.Pointer() == vb.Pointer()
}

// mutationDiff is MutationError's diff of an object as cached and as found.
// A report lands in test logs and CI output, so a Secret's data and
// stringData values are redacted: each reads "REDACTED", or, where the
// two differ, "REDACTED (as cached)" and "REDACTED (as found)", which
// shows which keys changed and nothing of their values.
func mutationDiff(cached, found any) string {
	a, b, ok := redactSecrets(cached, found)
	if !ok {
		return diff.Diff(cached, found)
	}
	return diff.Diff(a, b)
}

// redactSecrets returns the JSON trees of two versions of a Secret (typed,
// or unstructured of kind Secret in v1) with their values redacted, and
// false for objects of any other kind.
func redactSecrets(cached, found any) (a, b map[string]any, ok bool) {
	_, typed := cached.(*corev1.Secret)
	a, b = jsonTree(cached), jsonTree(found)
	if a == nil || b == nil {
		return nil, nil, false
	}
	if !typed && (a["kind"] != "Secret" || a["apiVersion"] != "v1") {
		return nil, nil, false
	}
	for _, field := range []string{"data", "stringData"} {
		va, _ := a[field].(map[string]any)
		vb, _ := b[field].(map[string]any)
		for k, v := range va {
			if w, in := vb[k]; in && reflect.DeepEqual(v, w) {
				va[k], vb[k] = "REDACTED", "REDACTED"
				continue
			}
			va[k] = "REDACTED (as cached)"
		}
		for k := range vb {
			if vb[k] != "REDACTED" {
				vb[k] = "REDACTED (as found)"
			}
		}
	}
	return a, b, true
}

// jsonTree is obj's JSON as a tree of maps, nil if it has none.
func jsonTree(obj any) map[string]any {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil
	}
	var tree map[string]any
	if json.Unmarshal(raw, &tree) != nil {
		return nil
	}
	return tree
}
