package listwatchtest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/listwatch/listwatch/internal/fakelw"
	"github.com/listwatch/listwatch/internal/generation"
	"github.com/listwatch/listwatch/internal/kinds"
	"github.com/listwatch/listwatch/internal/objkey"
	"github.com/listwatch/listwatch/internal/semantic"
	"github.com/listwatch/listwatch/internal/strategy"
	"github.com/listwatch/listwatch/internal/uid"
	"github.com/listwatch/listwatch/reflector"
)

// Source holds the objects of one resource and serves them to a
// reflector.ListerWatcher's caller. Make one with NewSource. All methods are
// safe for concurrent use.
type Source[T reflector.Object] struct {
	// mu makes a write's checks and the write one step: two Creates of
	// one name cannot both succeed.
	mu          sync.Mutex
	src         *fakelw.Source[T]
	names            // what errors call the objects
	generated   int  // names made for GenerateName
	generations bool // T has a metadata.generation: see generation.Tracked
	// conditional: an Update must name the resourceVersion it replaces,
	// as kube-apiserver requires for custom resources and the kinds
	// whose strategy's AllowUnconditionalUpdate is false.
	conditional bool
	// status: the resource has a status subresource (see hasStatus):
	// Update keeps the stored status and UpdateStatus writes it.
	status bool
}

// NewSource returns an empty Source for objects of type T, such as
// *corev1.Pod or *unstructured.Unstructured. Its errors name the objects as
// the apiserver does (pods "web" not found) for the types of k8s.io/api;
// WithResource names them for other types.
//
// Objects of a type with a spec have a metadata.generation, as
// kube-apiserver's do: T a pointer to a struct with a Spec field
// (*appsv1.Deployment, *corev1.Pod), or *unstructured.Unstructured (taken
// to be a custom resource), and the kinds without one that kube-apiserver
// gives one all the same (EndpointSlices, PodTemplates, PriorityClasses,
// webhook configurations). Objects of other types (*corev1.ConfigMap,
// *metav1.PartialObjectMetadata) keep generation 0. kube-apiserver gives
// some kinds with a spec none either, Services and Namespaces among them:
// a Source gives them one.
//
// Objects of a type with a Status field (a pointer to a struct: every
// kind of k8s.io/api with a /status subresource, Namespaces and Services
// among them, and a type of one's own that embeds one), and of
// *unstructured.Unstructured given WithStatusSubresource, have their
// status apart, as kube-apiserver's: Update keeps the stored status and
// UpdateStatus writes nothing else. Create stores the status it is given,
// where kube-apiserver's create of most such kinds clears it: a test sets
// the status an object starts with there. Other types (*corev1.ConfigMap,
// *metav1.PartialObjectMetadata) have no status subresource. Update keeps
// a *corev1.Namespace's spec.finalizers, as the server does (they are
// written through /finalize; an *unstructured.Unstructured Namespace's it
// writes), but a Source does not hold a Namespace in
// Terminating until they are emptied: one without metadata.finalizers
// goes at once.
func NewSource[T reflector.Object](opts ...Option) *Source[T] {
	typ := reflect.TypeFor[T]()
	name := typ.String()
	if typ.Kind() == reflect.Pointer {
		name = typ.Elem().Name()
	}
	o := options{names: names{
		resource: schema.GroupResource{Resource: strings.ToLower(name)},
		kind:     schema.GroupKind{Kind: name},
	}}
	version := ""
	if gvk, gvr, err := kinds.Of[T](); err == nil {
		o.resource, o.kind, version = gvr.GroupResource(), gvk.GroupKind(), gvk.Version
	}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	s := &Source[T]{generations: generation.Tracked(typ), names: o.names, status: hasStatus(typ, o.statusSubresource)}
	_, unstructuredT := any(*new(T)).(*unstructured.Unstructured)
	s.conditional = kinds.ConditionalUpdateOnly(s.resource.WithVersion(version)) ||
		(unstructuredT && !kinds.BuiltIn(s.resource.Group))
	if typ.Kind() == reflect.Pointer && typ.Elem().Kind() == reflect.Struct &&
		!objkey.IsNil(newEmpty(typ.Elem()).Interface()) {
		elem := typ.Elem()
		s.src = fakelw.New(func() T { return newEmpty(elem).Interface().(T) })
	} else {
		// A streaming list ends with a bookmark, an empty T, which only a
		// pointer to a struct can be made into, and only one whose
		// metadata is then there to set (not behind an embedded
		// interface). The reflector lists instead.
		s.src = fakelw.New(func() T { var zero T; return zero })
		s.src.RefuseStreaming()
	}
	s.src.AcceptFutureWatches() // as kube-apiserver's watch cache does
	s.src.MakeUIDs(uid.New)     // unique across Sources, as across a cluster
	return s
}

// Create stores a copy of obj as a new object and returns a copy of what it
// stored: obj with a new UID (a random version 4 UUID, as kube-apiserver
// gives: unique across the Sources of the process, so that an
// ownerReference names one owner, whichever Source holds it) and
// resourceVersion, the creationTimestamp of
// now to the second (time.Now, which a testing/synctest bubble fakes), and
// metadata.generation 1 if its type has one (see NewSource), else 0,
// whatever obj had; no deletionTimestamp. An object with no name
// but a GenerateName gets a name made from it that no object of its
// namespace has: its first 58 characters, as kube-apiserver keeps them
// (so that a name is at most 63), and a counter in base 36 (1, 2, ...,
// a, b, ...) where the server adds 5 random characters. It is an error
// (apierrors.IsAlreadyExists) if an object of that namespace and name
// exists, one (apierrors.IsInvalid) if obj has no name, or a name or
// namespace that is not a path segment (".", "..", or with a "/" or "%"),
// and one (apierrors.IsInternalError, as kube-apiserver answers) if obj
// has a resourceVersion that is a number other than 0 (kube-apiserver's
// storage parses it so): an object read back must have it cleared to be
// created again. An object that cannot be copied is an error
// (apierrors.IsBadRequest): an *unstructured.Unstructured may hold only
// the values JSON decodes to (int64, not int).
func (s *Source[T]) Create(obj T) (T, error) {
	var zero T
	if isNil(obj) {
		return zero, errors.New("listwatchtest: Create: the object is nil, or embeds its metadata through a nil pointer")
	}
	obj, err := copyIn(obj)
	if err != nil {
		return zero, err
	}
	asStored(obj)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.create(obj)
}

// create is Create's, of obj, a copy of its own. s.mu is held.
func (s *Source[T]) create(obj T) (T, error) {
	var zero T
	if obj.GetName() == "" && obj.GetGenerateName() != "" {
		// A name that is taken is made again, as kube-apiserver makes it
		// again (RetryGenerateName): the caller gave no name to conflict.
		for taken := true; taken; {
			s.generated++
			obj.SetName(strategy.GenerateNameBase(obj.GetGenerateName()) + strconv.FormatInt(int64(s.generated), 36))
			_, taken = s.src.Get(objkey.Key(obj))
		}
	}
	if obj.GetName() == "" {
		return zero, apierrors.NewInvalid(s.kind, "", field.ErrorList{
			field.Required(field.NewPath("metadata", "name"), "name or generateName is required"),
		})
	}
	for _, f := range []struct{ path, value string }{{"name", obj.GetName()}, {"namespace", obj.GetNamespace()}} {
		if f.value == "" {
			continue
		}
		if msgs := content.IsPathSegmentName(f.value); len(msgs) > 0 {
			return zero, apierrors.NewInvalid(s.kind, obj.GetName(), field.ErrorList{
				field.Invalid(field.NewPath("metadata", f.path), f.value, strings.Join(msgs, "; ")),
			})
		}
	}
	if strategy.RefusedOnCreate(obj.GetResourceVersion()) {
		return zero, apierrors.NewInternalError(errors.New("resourceVersion should not be set on objects to be created"))
	}
	if _, ok := s.src.Get(objkey.Key(obj)); ok {
		return zero, apierrors.NewAlreadyExists(s.resource, obj.GetName())
	}
	obj.SetCreationTimestamp(metav1.Now().Rfc3339Copy())
	obj.SetDeletionTimestamp(nil)
	obj.SetDeletionGracePeriodSeconds(nil)
	obj.SetGeneration(0)
	if s.generations {
		obj.SetGeneration(1)
	}
	return deepCopy(s.src.Create(obj)), nil
}

// Update replaces the stored object of obj's namespace and name with a
// copy of obj and returns a copy of what it stored, with its new
// resourceVersion. If obj has a resourceVersion, it must be the stored
// object's (else apierrors.IsConflict: someone else wrote it since),
// compared as kube-apiserver's storage compares them, as numbers ("007"
// is 7, "0" is none); one without updates whatever is stored, except where kube-apiserver refuses
// that (apierrors.IsInvalid): for custom resources (an Unstructured of a
// group kube-apiserver does not serve itself, given WithResource: one
// under k8s.io too, as gateway.networking.k8s.io), Leases,
// PodDisruptionBudgets, webhook configurations and the other kinds whose
// strategy does not allow an unconditional update. It is an error (apierrors.IsNotFound)
// if no such object exists, and one (apierrors.IsBadRequest) if obj cannot
// be copied, as with Create. A UID in obj is checked first, as
// kube-apiserver checks it, a precondition of the write: another than the
// stored object's, or any when none is stored, is apierrors.IsConflict.
//
// Of the resources kube-apiserver creates on an update of a missing
// object (its strategy's AllowCreateOnUpdate: Services, Endpoints, Events
// of both groups, LimitRanges, Leases, LeaseCandidates, Roles,
// ClusterRoles, RoleBindings, ClusterRoleBindings, RuntimeClasses; not
// custom resources), Update of a missing object creates it instead, as
// Create does (a new UID, creationTimestamp, generation 1 and
// resourceVersion; watchers get it as ADDED), whatever resourceVersion
// obj names (a number, or none, even of a Lease), as the server answers
// such a PUT with 201 Created; with a UID in obj, it is the Conflict
// above.
//
// The server's fields are kept, whatever obj has: the UID (an empty one
// is the stored one; another is apierrors.IsConflict, as kube-apiserver
// makes the UID a precondition of the write), the creationTimestamp, the
// deletionTimestamp and deletionGracePeriodSeconds (setting them on an
// object not being deleted is apierrors.IsInvalid: only Delete sets
// them), and the apiVersion and kind of a typed object (its TypeMeta, as
// the server stores its own). Of a resource with a status subresource
// (see NewSource), the status is the stored one, whatever obj's is, as
// kube-apiserver's strategies keep it: UpdateStatus writes it; so are the
// spec.finalizers of a *corev1.Namespace and the spec of a
// *certificatesv1.CertificateSigningRequest (of the typed objects). The
// metadata.generation is the stored one,
// plus 1 if anything but metadata and status changed, or a Deployment's
// annotations, or the status of a custom resource without a status
// subresource (0 for a type without one). An Update that changes nothing
// else (by equality.Semantic.DeepEqual, for any Go type) writes nothing,
// as kube-apiserver's: it returns a copy of the stored object, whose
// resourceVersion stays, and watchers get no event. (Of an
// *unstructured.Unstructured, an empty map in its metadata, such as
// "labels": {}, counts as a change; the server drops it, and writes
// nothing.)
//
// Of an object being deleted (see Delete), an Update may not add a
// finalizer (apierrors.IsInvalid), and one that leaves it none removes
// it, as kube-apiserver does: watchers get a DELETED event with the
// object as it was stored (its finalizers still listed), at a new
// resourceVersion. Update returns obj as the server answers such a PUT:
// with no finalizers, at the resourceVersion it replaced.
func (s *Source[T]) Update(obj T) (T, error) {
	var zero T
	if isNil(obj) {
		return zero, errors.New("listwatchtest: Update: the object is nil, or embeds its metadata through a nil pointer")
	}
	obj, err := copyIn(obj)
	if err != nil {
		return zero, err
	}
	asStored(obj)
	s.mu.Lock()
	defer s.mu.Unlock()
	if created, ok, err := s.createOnUpdate(obj); ok {
		return created, err
	}
	old, err := s.replaced(obj)
	if err != nil {
		return zero, err
	}
	// Once set, an update keeps the marks when it sends none, or another
	// deletionTimestamp (rest.BeforeUpdate), below.
	if errs := strategy.DeletionMarkErrors(obj, old); len(errs) > 0 {
		return zero, apierrors.NewInvalid(s.kind, obj.GetName(), errs)
	}
	obj.SetUID(old.GetUID())
	obj.SetCreationTimestamp(old.GetCreationTimestamp())
	obj.SetDeletionTimestamp(copyOf(old.GetDeletionTimestamp()))
	obj.SetDeletionGracePeriodSeconds(copyOf(old.GetDeletionGracePeriodSeconds()))
	if _, ok := any(obj).(*unstructured.Unstructured); !ok {
		obj.GetObjectKind().SetGroupVersionKind(old.GetObjectKind().GroupVersionKind())
	}
	if s.status {
		setStatus(obj, deepCopy(old)) // as the strategies' PrepareForUpdate: status only through /status
	}
	strategy.KeepOnUpdate(obj, old)
	obj.SetGeneration(s.nextGeneration(old, obj))
	obj.SetResourceVersion(old.GetResourceVersion())
	switch {
	case semantic.Equal(old, obj):
		return deepCopy(old), nil // nothing to write, as kube-apiserver's GuaranteedUpdate finds
	case obj.GetDeletionTimestamp() != nil && len(obj.GetFinalizers()) == 0:
		// The last finalizer is gone: kube-apiserver deletes the object
		// as it was stored, instead of writing the update.
		// It answers with the object of the request, as the server's
		// deleteWithoutFinalizers does ("clients are expecting an updated
		// object if a PUT succeeded").
		s.src.Delete(objkey.Key(old))
		return deepCopy(obj), nil
	}
	return deepCopy(s.src.Update(obj)), nil
}

// createOnUpdate creates obj, as Create does, if no object of its name is
// stored and the resource is one kube-apiserver creates on an update
// (kinds.CreateOnUpdate), and reports whether it did so or failed to. An
// obj with a UID is left to replaced, whose precondition the missing
// object fails (apierrors.IsConflict). As the generic store's Update does,
// it parses obj's resourceVersion (one that is not a number: the 500
// replaced gives), and then creates obj whatever number it names, before
// it would ask for one (a Lease is created without one). s.mu is held.
func (s *Source[T]) createOnUpdate(obj T) (T, bool, error) {
	var zero T
	if !kinds.CreateOnUpdate(s.resource) || obj.GetName() == "" ||
		objkey.CheckSlashes(obj.GetNamespace(), obj.GetName()) != nil {
		return zero, false, nil
	}
	if _, ok := s.src.Get(objkey.Key(obj)); ok || obj.GetUID() != "" {
		return zero, false, nil // replaced's, and its uid's precondition
	}
	if _, err := strategy.WriteVersion(obj.GetResourceVersion()); err != nil {
		return zero, true, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
			Code: http.StatusInternalServerError, Message: err.Error()}}
	}
	obj.SetResourceVersion("") // the storage clears it (PrepareObjectForStorage)
	created, err := s.create(obj)
	return created, true, err
}

// replaced returns the stored object that obj is to replace, after the
// checks kube-apiserver makes of a PUT to it or to its status: that it
// exists (apierrors.IsNotFound), that obj's resourceVersion, if it has
// one, is the stored one (apierrors.IsConflict), that it has one if the
// resource requires it (apierrors.IsInvalid), and that its UID, if it has
// one, is the stored one (apierrors.IsConflict). A resourceVersion is
// compared as the number kube-apiserver's storage parses: "0" is none,
// "007" is 7, and one that is not a number fails with its parse error, a
// 500 without a reason (as kube-apiserver answers it).
// s.mu is held.
func (s *Source[T]) replaced(obj T) (T, error) {
	var zero T
	if objkey.CheckSlashes(obj.GetNamespace(), obj.GetName()) != nil {
		return zero, apierrors.NewNotFound(s.resource, obj.GetName())
	}
	old, ok := s.src.Get(objkey.Key(obj))
	if err := s.uidPrecondition(obj, old, ok); err != nil {
		return zero, err
	}
	if !ok {
		return zero, apierrors.NewNotFound(s.resource, obj.GetName())
	}
	rv, err := strategy.WriteVersion(obj.GetResourceVersion())
	if err != nil {
		return zero, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
			Code: http.StatusInternalServerError, Message: err.Error()}}
	}
	if stored, _ := strategy.WriteVersion(old.GetResourceVersion()); rv != 0 && rv != stored {
		return zero, apierrors.NewConflict(s.resource, obj.GetName(),
			fmt.Errorf("the object has been modified; please apply your changes to the latest version (resourceVersion %s, not %s) and try again", old.GetResourceVersion(), obj.GetResourceVersion()))
	}
	if rv == 0 && s.conditional {
		return zero, apierrors.NewInvalid(schema.GroupKind{Group: s.resource.Group, Kind: s.resource.Resource}, obj.GetName(), field.ErrorList{
			field.Invalid(field.NewPath("metadata", "resourceVersion"), int64(0), "must be specified for an update"),
		})
	}
	return old, nil
}

// uidPrecondition is strategy.UIDPrecondition of obj against stored (if
// ok: an object is stored).
func (s *Source[T]) uidPrecondition(obj, stored T, ok bool) error {
	var was types.UID
	if ok {
		was = stored.GetUID()
	}
	return strategy.UIDPrecondition(s.resource, obj.GetName(), obj.GetUID(), was)
}

// copyOf returns a pointer to a copy of *p, or nil: a stored object's
// fields are not shared with another.
func copyOf[V any](p *V) *V {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// nextGeneration returns the generation obj gets when it replaces old: 0
// for a type without one, else old's, plus 1 if obj's content other than
// metadata and status differs from old's, or its status, of a custom
// resource without a status subresource (as the custom resource
// strategy's PrepareForUpdate has it).
func (s *Source[T]) nextGeneration(old, obj T) int64 {
	switch {
	case !s.generations:
		return 0
	case generation.SpecChanged(s.kind, old, obj),
		!s.status && !kinds.BuiltIn(s.resource.Group) && generation.CustomStatusChanged(old, obj):
		return old.GetGeneration() + 1
	}
	return old.GetGeneration()
}

// Delete removes the object namespace/name (namespace "" for a
// cluster-scoped one). Watchers get a DELETED event with its last state.
// It is an error (apierrors.IsNotFound) if no such object exists.
//
// An object with finalizers is not removed but marked, as kube-apiserver
// marks it: its metadata.deletionTimestamp is set to now, to the second,
// its deletionGracePeriodSeconds to 0 and its generation, if it has one,
// goes up by 1, in a write that watchers get as MODIFIED. It is removed
// when an Update takes its last finalizer away (see Update). Deleting an
// object already marked changes nothing and is no error. The graceful
// deletion of Pods (the kubelet's part) is not simulated: a Pod without
// finalizers is removed at once.
//
// Delete deletes as a DELETE with propagationPolicy Background does, the
// default of most kinds: the object goes (or is marked, as above) and its
// dependents are left to a garbage collector, which a Source does not
// run. For a batch/v1 Job and a core/v1 ReplicationController, whose
// default policy is Orphan (their strategies' DefaultGarbageCollectionPolicy),
// kube-apiserver's DELETE without options instead adds the "orphan"
// finalizer and sets the deletionTimestamp (watchers get MODIFIED), and
// the object goes (DELETED) once the garbage collector has orphaned its
// dependents and removed the finalizer; a Source, in which nothing would
// remove it, deletes them as any other kind.
func (s *Source[T]) Delete(namespace, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if objkey.CheckSlashes(namespace, name) != nil { // no such object: its key would be another's
		return apierrors.NewNotFound(s.resource, name)
	}
	key := objkey.Of(namespace, name)
	obj, ok := s.src.Get(key)
	if !ok {
		return apierrors.NewNotFound(s.resource, name)
	}
	switch {
	case len(obj.GetFinalizers()) == 0:
		s.src.Delete(key)
	case obj.GetDeletionTimestamp() == nil:
		obj = deepCopy(obj)
		now, zero := metav1.Now().Rfc3339Copy(), int64(0)
		obj.SetDeletionTimestamp(&now)
		obj.SetDeletionGracePeriodSeconds(&zero)
		if g := obj.GetGeneration(); g > 0 {
			obj.SetGeneration(g + 1)
		}
		s.src.Update(obj)
	}
	return nil
}

// Get returns a copy of the object namespace/name, if it exists.
func (s *Source[T]) Get(namespace, name string) (T, bool) {
	var zero T
	if objkey.CheckSlashes(namespace, name) != nil { // no such object: its key would be another's
		return zero, false
	}
	obj, ok := s.src.Get(objkey.Of(namespace, name))
	if !ok {
		return zero, false
	}
	return deepCopy(obj), true
}

// Objects returns copies of the stored objects, sorted by key
// ("namespace/name", or "name").
func (s *Source[T]) Objects() []T {
	objs := s.src.Objects()
	for i, obj := range objs {
		objs[i] = deepCopy(obj)
	}
	return objs
}

// ResourceVersion returns the resourceVersion of the last write, "0"
// before the first.
func (s *Source[T]) ResourceVersion() string { return s.src.ResourceVersion() }

// Requests returns how many List and Watch calls the Source has served
// (or failed), for tests that check when a reflector relists. A streaming
// list (the reflector's default way to list, reflector.Auto) is a Watch:
// count relists by lists only after RefuseStreaming, or with
// reflector.ListWatch.
func (s *Source[T]) Requests() (lists, watches int64) {
	return s.src.Lists.Load(), s.src.Watches.Load()
}

// CloseWatches ends every open watch cleanly, as kube-apiserver does when
// a watch's timeout passes, after a BOOKMARK at the Source's resourceVersion
// to each watch that allows them (kube-apiserver sends one then): the
// reflector watches again from there. A watch that ends less than a second
// after it opened without moving the resourceVersion counts as a failure
// (a server that ends watches at once must not be asked again in a tight
// loop), so the next one waits for the reflector's backoff: tests that
// fault often set a short one (informer.WithBackoff for a Factory,
// reflector.WithBackoff through informer.WithReflectorOptions).
func (s *Source[T]) CloseWatches() { s.src.CloseWatches() }

// Compact forgets the history of events, as etcd's compaction does: a
// watch from an older resourceVersion than the last write's now gets 410
// Gone, and the reflector lists again. A reflector that is caught up
// watches from the last write's and is not affected (after CloseWatches,
// also one of a view that writes outside it did not move); one that is behind
// (its watch failed before writes it has not seen) is. To make a
// reflector list again regardless, FailWatch(apierrors.NewGone(...)) and
// CloseWatches. The next page of a paged list under way is 410 Expired too,
// as a server's is once etcd has compacted away the state its continue
// token names (also for a list of the newest state, which etcd's
// compaction at that revision would still serve: so that a test can make
// a paged list expire), with kube-apiserver's message and, in the Status's metadata.continue, a token that goes on
// from the current state (an inconsistent list, as the server's).
//
// The Source keeps every event until Compact (as etcd keeps its history
// until compacted): a long test with many writes calls it now and then,
// or the history grows with every write.
func (s *Source[T]) Compact() { s.src.Compact() }

// FailList makes the next List calls fail with errs, one each: for
// example apierrors.NewForbidden, or apierrors.NewTooManyRequests. A nil
// error in errs is skipped: it fails no call.
func (s *Source[T]) FailList(errs ...error) { s.src.FailList(errs...) }

// FailWatch makes the next Watch calls fail with errs, one each. A
// streaming list is a Watch. A nil error in errs is skipped: it fails no
// call.
func (s *Source[T]) FailWatch(errs ...error) { s.src.FailWatch(errs...) }

// PendingFailures returns how many of the errors given to FailList and
// FailWatch are still to be returned: a test waits for none to be left
// before it checks what a reflector does without faults.
func (s *Source[T]) PendingFailures() (lists, watches int) { return s.src.PendingFailures() }

// RefuseStreaming makes the Source refuse streaming lists (400 Bad
// Request), as a server without them does: the reflector, in its default
// mode, falls back to LIST and WATCH.
func (s *Source[T]) RefuseStreaming() { s.src.RefuseStreaming() }

// List is reflector.ListerWatcher's: it serves one page of a list. As a
// server does, it cuts a list's first page from the current state and its
// next pages from the same state, whatever was written since: those
// writes come in the watch from the list's resourceVersion. Each object is
// a copy of its own: what the caller does to it (a transform) changes
// nothing in the Source.
func (s *Source[T]) List(ctx context.Context, opts reflector.ListOptions, add func(T) error) (reflector.ListMeta, error) {
	return copies[T]{s.src}.List(ctx, opts, add)
}

// Watch is reflector.ListerWatcher's: it streams the events after
// opts.ResourceVersion, or, if opts.SendInitialEvents or the
// resourceVersion is "" or "0", the current state as ADDED events and
// then the events, as kube-apiserver does. A streaming list
// (SendInitialEvents, or "" or "0" without a ResourceVersionMatch, which
// kube-apiserver v1.37 makes one, unless RefuseStreaming) marks the end
// of the state with the initial-events-end BOOKMARK if
// opts.AllowBookmarks. If
// opts.TimeoutSeconds > 0, the stream ends after that long, as
// CloseWatches ends it. Each event's object is a copy of its own, as in
// List.
func (s *Source[T]) Watch(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[T], error) {
	return copies[T]{s.src}.Watch(ctx, opts)
}

// For returns a reflector.ListerWatcher of the objects target selects, as
// kube-apiserver serves a LIST or WATCH in target's namespace with its
// label and field selectors: lists and streaming lists hold only those
// objects, and a watch tells an object that comes to match as ADDED and
// one that stops matching as DELETED, with its previous state. Field
// selectors may name the fields kube-apiserver (v1.37) serves for the
// resource, with the values its registries compute: metadata.name, and
// metadata.namespace but for nodes, namespaces and certificate signing
// requests; spec.nodeName (or spec.host), status.phase, status.podIP (the
// first of status.podIPs) and a few more for pods; involvedObject.name,
// reason, type and more for events; spec.type and spec.clusterIP for
// services; type for secrets; spec.unschedulable for nodes;
// status.replicas for replication controllers; status.successful for
// jobs. Another field, or a selector that does not parse, is an error
// (apierrors.IsBadRequest), which the apiserver gives when the informer
// lists and For gives at once. An *unstructured.Unstructured is read
// into its k8s.io/api type for its fields, as the server reads it (one
// that does not fit is selected by no field selector); a type that does
// not hold a field the selector names, such as
// *metav1.PartialObjectMetadata's spec.nodeName, is an error, as the
// server selects by the whole object. target's Resource and Kind are
// not looked at (a Source is one resource), nor is whether the resource
// is namespaced: a namespace asked of nodes selects none, where the
// apiserver answers 404, and an object written with a namespace keeps it,
// where the apiserver clears a cluster-scoped object's (write nodes
// without one). Requests and faults are the Source's:
// FailList, FailWatch, Compact and CloseWatches act on its views too.
//
// A Factory's informers of type T get views of a Source for their Targets
// with informer.WithListerWatcherFor[T](src.For).
func (s *Source[T]) For(target reflector.Target) (reflector.ListerWatcher[T], error) {
	match, err := matcher[T](target, s.resource)
	if err != nil {
		return nil, err
	}
	return copies[T]{s.src.Filtered(match)}, nil
}

// matcher returns what target selects among the objects of resource, as a
// function.
func matcher[T reflector.Object](target reflector.Target, resource schema.GroupResource) (func(T) bool, error) {
	ls, err := labels.Parse(target.LabelSelector)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("unable to parse label selector %q: %v", target.LabelSelector, err))
	}
	fs, err := fields.ParseSelector(target.FieldSelector)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("unable to parse field selector %q: %v", target.FieldSelector, err))
	}
	fs, err = fs.Transform(func(label, value string) (string, string, error) {
		return kinds.ConvertFieldLabel(resource, label, value)
	})
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if err := holds[T](resource, fs); err != nil {
		return nil, err
	}
	ns := target.Namespace
	return func(obj T) bool {
		if (ns != "" && obj.GetNamespace() != ns) || !ls.Matches(labels.Set(obj.GetLabels())) {
			return false
		}
		if fs.Empty() {
			return true
		}
		set, err := kinds.FieldsOf(resource, obj)
		return err == nil && fs.Matches(set)
	}, nil
}

// holds returns an error if the field selector fs names a field that
// kube-apiserver computes for the objects of resource but that objects of
// type T do not hold (a PartialObjectMetadata's spec.nodeName): the server
// selects by the whole object, and a Source that took the field to be
// empty would select wrongly, without a word. (Where T is an interface,
// each object's own type decides, and a field it does not hold is empty.)
func holds[T reflector.Object](resource schema.GroupResource, fs fields.Selector) error {
	typ := reflect.TypeFor[T]()
	if typ.Kind() != reflect.Pointer || typ.Elem().Kind() != reflect.Struct {
		return nil
	}
	held, err := kinds.FieldsOf(resource, reflect.New(typ.Elem()).Interface().(T))
	if err != nil {
		return fmt.Errorf("listwatchtest: %w", err)
	}
	for _, r := range fs.Requirements() {
		if _, ok := held[r.Field]; !ok && kinds.Selects(resource, r.Field) {
			return fmt.Errorf("listwatchtest: cannot select %s by %s: a %s does not hold it, and kube-apiserver selects by the whole object",
				resource, r.Field, typ)
		}
	}
	return nil
}

// copies is a ListerWatcher that hands out copies of lw's objects: what
// the caller does to them (a transform) changes nothing in the Source.
type copies[T reflector.Object] struct{ lw reflector.ListerWatcher[T] }

func (c copies[T]) List(ctx context.Context, opts reflector.ListOptions, add func(T) error) (reflector.ListMeta, error) {
	switch {
	case ctx == nil:
		return reflector.ListMeta{}, errors.New("listwatchtest: List: nil context")
	case add == nil:
		return reflector.ListMeta{}, errors.New("listwatchtest: List: the add function is nil")
	}
	return c.lw.List(ctx, opts, func(obj T) error { return add(deepCopy(obj)) })
}

func (c copies[T]) Watch(ctx context.Context, opts reflector.WatchOptions) (reflector.Watcher[T], error) {
	if ctx == nil { // its Watcher's Next would panic once its queue is empty
		return nil, errors.New("listwatchtest: Watch: nil context")
	}
	w, err := c.lw.Watch(ctx, opts)
	if err != nil || isNil(w) {
		// A nil Watcher stays nil, for the caller to see, not one that
		// panics in Next.
		return nil, err
	}
	return copying[T]{w}, nil
}

// copying is a Watcher whose events carry copies of the Source's objects.
type copying[T reflector.Object] struct{ reflector.Watcher[T] }

func (w copying[T]) Next() (reflector.Event[T], error) {
	ev, err := w.Watcher.Next()
	if err == nil && !isNil(ev.Object) {
		ev.Object = deepCopy(ev.Object)
	}
	return ev, err
}

func deepCopy[T reflector.Object](obj T) T { return obj.DeepCopyObject().(T) }

// copyIn copies an object given to be stored. A panic in DeepCopyObject is
// an error: Unstructured's panics on a value JSON does not decode to, such
// as a Go int in a hand-built object ("replicas": 3), where it must be
// int64. What the Source stores was copied once, so copies of it cannot
// panic.
func copyIn[T reflector.Object](obj T) (c T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = apierrors.NewBadRequest(fmt.Sprintf(
				"listwatchtest: %T %q cannot be copied: %v; it may hold only the values JSON decodes to: string, int64, float64, bool, nil, and map[string]any and []any of them",
				obj, obj.GetName(), r))
		}
	}()
	return deepCopy(obj), nil
}

// isNil reports a nil obj, a nil pointer in it, or a struct embedding its
// metadata through a nil pointer (a struct{ *corev1.Pod } without its Pod),
// whose GetName would panic.
func isNil(obj any) bool { return objkey.IsNil(obj) }

// Option configures a Source.
type Option func(*options)

// options are what Options set.
type options struct {
	names
	statusSubresource bool // of an *unstructured.Unstructured: see WithStatusSubresource
}

// names is what a Source's errors call its objects.
type names struct {
	resource schema.GroupResource // AlreadyExists, NotFound, Conflict
	kind     schema.GroupKind     // Invalid
}

// WithResource names the objects in errors, as the apiserver names them
// (widgets.example.com "w" not found), for a type outside k8s.io/api, such
// as *unstructured.Unstructured.
func WithResource(resource schema.GroupResource, kind string) Option {
	return func(o *options) {
		o.resource, o.kind = resource, schema.GroupKind{Group: resource.Group, Kind: kind}
	}
}

// WithStatusSubresource says that the resource of a Source of
// *unstructured.Unstructured has a status subresource, as a CRD with
// subresources.status does: Update keeps the stored status and
// UpdateStatus writes it. Without it, Update writes the status with the
// rest, and UpdateStatus is an error, as for a CRD without one. Give it
// also for an Unstructured of a built-in kind that has one (pods,
// deployments). For other types it changes nothing: a Source of a type
// with a Status field always has the subresource (see NewSource).
func WithStatusSubresource() Option {
	return func(o *options) { o.statusSubresource = true }
}

// newEmpty returns a pointer to a new elem whose exported embedded structs
// held through pointers (a struct{ *corev1.Pod }) are allocated, so that
// its metadata can be set: a bookmark is made of one. They are allocated
// breadth first, so the shallowest ones (where Go finds promoted methods)
// come first; one of a type already on the way down to it is not (types
// may embed pointers to one another), nor any past maxEmbeddedFill.
func newEmpty(elem reflect.Type) reflect.Value {
	type embedded struct {
		v     reflect.Value
		above []reflect.Type // the struct types on the way down to v
	}
	root := reflect.New(elem)
	next := []embedded{{root.Elem(), nil}}
	budget := maxEmbeddedFill
	for len(next) > 0 && budget > 0 {
		e := next[0]
		next = next[1:]
		above := append(slices.Clip(e.above), e.v.Type())
		for i := range e.v.NumField() {
			f, fv := e.v.Type().Field(i), e.v.Field(i)
			switch {
			case !f.Anonymous || !fv.CanSet():
			case f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct:
				if budget == 0 || slices.Contains(above, f.Type.Elem()) {
					continue
				}
				budget--
				p := reflect.New(f.Type.Elem())
				fv.Set(p)
				next = append(next, embedded{p.Elem(), above})
			case f.Type.Kind() == reflect.Struct:
				next = append(next, embedded{fv, above})
			}
		}
	}
	return root
}

// maxEmbeddedFill is how many embedded structs newEmpty allocates at most:
// types that embed pointers to many others would otherwise make it
// allocate every path through them.
const maxEmbeddedFill = 256
