package indexer_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/indexer"
)

// The model is what the package docs promise, computed the slow way: a map
// from key to object, and every index answered by calling the index
// functions on every object.
type model struct {
	objs      map[string]*corev1.Pod
	installed []indexSpec
	// gen names the installed set of indexes, lastGen the newest set
	// handed out; a Write is refused if prepared with another set than
	// writes are prepared with now (prepGen).
	gen, lastGen int
	pending      *pendingAdd
}

// pendingAdd is an AddIndexers computing: its indexes are run by writes
// but not installed.
type pendingAdd struct {
	added []indexSpec
	gen   int
	// failing holds the keys written meanwhile whose stored object an
	// added index function fails on.
	failing map[string]bool
}

func newModel(installed []indexSpec) *model {
	return &model{objs: map[string]*corev1.Pod{}, installed: installed}
}

// prepGen is the generation of the indexes a Write is prepared with now.
func (m *model) prepGen() int {
	if m.pending != nil {
		return m.pending.gen
	}
	return m.gen
}

// modelKey is the default key: "namespace/name", or "name"; "" for an
// object the indexer refuses.
func modelKey(p *corev1.Pod) string {
	if p.Name == "" || strings.Contains(p.Name, "/") || strings.Contains(p.Namespace, "/") {
		return ""
	}
	if p.Namespace == "" {
		return p.Name
	}
	return p.Namespace + "/" + p.Name
}

// callIndex calls an index function, turning a panic into an error, and
// copies what it returns.
func callIndex(fn indexer.IndexFunc[*corev1.Pod], p *corev1.Pod) (values []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panicked: %v", r)
		}
	}()
	values, err = fn(p)
	return slices.Clone(values), err
}

// failsOn returns the error of the first of specs that fails on p.
func failsOn(specs []indexSpec, p *corev1.Pod) error {
	for _, s := range specs {
		if _, err := callIndex(s.fn, p); err != nil {
			return err
		}
	}
	return nil
}

// index returns the keys and objects of every value of an index.
func (m *model) index(s indexSpec) map[string]map[string]*corev1.Pod {
	out := map[string]map[string]*corev1.Pod{}
	for key, p := range m.objs {
		values, err := callIndex(s.fn, p)
		if err != nil {
			panic(fmt.Sprintf("model: index %s fails on the stored %s: %v", s.name, describe(p), err))
		}
		for _, v := range values {
			if out[v] == nil {
				out[v] = map[string]*corev1.Pod{}
			}
			out[v][key] = p
		}
	}
	return out
}

// An outcome is how a call must end: without error, or with an error of a
// kind.
type outcome struct {
	kind    int    // errNone, errInvalid, errIndexFunc, errAny
	mention string // a text the error must hold, if not empty
}

const (
	errNone = iota
	errInvalid
	errIndexFunc
	errAny
)

func (o outcome) match(err error) error {
	switch {
	case o.kind == errNone && err != nil:
		return fmt.Errorf("error %v, want none", err)
	case o.kind == errNone:
		return nil
	case err == nil:
		return fmt.Errorf("no error, want %v", [...]string{"", "ErrInvalidObject", "the index function's error", "an error"}[o.kind])
	case o.kind == errInvalid && !errors.Is(err, indexer.ErrInvalidObject):
		return fmt.Errorf("error %v, want ErrInvalidObject", err)
	case o.kind == errIndexFunc && !errors.Is(err, errIndex) && !strings.Contains(err.Error(), "panicked"):
		return fmt.Errorf("error %v, want the index function's", err)
	case !strings.Contains(err.Error(), o.mention):
		return fmt.Errorf("error %v, want it to mention %q", err, o.mention)
	}
	return nil
}

// check returns how a write of p must end, from its key and the installed
// index functions.
func (m *model) check(p *corev1.Pod) outcome {
	if modelKey(p) == "" {
		return outcome{kind: errInvalid}
	}
	if failsOn(m.installed, p) != nil {
		return outcome{kind: errIndexFunc}
	}
	return outcome{}
}

// put is Add and Update.
func (m *model) put(p *corev1.Pod) outcome {
	want := m.check(p)
	if want.kind != errNone {
		return want
	}
	m.store(p, m.pending != nil && failsOn(m.pending.added, p) != nil)
	return want
}

// store stores p; failing says an added index function fails on it.
func (m *model) store(p *corev1.Pod, failing bool) {
	key := modelKey(p)
	m.objs[key] = p
	if m.pending != nil {
		if failing {
			m.pending.failing[key] = true
		} else {
			delete(m.pending.failing, key)
		}
	}
}

func (m *model) remove(p *corev1.Pod) outcome {
	key := modelKey(p)
	if key == "" {
		return outcome{kind: errInvalid}
	}
	delete(m.objs, key)
	if m.pending != nil {
		delete(m.pending.failing, key)
	}
	return outcome{}
}

// replace: the first bad item fails it; of two items with a key, the
// later wins.
func (m *model) replace(list []*corev1.Pod) outcome {
	for i, p := range list {
		if want := m.check(p); want.kind != errNone {
			want.mention = fmt.Sprintf("list item %d:", i)
			return want
		}
	}
	m.objs = map[string]*corev1.Pod{}
	if m.pending != nil {
		m.pending.failing = map[string]bool{}
	}
	for _, p := range list {
		m.store(p, m.pending != nil && failsOn(m.pending.added, p) != nil)
	}
	return outcome{}
}

// prepare fails as put would; addFailed says an index function of an
// AddIndexers computing fails on p.
func (m *model) prepare(p *corev1.Pod) (_ outcome, addFailed bool) {
	want := m.check(p)
	return want, want.kind == errNone && m.pending != nil && failsOn(m.pending.added, p) != nil
}

// commit stores a prepared Write unless it is the zero Write, or was
// prepared with indexes other than those writes are prepared with now, or
// an added index function failed on it and AddIndexers has installed its
// indexes since.
//
// A Write prepared before an AddIndexers that then failed is stored: the
// indexes are those it was prepared with again. (Commit's doc, "AddIndexers
// began or failed since the Write was prepared", can be read to refuse it.)
func (m *model) commit(s prepared) bool {
	if !s.ok || s.gen != m.prepGen() || s.addFailed && m.pending == nil {
		return false
	}
	m.store(s.obj, s.addFailed)
	return true
}

// has reports whether the named index is installed.
func (m *model) has(name string) bool {
	return slices.ContainsFunc(m.installed, func(i indexSpec) bool { return i.name == name })
}

// publish begins an AddIndexers of specs and reports whether it began: not
// if it adds nothing, has a nil function or a name in use.
func (m *model) publish(specs []indexSpec) bool {
	if len(specs) == 0 {
		return false
	}
	for _, s := range specs {
		if s.fn == nil || m.has(s.name) {
			return false
		}
	}
	m.lastGen++
	m.pending = &pendingAdd{added: specs, gen: m.lastGen, failing: map[string]bool{}}
	return true
}

// install ends the AddIndexers publish began, given the objects stored
// when it was called: it fails if an added index function fails on one of
// them or on one written since and still stored; else it installs.
func (m *model) install(snapshot map[string]*corev1.Pod) outcome {
	p := m.pending
	m.pending = nil
	failed := len(p.failing) > 0
	for _, obj := range snapshot {
		failed = failed || failsOn(p.added, obj) != nil
	}
	if failed {
		return outcome{kind: errAny}
	}
	m.installed = append(slices.Clone(m.installed), p.added...)
	m.gen = p.gen
	return outcome{}
}
