package apisim

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/listwatch/listwatch/internal/generation"
	"github.com/listwatch/listwatch/internal/kinds"
	"github.com/listwatch/listwatch/internal/strategy"
	"github.com/listwatch/listwatch/internal/uid"
)

// collection is the server-side state of one resource: its objects, its
// event history and its watchers. The Server's lock guards every field
// except the immutable codec.
type collection struct {
	codec
	status statusStrategy
	// conditionalOnly: a PUT must name the resourceVersion it replaces, as
	// for custom resources and the built-in kinds whose strategy's
	// AllowUnconditionalUpdate is false.
	conditionalOnly bool
	store           *objectStore
	hist            *history
	watchers        map[*watcher]struct{}

	// watchStart: every event with an RV above it is in hist, so a watch may
	// resume from any RV >= watchStart.
	watchStart uint64
	// compactedRV: reads (exact lists, continue tokens) below it get 410.
	compactedRV uint64
	// dropNext events are recorded but not delivered to live watchers.
	dropNext int
}

func newCollection(res Resource, scheme *runtime.Scheme, historySize int) (*collection, error) {
	cd, err := newCodec(res, scheme)
	if err != nil {
		return nil, err
	}
	return &collection{
		codec:           cd,
		status:          newStatusStrategy(res, scheme),
		conditionalOnly: !kinds.BuiltIn(res.Group) || kinds.ConditionalUpdateOnly(res.GroupResource().WithVersion(res.Version)),
		store:           newObjectStore(),
		hist:            newHistory(historySize),
		watchers:        make(map[*watcher]struct{}),
	}, nil
}

// The write path: each write takes the server lock, stamps the object with
// the next global resourceVersion, encodes it once, stores it, appends the
// event to the history and offers it to the watchers, in that order, so
// that the events of one resource leave in strictly increasing RV order.
// Errors are *apierrors.StatusError, written as-is by the HTTP handlers.

// create stores a new object. pathNS, when not empty, is the namespace of
// the request path, which the object's namespace must match.
func (s *Server) create(c *collection, in runtime.Object, pathNS string) (*version, error) {
	obj, err := c.canonical(in)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	m, _ := meta.Accessor(obj)
	if err := c.checkNamespace(m, pathNS); err != nil {
		return nil, err
	}
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(strategy.GenerateNameBase(m.GetGenerateName()) + randomSuffix())
	}
	if m.GetName() == "" {
		return nil, apierrors.NewInvalid(c.res.GroupVersionKind().GroupKind(), "", field.ErrorList{
			field.Required(field.NewPath("metadata", "name"), "name or generateName is required")})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.store.current(objectKey(m.GetNamespace(), m.GetName())) != nil {
		return nil, apierrors.NewAlreadyExists(c.res.GroupResource(), m.GetName())
	}
	return s.insert(c, obj)
}

// insert stamps obj, a new object in the stored form, as a create stamps
// it (uid, creationTimestamp unless it has one, generation 1, the next
// resourceVersion, no deletion marks) and stores it: watchers get it as
// ADDED. No object of its name is stored. The caller holds s.mu.
func (s *Server) insert(c *collection, obj runtime.Object) (*version, error) {
	m, _ := meta.Accessor(obj)
	rv := s.rv + 1
	id := newUID()
	if s.opts.derivedUIDs {
		id = derivedUID(c.res, m.GetNamespace(), m.GetName(), rv)
	}
	m.SetUID(types.UID(id))
	if ts := m.GetCreationTimestamp(); ts.IsZero() {
		m.SetCreationTimestamp(metav1.NewTime(time.Now().Truncate(time.Second)))
	}
	m.SetGeneration(1)
	m.SetResourceVersion(strconv.FormatUint(rv, 10))
	// A new object is not being deleted, whatever the client sent
	// (rest.FillObjectMetaSystemFields and WipeObjectMetaSystemFields).
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	v, err := c.newVersion(obj, rv, false)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	s.commit(c, &event{typ: added, rv: rv, obj: v})
	return v, nil
}

// update replaces an object, or its status, or a Namespace's finalizers
// (kind says which, see statusStrategy.prepare). A non-empty metadata.resourceVersion must be
// the current one (optimistic concurrency); an empty one updates
// unconditionally, except in a PUT to a resource that refuses that
// (collection.conditionalOnly): 422 Invalid. An update that changes
// nothing writes nothing and returns the current version, as
// kube-apiserver does; one of the status alone never moves the generation.
//
// Of a missing object, update is NotFound, but for the resources
// kube-apiserver creates on an update (kinds.CreateOnUpdate): it creates
// the object as create does, whatever resourceVersion it names, and
// reports created. A uid in the request is then a precondition that the
// missing object fails: 409 Conflict, as the generic store's
// GuaranteedUpdate checks it against the empty object first.
func (s *Server) update(c *collection, in runtime.Object, pathNS string, kind writeKind) (_ *version, created bool, _ error) {
	// The strategy sees the request as sent (an empty list is not an
	// absent one), the rest of the update the object as stored.
	obj, err := c.sent(in)
	if err != nil {
		return nil, false, apierrors.NewBadRequest(err.Error())
	}
	m, _ := meta.Accessor(obj)
	if err := c.checkNamespace(m, pathNS); err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := c.store.current(objectKey(m.GetNamespace(), m.GetName()))
	if err := c.uidPrecondition(m, cur, kind); err != nil {
		return nil, false, err
	}
	createOnUpdate := cur == nil && kinds.CreateOnUpdate(c.res.GroupResource())
	if cur == nil && !createOnUpdate {
		return nil, false, apierrors.NewNotFound(c.res.GroupResource(), m.GetName())
	}
	// "0" is no resourceVersion, as the storage's versioner parses it; one
	// that is not a number is its parse error, which reaches the client
	// as a 500 without a reason.
	want, err := strategy.WriteVersion(m.GetResourceVersion())
	if err != nil {
		return nil, false, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
			Code: http.StatusInternalServerError, Message: err.Error()}}
	}
	if createOnUpdate {
		// Before the generic store asks for a resourceVersion: a Lease is
		// created without one.
		if obj, err = c.stored(obj); err != nil {
			return nil, false, apierrors.NewBadRequest(err.Error())
		}
		v, err := s.insert(c, obj)
		return v, true, err
	}
	if want == 0 && kind != writeWhole && c.conditionalOnly {
		// As kube-apiserver's generic store words it, naming the resource
		// where the kind belongs (its "TODO" of #18526).
		return nil, false, apierrors.NewInvalid(schema.GroupKind{Group: c.res.Group, Kind: c.res.Resource}, m.GetName(), field.ErrorList{
			field.Invalid(field.NewPath("metadata", "resourceVersion"), uint64(0), "must be specified for an update")})
	}
	if want != 0 && want != cur.rv {
		return nil, false, apierrors.NewConflict(c.res.GroupResource(), m.GetName(),
			fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}
	if obj, err = c.stored(c.status.prepare(kind, obj, cur.obj)); err != nil {
		return nil, false, apierrors.NewBadRequest(err.Error())
	}
	m, _ = meta.Accessor(obj)
	old, _ := meta.Accessor(cur.obj)
	if kind != writeWhole {
		if errs := deletionMarks(m, old); len(errs) > 0 {
			return nil, false, apierrors.NewInvalid(c.res.GroupVersionKind().GroupKind(), m.GetName(), errs)
		}
	}
	m.SetUID(old.GetUID())
	m.SetCreationTimestamp(old.GetCreationTimestamp())
	m.SetGeneration(old.GetGeneration())
	m.SetResourceVersion(old.GetResourceVersion())
	if kind != writePutStatus && kind != writePutFinalize && (generation.SpecChanged(c.res.GroupVersionKind().GroupKind(), cur.obj, obj) ||
		(c.status.custom && !c.status.has && generation.CustomStatusChanged(cur.obj, obj))) {
		m.SetGeneration(old.GetGeneration() + 1)
	} else if equalObjects(cur.obj, obj) {
		return cur, false, nil
	}
	rv := s.rv + 1
	m.SetResourceVersion(strconv.FormatUint(rv, 10))
	v, err := c.newVersion(obj, rv, false)
	if err != nil {
		return nil, false, apierrors.NewInternalError(err)
	}
	s.commit(c, &event{typ: modified, rv: rv, obj: v, prev: cur})
	return v, false, nil
}

// uidPrecondition is strategy.UIDPrecondition of a PUT against cur (nil:
// none stored), whether the kind creates on update or not. The direct Go
// API (Objects.Update) sets what it likes.
func (c *collection) uidPrecondition(m metav1.Object, cur *version, kind writeKind) error {
	if kind == writeWhole {
		return nil
	}
	var stored types.UID
	if cur != nil {
		stored = types.UID(cur.uid)
	}
	return strategy.UIDPrecondition(c.res.GroupResource(), m.GetName(), m.GetUID(), stored)
}

// deletionMarks keeps old's deletion marks in m, as rest.BeforeUpdate
// does (a deletionTimestamp whatever m has, a grace period when m has
// none), and returns what kube-apiserver's validation then finds wrong
// (strategy.DeletionMarkErrors).
// The direct Go API (Objects.Update) sets them as it likes.
func deletionMarks(m, old metav1.Object) field.ErrorList {
	if old.GetDeletionTimestamp() != nil {
		m.SetDeletionTimestamp(old.GetDeletionTimestamp().DeepCopy())
	}
	if g := old.GetDeletionGracePeriodSeconds(); g != nil && m.GetDeletionGracePeriodSeconds() == nil {
		m.SetDeletionGracePeriodSeconds(new(*g))
	}
	return strategy.DeletionMarkErrors(m, old)
}

// remove deletes an object and returns its tombstone: the last state
// stamped with the deletion's resourceVersion. pre, when not nil, holds the
// DeleteOptions preconditions the object must meet.
func (s *Server) remove(c *collection, namespace, name string, pre *metav1.Preconditions) (*version, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := c.store.current(objectKey(namespace, name))
	if cur == nil {
		return nil, apierrors.NewNotFound(c.res.GroupResource(), name)
	}
	if err := c.checkPreconditions(cur, pre); err != nil {
		return nil, err
	}
	rv := s.rv + 1
	tomb, err := c.restamped(cur, rv, true)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	s.commit(c, &event{typ: deleted, rv: rv, obj: tomb, prev: cur})
	return tomb, nil
}

// removeTogether deletes the objects named, all at one resourceVersion, and
// returns their tombstones; if one does not exist, it deletes none.
func (s *Server) removeTogether(c *collection, namespace string, names []string) ([]*version, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	curs := make([]*version, len(names))
	for i, name := range names {
		if curs[i] = c.store.current(objectKey(namespace, name)); curs[i] == nil {
			return nil, apierrors.NewNotFound(c.res.GroupResource(), name)
		}
		if slices.Index(names, name) < i {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("%q named twice", name))
		}
	}
	rv := s.rv + 1
	tombs := make([]*version, len(names))
	for i, cur := range curs {
		tomb, err := c.restamped(cur, rv, true)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		tombs[i] = tomb
	}
	for i, tomb := range tombs {
		s.commit(c, &event{typ: deleted, rv: rv, obj: tomb, prev: curs[i]})
	}
	return tombs, nil
}

// checkPreconditions answers a delete whose preconditions the object does
// not meet with kube-apiserver's Conflict (which names the kind, not the
// resource).
func (c *collection) checkPreconditions(cur *version, pre *metav1.Preconditions) error {
	if pre == nil {
		return nil
	}
	qualified := schema.GroupResource{Group: c.res.Group, Resource: c.res.Kind}
	if pre.UID != nil && *pre.UID != types.UID(cur.uid) {
		return apierrors.NewConflict(qualified, cur.name, fmt.Errorf(
			"the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated",
			*pre.UID, cur.uid))
	}
	if rv := strconv.FormatUint(cur.rv, 10); pre.ResourceVersion != nil && *pre.ResourceVersion != rv {
		return apierrors.NewConflict(qualified, cur.name, fmt.Errorf(
			"the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified",
			*pre.ResourceVersion, rv))
	}
	return nil
}

// commit makes an event visible. The caller holds s.mu.
func (s *Server) commit(c *collection, e *event) {
	s.rv = e.rv
	c.store.put(e.obj, c.compactedRV)
	if gone := c.hist.push(e); gone != nil {
		// The history window moved: what only the evicted event could show
		// is no longer readable.
		c.watchStart = c.hist.oldest().rv - 1
		c.compactedRV = max(c.compactedRV, c.watchStart)
		c.store.prune(gone.obj.key, c.compactedRV)
	}
	if c.dropNext > 0 {
		c.dropNext--
	} else {
		for w := range c.watchers {
			w.offer(c, e)
		}
	}
	if s.rvWaiters != nil {
		close(s.rvWaiters)
		s.rvWaiters = nil
	}
}

// checkNamespace applies the namespace rules of a write: namespaced objects
// need one, equal to the request path's; cluster-scoped objects have none.
func (c *collection) checkNamespace(m metav1.Object, pathNS string) error {
	if !c.res.Namespaced {
		m.SetNamespace("")
		return nil
	}
	if m.GetNamespace() == "" {
		m.SetNamespace(pathNS)
	}
	if pathNS != "" && m.GetNamespace() != pathNS {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	if m.GetNamespace() == "" {
		return apierrors.NewBadRequest(fmt.Sprintf("%s %q: a namespace is required for a namespaced resource", c.res.Kind, m.GetName()))
	}
	return nil
}

func equalObjects(a, b runtime.Object) bool {
	return equality.Semantic.DeepEqual(a, b)
}

// newUID returns a random RFC 4122 version 4 UUID.
func newUID() string { return string(uid.New()) }

// derivedUID returns a UUID-shaped uid that depends only on its arguments
// (WithDerivedUIDs).
func derivedUID(res Resource, namespace, name string, rv uint64) string {
	b := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%s\x00%d", res.GroupResource(), namespace, name, rv)))
	return string(uid.Format([16]byte(b[:16])))
}

// randomSuffix returns five characters for generateName, from the alphabet
// kube-apiserver uses (no vowels, no confusable digits). They follow the
// first 58 characters of the generateName (strategy.GenerateNameBase).
func randomSuffix() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	var b [5]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b[:])
}
