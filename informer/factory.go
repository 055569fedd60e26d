package informer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/listwatch/listwatch/indexer"
	"github.com/listwatch/listwatch/internal/kinds"
	"github.com/listwatch/listwatch/reflector"
)

// Factory hands out one shared informer per Go type and Target (resource,
// kind, namespace and selectors), all talking to one apiserver over one
// HTTP client (or, for the types WithListerWatcher names, to the
// ListerWatcher it gives), and starts, waits for and stops them together.
// Create it with NewFactory; it is safe for concurrent use.
type Factory struct {
	client *reflector.Client
	opt    factoryOptions

	mu        sync.Mutex
	informers map[factoryKey]*entry
	order     []*entry // in creation order, for stable error messages
	shutdown  bool
	wg        sync.WaitGroup
}

// runner is what the Factory needs of a SharedIndexInformer of any type.
type runner interface {
	Run(ctx context.Context) error
	HasSynced() bool
	Synced() <-chan struct{}
	Stopped() <-chan struct{}
	LastError() error
	Name() string
}

type entry struct {
	informer  runner
	cancel    context.CancelFunc // set once started
	ctx       context.Context    // the informer's run, once started
	nilStart  bool               // a Start with a nil context did not start it
	elsewhere bool               // the Factory's Run of it returned ErrStarted
}

// ended says whether the entry's informer has stopped for good, or is
// stopping: its Run has returned, or the Factory ran it and the context of
// that Start has ended. One run elsewhere (the Factory's Run returned
// ErrStarted, at once) ends when that run does. f.mu is held.
func (e *entry) ended() bool {
	select {
	case <-e.informer.Stopped():
		return true
	default:
		return e.ctx != nil && e.ctx.Err() != nil && !e.elsewhere
	}
}

type factoryKey struct {
	typ    reflect.Type
	target reflector.Target
}

// NewFactory returns a Factory for the apiserver that cfg describes. It
// fails if cfg cannot make a client (bad TLS material, a bearer token over
// plain http without AllowBearerOverHTTP, ...), or if WithListMode is
// given a Mode that is none of reflector's. cfg may be nil if every
// type the Factory is asked for has a ListerWatcher of its own
// (WithListerWatcher, WithListerWatcherFor), as in a unit test.
func NewFactory(cfg *reflector.Config, opts ...FactoryOption) (*Factory, error) {
	o := factoryOptions{logger: slog.Default()}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	switch o.mode {
	case reflector.Auto, reflector.ListWatch, reflector.WatchList:
	default:
		return nil, fmt.Errorf("informer factory: WithListMode(%d): not reflector.Auto, ListWatch or WatchList", int(o.mode))
	}
	f := &Factory{opt: o, informers: map[factoryKey]*entry{}}
	switch {
	case cfg == nil && len(o.listerWatchers) > 0:
		return f, nil
	case cfg == nil:
		return nil, errors.New("informer factory: nil Config: pass one (reflector.LoadKubeconfig, reflector.InClusterConfig), " +
			"or give the types a ListerWatcher of their own (WithListerWatcher, WithListerWatcherFor), as in a unit test")
	}
	client, err := reflector.NewClient(cfg, reflector.WithClientLogger(o.logger))
	if err != nil {
		return nil, err
	}
	f.client = client
	return f, nil
}

// ErrShutdown is returned by For, for an informer it would have to create,
// once the Factory is shut down: it would never run.
var ErrShutdown = errors.New("informer factory shut down")

// For returns the factory's informer for objects of type T in target,
// creating it on first use. T is a k8s.io/api type such as *corev1.Pod (its
// resource is then found from the type), *unstructured.Unstructured or
// *metav1.PartialObjectMetadata (target.Resource must then be set), or a
// type of your own with target.Resource and target.Kind set. Targets that
// differ only in what may be left out for a k8s.io/api type (its Resource,
// its Kind) share one informer. Informers created after Start run at the
// next Start. An informer that has stopped for good (the context of the
// Start that ran it ended, or a Run of it elsewhere returned) is replaced:
// For makes a new one in its place, which the next Start runs. Whoever
// holds the old one holds a stopped informer (its handlers are told
// nothing more), and asks For again.
//
// Each informer's cache has the namespace index ([indexer.NamespaceIndex]),
// as client-go's factories give theirs: Lister().ByNamespace and
// Indexer().ByIndex(indexer.NamespaceIndex, ns) look up one namespace
// without going through the whole cache.
func For[T reflector.Object](f *Factory, target reflector.Target) (*SharedIndexInformer[T], error) {
	if f == nil {
		return nil, fmt.Errorf("informer factory: an informer of %v: the Factory is nil", reflect.TypeFor[T]())
	}
	if r := target.Resource; r.Resource == "" && r != (schema.GroupVersionResource{}) {
		// NewListerWatcher's error too; a ListerWatcher of the Factory's
		// own would take it, as an informer apart from the type's own.
		return nil, fmt.Errorf("informer factory: Target.Resource %s has a group or version but no resource: give all three, or none", r.GroupVersion())
	}
	key := factoryKey{typ: reflect.TypeFor[T](), target: canonical[T](target)}
	switch inf, err := f.existing(key); {
	case err != nil:
		return nil, err
	case inf != nil:
		return inf.(*SharedIndexInformer[T]), nil
	}
	// Outside the lock: a WithListerWatcherFor function is the caller's
	// code, which may itself ask the Factory for an informer.
	lw, name, err := listerWatcherFor[T](f, target)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	old, ok := f.informers[key]
	if ok && (!old.ended() || f.shutdown) {
		return old.informer.(*SharedIndexInformer[T]), nil // made meanwhile; lw is not used
	}
	if f.shutdown {
		return nil, ErrShutdown
	}
	refl := []reflector.Option[T]{reflector.WithMode[T](f.opt.mode)}
	if f.opt.minWatchTimeout > 0 {
		refl = append(refl, reflector.WithMinWatchTimeout[T](f.opt.minWatchTimeout))
	}
	if f.opt.relistInterval > 0 {
		refl = append(refl, reflector.WithRelistInterval[T](f.opt.relistInterval))
	}
	if f.opt.backoffSet {
		refl = append(refl, reflector.WithBackoff[T](f.opt.backoffInitial, f.opt.backoffMax))
	}
	if f.opt.pageSizeSet {
		refl = append(refl, reflector.WithPageSize[T](f.opt.pageSize))
	}
	if f.opt.sharing {
		refl = append(refl, reflector.WithSharing[T]())
	}
	opts := []Option[T]{
		WithName[T](name),
		WithIndexers(indexer.Indexers[T]{indexer.NamespaceIndex: indexer.NamespaceIndexFunc[T]}),
		WithLogger[T](f.opt.logger),
		WithResyncPeriod[T](f.opt.resync),
		WithReflectorOptions(refl...),
	}
	if m := f.opt.mutations; m != nil {
		opts = append(opts, WithMutationDetector[T](m.period, m.report))
	}
	if f.opt.handlerErrors != nil {
		opts = append(opts, WithHandlerErrorHandler[T](f.opt.handlerErrors))
	}
	inf := New[T](lw, opts...)
	e := &entry{informer: inf}
	f.informers[key] = e
	if i := slices.Index(f.order, old); old != nil && i >= 0 {
		f.order[i] = e // in place of the one that stopped for good
	} else {
		f.order = append(f.order, e)
	}
	return inf, nil
}

// existing returns the informer of key if the Factory has it and it has
// not ended (or the Factory is shut down: it makes no new one), or
// ErrShutdown if it will make no more.
func (f *Factory) existing(key factoryKey) (informer any, _ error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.informers[key]; ok && (!e.ended() || f.shutdown) {
		return e.informer, nil
	}
	if f.shutdown {
		return nil, ErrShutdown
	}
	return nil, nil
}

// listerWatcherFor returns the ListerWatcher of an informer of T in target
// and the informer's name: the one WithListerWatcher gave for T, or an HTTP
// one over the Factory's client.
func listerWatcherFor[T reflector.Object](f *Factory, target reflector.Target) (reflector.ListerWatcher[T], string, error) {
	if lwFor, ok := f.opt.listerWatchers[reflect.TypeFor[T]()]; ok {
		switch any(*new(T)).(type) {
		case *unstructured.Unstructured, *metav1.PartialObjectMetadata:
			if target.Resource.Resource == "" {
				return nil, "", fmt.Errorf("informer factory: an informer of %v needs Target.Resource", reflect.TypeFor[T]())
			}
		}
		name := reflect.TypeFor[T]().String()
		if _, gvr, err := kinds.Of[T](); err == nil {
			name = describe[T](gvr, target)
		} else if target.Resource.Resource != "" {
			name = describe[T](target.Resource, target)
		}
		lw, err := lwFor.(func(reflector.Target) (reflector.ListerWatcher[T], error))(target)
		switch {
		case err != nil:
			return nil, "", fmt.Errorf("informer factory: the ListerWatcher of %s: %w", name, err)
		case lw == nil || isNilPointer(lw):
			return nil, "", fmt.Errorf("informer factory: WithListerWatcherFor gave no ListerWatcher for %s", name)
		}
		return lw, name, nil
	}
	if f.client == nil {
		return nil, "", fmt.Errorf("informer factory: no Config, and no ListerWatcher for %v (WithListerWatcher)", reflect.TypeFor[T]())
	}
	lw, err := reflector.NewListerWatcher[T](f.client, target, f.opt.http...)
	if err != nil {
		return nil, "", fmt.Errorf("informer factory: an informer of %v: %w", reflect.TypeFor[T](), err)
	}
	return lw, describe[T](lw.Resource(), target), nil
}

// canonicalLabels spells a parsed label selector one way: its parser sorts
// requirements by key only, keeping two on one key ("app!=x,app!=y") in
// the order written, and keeps "==" as written; fields.ParseSelector
// sorts whole terms and writes "=". Here, "==" is "=" and the requirements
// are sorted whole, once each.
func canonicalLabels(sel labels.Selector) string {
	reqs, _ := sel.Requirements()
	spelled := make([]string, 0, len(reqs))
	for _, r := range reqs {
		if r.Operator() == selection.DoubleEquals {
			if eq, err := labels.NewRequirement(r.Key(), selection.Equals, r.Values().UnsortedList()); err == nil {
				r = *eq
			}
		}
		spelled = append(spelled, r.String())
	}
	slices.Sort(spelled)
	return strings.Join(slices.Compact(spelled), ",")
}

// canonical fills in the resource and kind that a target for a k8s.io/api
// type may leave out, so that Target{} and Target{Resource: pods} share one
// informer of *corev1.Pod.
func canonical[T reflector.Object](t reflector.Target) reflector.Target {
	// Selectors as their parsers spell them ("b=2, a=1" is "a=1,b=2"), so
	// that Targets that select the same objects share one informer; one
	// that does not parse stays as it is (NewListerWatcher refuses it).
	if sel, err := labels.Parse(t.LabelSelector); err == nil {
		t.LabelSelector = canonicalLabels(sel)
	}
	if sel, err := fields.ParseSelector(t.FieldSelector); err == nil {
		t.FieldSelector = sel.String()
	}
	switch any(*new(T)).(type) {
	case *unstructured.Unstructured, *metav1.PartialObjectMetadata:
		return t
	}
	gvk, gvr, err := kinds.Of[T]()
	if err != nil {
		return t
	}
	if t.Resource == (schema.GroupVersionResource{}) { // For refuses a partial one
		t.Resource = gvr
	}
	if t.Kind == "" && t.Resource == gvr {
		t.Kind = gvk.Kind
	}
	return t
}

// ForResource returns the factory's informer for a custom resource (or any
// resource) as unstructured objects, decoded from JSON. target.Resource may
// be left empty; one other than gvr is an error.
func ForResource(f *Factory, gvr schema.GroupVersionResource, target reflector.Target) (*SharedIndexInformer[*unstructured.Unstructured], error) {
	if err := withResource(&target, gvr); err != nil {
		return nil, err
	}
	return For[*unstructured.Unstructured](f, target)
}

// ForMetadata returns the factory's informer for the metadata only of a
// resource's objects: the server sends PartialObjectMetadata, which is much
// smaller to decode and keep than whole objects. target.Resource may be
// left empty; one other than gvr is an error.
func ForMetadata(f *Factory, gvr schema.GroupVersionResource, target reflector.Target) (*SharedIndexInformer[*metav1.PartialObjectMetadata], error) {
	if err := withResource(&target, gvr); err != nil {
		return nil, err
	}
	return For[*metav1.PartialObjectMetadata](f, target)
}

// withResource sets target's Resource to gvr, unless it names another.
func withResource(target *reflector.Target, gvr schema.GroupVersionResource) error {
	if target.Resource != (schema.GroupVersionResource{}) && target.Resource != gvr {
		spell := func(gvr schema.GroupVersionResource) string { // as kubectl does: deployments.v1.apps
			return strings.TrimSuffix(gvr.Resource+"."+gvr.Version+"."+gvr.Group, ".")
		}
		return fmt.Errorf("informer factory: an informer of %s given a Target of %s", spell(gvr), spell(target.Resource))
	}
	target.Resource = gvr
	return nil
}

// describe names an informer of T in errors: `pods in "default" (app=web)`,
// and `pods [metadata]` or `pods [unstructured]` for informers of
// metadata-only and unstructured objects, which a Factory may hold beside
// the typed informer of the same resource.
func describe[T any](gvr schema.GroupVersionResource, t reflector.Target) string {
	var b strings.Builder
	b.WriteString(gvr.Resource)
	if gvr.Group != "" {
		b.WriteString("." + gvr.Group)
	}
	if t.Namespace != "" {
		fmt.Fprintf(&b, " in %q", t.Namespace)
	}
	if sel := strings.Trim(t.LabelSelector+","+t.FieldSelector, ","); sel != "" {
		fmt.Fprintf(&b, " (%s)", sel)
	}
	switch any(*new(T)).(type) {
	case *metav1.PartialObjectMetadata:
		b.WriteString(" [metadata]")
	case *unstructured.Unstructured:
		b.WriteString(" [unstructured]")
	}
	return b.String()
}

// Start runs every informer created so far that it has not started yet,
// each on its own goroutines, until ctx ends or Shutdown. Call it again to
// start informers created since. An informer whose context ended is not
// run again: For makes a new one in its place. A nil ctx, or a nil Factory, starts nothing (an
// error is logged).
func (f *Factory) Start(ctx context.Context) {
	if f == nil {
		slog.Error("informer factory: Start of a nil Factory: nothing started")
		return
	}
	if ctx == nil {
		f.opt.logger.Error("informer factory: Start with a nil context: nothing started")
		f.mu.Lock()
		for _, e := range f.order {
			if e.cancel == nil {
				e.nilStart = true // WaitForCacheSync names what it did not start
			}
		}
		f.mu.Unlock()
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shutdown {
		return
	}
	for _, e := range f.order {
		if e.cancel != nil {
			continue
		}
		ictx, cancel := context.WithCancel(ctx)
		e.cancel, e.ctx = cancel, ictx
		f.wg.Go(func() {
			// A Run that returns ErrStarted leaves the informer running
			// elsewhere: its Stopped channel tells when that one stops.
			if err := e.informer.Run(ictx); err != nil {
				if errors.Is(err, ErrStarted) {
					f.mu.Lock()
					e.elsewhere = true
					f.mu.Unlock()
				}
				f.opt.logger.Error("informer did not run", "resource", e.informer.Name(), "err", err)
			}
		})
	}
}

// WaitForCacheSync waits until every started informer has synced or
// stopped (Shutdown, or the end of Start's context). If ctx ends first, or
// an informer stopped before it synced, it returns an error that names
// each informer not synced and the last error it met, such as
// `caches not synced: pods in "default": listing pods in "default": 403
// Forbidden: ... (still retrying: context deadline exceeded)`; errors.Is
// finds both the last error and, once ctx has ended, ctx's (also when the
// informer has stopped, as it does when Start's ctx is the same one).
func (f *Factory) WaitForCacheSync(ctx context.Context) error {
	if f == nil {
		return errors.New("informer factory: WaitForCacheSync: the Factory is nil")
	}
	if ctx == nil {
		return errors.New("informer factory: WaitForCacheSync: nil context")
	}
	var errs []error
	f.mu.Lock()
	var started []*entry
	for _, e := range f.order {
		switch {
		case e.cancel != nil:
			started = append(started, e)
		case e.nilStart:
			errs = append(errs, fmt.Errorf("%s: not started: Start was given a nil context", e.informer.Name()))
		}
	}
	f.mu.Unlock()

	waits := make([]waiting, len(started))
	for i, e := range started {
		inf := e.informer
		waits[i] = waiting{name: inf.Name(), synced: inf.Synced(), stopped: inf.Stopped(), lastError: inf.LastError, informer: true}
	}
	errs = append(errs, waitAll(ctx, waits)...)
	if len(errs) > 0 {
		return fmt.Errorf("caches not synced: %w", notSynced(errs))
	}
	return nil
}

// Shutdown stops every informer, waits until all their goroutines have
// exited, and closes the Factory's connections to the apiserver (ending a
// run of an exec credential plugin under way: see
// reflector.Client.CloseConnections). The
// Factory starts nothing afterwards, and For creates no new informer
// (ErrShutdown). Since it waits for the informers' handlers,
// error handlers and transforms, it must not be called from one of them:
// from there, call it on a goroutine of its own (go f.Shutdown()). A nil
// Factory has nothing to stop.
func (f *Factory) Shutdown() {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.shutdown = true
	for _, e := range f.order {
		if e.cancel != nil {
			e.cancel()
		}
	}
	f.mu.Unlock()
	f.wg.Wait()
	if f.client != nil {
		f.client.CloseConnections()
	}
}

// FactoryOption configures a Factory.
type FactoryOption func(*factoryOptions)

type factoryOptions struct {
	logger          *slog.Logger
	resync          time.Duration
	mode            reflector.Mode
	http            []reflector.HTTPOption
	minWatchTimeout time.Duration
	relistInterval  time.Duration
	backoffSet      bool
	backoffInitial  time.Duration
	backoffMax      time.Duration
	pageSizeSet     bool
	pageSize        int64
	sharing         bool
	mutations       *factoryMutations // nil: no mutation detector
	handlerErrors   func(error)
	// listerWatchers holds, by type T, the
	// func(reflector.Target) (reflector.ListerWatcher[T], error) that
	// gives the informers of T what they use instead of HTTP.
	listerWatchers map[reflect.Type]any
}

type factoryMutations struct {
	period time.Duration
	report func(error)
}

// WithFactoryLogger sets where the factory, its client and its informers
// log (see WithLogger): errors and handler panics, and what they do at the
// debug level. The default is slog.Default().
func WithFactoryLogger(l *slog.Logger) FactoryOption {
	return func(o *factoryOptions) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithDefaultResync sets the resync period of handlers added without one.
func WithDefaultResync(d time.Duration) FactoryOption {
	return func(o *factoryOptions) { o.resync = d }
}

// WithListMode chooses streaming lists or LIST then WATCH for every
// informer; the default is reflector.Auto. A Mode that is none of Auto,
// ListWatch and WatchList makes NewFactory fail.
func WithListMode(m reflector.Mode) FactoryOption {
	return func(o *factoryOptions) { o.mode = m }
}

// WithHTTPOptions passes options to every informer's ListerWatcher: content
// type, watchdog, size limits. The default content type,
// reflector.AutoContentType, asks for protobuf where a type has it;
// reflector.Protobuf makes ForResource and ForMetadata fail, and For a
// type without a protobuf form.
func WithHTTPOptions(opts ...reflector.HTTPOption) FactoryOption {
	return func(o *factoryOptions) { o.http = append(o.http, opts...) }
}

// WithMinWatchTimeout sets every informer's shortest watch timeout; see
// reflector.WithMinWatchTimeout.
func WithMinWatchTimeout(d time.Duration) FactoryOption {
	return func(o *factoryOptions) { o.minWatchTimeout = d }
}

// WithRelistInterval makes every informer relist every d, which repairs a
// cache after events a faulty server lost; see reflector.WithRelistInterval.
func WithRelistInterval(d time.Duration) FactoryOption {
	return func(o *factoryOptions) { o.relistInterval = d }
}

// WithBackoff sets every informer's first and largest wait between failed
// attempts; see reflector.WithBackoff.
func WithBackoff(initial, max time.Duration) FactoryOption {
	return func(o *factoryOptions) { o.backoffSet, o.backoffInitial, o.backoffMax = true, initial, max }
}

// WithPageSize sets every informer's LIST page size (the limit parameter),
// for relists too; see reflector.WithPageSize. The default is 500 for the
// first list (and a list of the latest state after 410 Gone), with relists
// at the cache's resourceVersion in one answer; 0 lists in one request.
func WithPageSize(n int64) FactoryOption {
	return func(o *factoryOptions) { o.pageSizeSet, o.pageSize = true, n }
}

// WithSharing makes each informer's cached objects share their identical
// parts; see reflector.WithSharing.
func WithSharing() FactoryOption {
	return func(o *factoryOptions) { o.sharing = true }
}

// WithListerWatcher makes the Factory's informers of type T, whatever their
// Target, list and watch through lw instead of over HTTP: to test code that
// takes a Factory against a listwatchtest.Source. lw is not told the
// Target: every informer of T gets all its objects (and the informers of
// every resource ForResource is asked for share it). WithListerWatcherFor
// gives each Target its own. With a ListerWatcher for every type it is
// asked for, the Factory needs no Config. A nil lw is ignored.
func WithListerWatcher[T reflector.Object](lw reflector.ListerWatcher[T]) FactoryOption {
	if lw == nil || isNilPointer(lw) {
		return nil
	}
	return WithListerWatcherFor(func(reflector.Target) (reflector.ListerWatcher[T], error) { return lw, nil })
}

// WithListerWatcherFor is WithListerWatcher with a ListerWatcher for each
// Target: For calls lwFor with the Target it is given when it makes the
// informer, and fails with its error. With listwatchtest,
// WithListerWatcherFor[T](src.For) gives each informer the objects of its
// namespace and selectors, as a server would; and a function that chooses
// by Target.Resource gives each unstructured resource a Source of its own.
// lwFor is called outside the Factory's lock, so it may ask the Factory for
// informers; two For calls at once for one new Target may both call it,
// and one result is dropped. For each T, the last of WithListerWatcher and
// WithListerWatcherFor given counts. A nil lwFor is ignored.
func WithListerWatcherFor[T reflector.Object](lwFor func(reflector.Target) (reflector.ListerWatcher[T], error)) FactoryOption {
	return func(o *factoryOptions) {
		if lwFor == nil {
			return
		}
		if o.listerWatchers == nil {
			o.listerWatchers = map[reflect.Type]any{}
		}
		o.listerWatchers[reflect.TypeFor[T]()] = lwFor
	}
}

// WithFactoryHandlerErrorHandler sets, for every informer, the function
// told when a handler panics, with a *processor.HandlerPanicError whose
// Processor field is the informer's name (see WithHandlerErrorHandler).
// The default logs the panic.
func WithFactoryHandlerErrorHandler(f func(error)) FactoryOption {
	return func(o *factoryOptions) { o.handlerErrors = f }
}

// WithFactoryMutationDetector gives every informer a mutation detector that
// checks every period and reports to report; see WithMutationDetector. For
// tests and CI.
func WithFactoryMutationDetector(period time.Duration, report func(error)) FactoryOption {
	return func(o *factoryOptions) { o.mutations = &factoryMutations{period: period, report: report} }
}
