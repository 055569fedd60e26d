package indexer_test

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/indexer"
)

// The index functions the operations choose from, by position: New takes
// those of the six low bits of the first two bytes ANDed, AddIndexers those
// of its mask.
func modelIndexes() []indexSpec {
	buf := make([]string, 2)
	return []indexSpec{
		{indexer.NamespaceIndex, indexer.NamespaceIndexFunc[*corev1.Pod]},
		{"node", byNode}, // no value for an unscheduled pod
		{"vals", byVals}, // several values, duplicates or none
		{"strict", strict},
		// A buffer it reuses: the indexer must keep a copy. It makes the
		// sequential test's indexers unsafe for concurrent use.
		{"buf", func(p *corev1.Pod) ([]string, error) {
			buf[0], buf[1] = p.Namespace, p.Spec.NodeName
			return buf, nil
		}},
		{"empty", func(*corev1.Pod) ([]string, error) { return []string{}, nil }},
		{"broken", nil}, // AddIndexers refuses it
	}
}

type indexSpec struct {
	name string
	fn   indexer.IndexFunc[*corev1.Pod]
}

// byVals indexes a pod by the comma-separated values of its "vals"
// annotation, duplicates included.
func byVals(p *corev1.Pod) ([]string, error) {
	if p.Annotations["vals"] == "" {
		return nil, nil
	}
	return strings.Split(p.Annotations["vals"], ","), nil
}

// strict indexes a pod by its node, "" included, and fails or panics on a
// pod labelled fail=error or fail=panic.
func strict(p *corev1.Pod) ([]string, error) {
	switch p.Labels["fail"] {
	case "error":
		return nil, errIndex
	case "panic":
		panic("strict: asked to panic")
	}
	return []string{p.Spec.NodeName}, nil
}

// selected returns the index specs of mask: bits 0 to 5 choose the first
// six, bits 6 and 7 both set the nil function. AddIndexers leaves out
// those installed unless bit 7 is set.
func selected(pool []indexSpec, mask uint8) []indexSpec {
	var out []indexSpec
	for i := range 6 {
		if mask&(1<<i) != 0 {
			out = append(out, pool[i])
		}
	}
	if mask>>6 == 3 {
		out = append(out, pool[6])
	}
	return out
}

func names(specs []indexSpec) []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.name
	}
	return out
}

// A podSpec describes a pod by small numbers, so that pods collide on keys
// and index values.
type podSpec struct {
	ns   int   // specNamespaces
	name int   // specNames; 4: no name, 5: a "/" in it
	node int   // specNodes
	vals []int // specVals, at most three
	fail int   // failNot, failError, failPanic: what strict does on it
}

var (
	specNamespaces = []string{"", "x", "y"} // "": cluster-scoped
	specNames      = []string{"a", "b", "c", "d", "", "s/l"}
	specNodes      = []string{"", "x", "n"}
	specVals       = []string{"x", "v", "w"}
	// allValues holds every index value a pod can have, and one none has.
	allValues = []string{"", "x", "y", "n", "v", "w", "absent"}
)

const (
	failNot = iota
	failError
	failPanic
)

func (s podSpec) with(node int, vals []int) podSpec {
	s.node, s.vals = node, vals
	return s
}

// pod returns the pod s describes, with payload as its resourceVersion.
func (s podSpec) pod(payload string) *corev1.Pod {
	vals := make([]string, len(s.vals))
	for i, v := range s.vals {
		vals[i] = specVals[v]
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: specNamespaces[s.ns], Name: specNames[s.name], ResourceVersion: payload,
			Annotations: map[string]string{"vals": strings.Join(vals, ",")},
			Labels:      map[string]string{"fail": [...]string{"", "error", "panic"}[s.fail]},
		},
		Spec: corev1.PodSpec{NodeName: specNodes[s.node]},
	}
}

func (s podSpec) String() string {
	key := specNames[s.name]
	if s.ns > 0 {
		key = specNamespaces[s.ns] + "/" + key
	}
	vals := make([]string, len(s.vals))
	for i, v := range s.vals {
		vals[i] = specVals[v]
	}
	out := fmt.Sprintf("%q node=%q vals=[%s]", key, specNodes[s.node], strings.Join(vals, ","))
	if s.fail != failNot {
		out += " fail=" + [...]string{"", "error", "panic"}[s.fail]
	}
	return out
}

type opKind uint8

const (
	opAdd opKind = iota
	opUpdate
	opDelete
	opReplace
	opPrepare
	opCommit
	opAddIndexers
)

func (k opKind) String() string {
	return [...]string{"Add", "Update", "Delete", "Replace", "Prepare", "Commit", "AddIndexers"}[k]
}

// kinds weighs the operations: a kind byte b decodes to kinds[b%len].
var kinds = []opKind{opAdd, opAdd, opUpdate, opUpdate, opUpdate, opDelete, opDelete,
	opReplace, opPrepare, opPrepare, opCommit, opCommit, opAddIndexers, opAddIndexers}

// An op is one operation of a sequence.
type op struct {
	kind   opKind
	obj    podSpec   // Add, Update, Delete, Prepare
	list   []podSpec // Replace
	slot   int       // Prepare, Commit: which of four Writes
	add    uint8     // AddIndexers: the mask of the indexes (selected)
	during []op      // AddIndexers: run while it computes; no AddIndexers
}

func (o op) String() string {
	switch o.kind {
	case opAdd:
		return "Add " + o.obj.String()
	case opUpdate:
		return "Update " + o.obj.String()
	case opDelete:
		return "Delete " + o.obj.String()
	case opReplace:
		items := make([]string, len(o.list))
		for i, s := range o.list {
			items[i] = s.String()
		}
		return "Replace [" + strings.Join(items, "; ") + "]"
	case opPrepare:
		return fmt.Sprintf("Prepare w%d %s", o.slot, o.obj)
	case opCommit:
		return fmt.Sprintf("Commit w%d", o.slot)
	default:
		out := fmt.Sprintf("AddIndexers %v", names(selected(modelIndexes(), o.add)))
		if o.add>>7 == 0 {
			out += " less those installed"
		}
		if len(o.during) > 0 {
			out += ", while it computes:"
		}
		return out
	}
}

// formatOps lists ops one a line, numbered as the operations' labels.
func formatOps(prefix string, ops []op) string {
	var b strings.Builder
	for i, o := range ops {
		label := fmt.Sprintf("%s%d", prefix, i+1)
		fmt.Fprintf(&b, "%*s%s. %s\n", 2*strings.Count(label, "."), "", label, o)
		b.WriteString(formatOps(label+".", o.during))
	}
	return b.String()
}

// maxOps bounds the operations one input decodes to.
const maxOps = 80

// decode reads the initial index mask and the operations from data; any
// bytes decode, and decode(encode(...)) gives back what was encoded.
func decode(data []byte) (initial uint8, ops []op) {
	d := decoder{data}
	initial = d.next() & d.next() & 0x3f // about one index in four
	for len(d.data) > 0 && len(ops) < maxOps {
		ops = append(ops, d.op(true))
	}
	return initial, ops
}

type decoder struct{ data []byte }

// next returns the next byte, 0 once data is exhausted.
func (d *decoder) next() byte {
	if len(d.data) == 0 {
		return 0
	}
	b := d.data[0]
	d.data = d.data[1:]
	return b
}

func (d *decoder) op(top bool) op {
	o := op{kind: kinds[int(d.next())%len(kinds)]}
	if o.kind == opAddIndexers && !top {
		o.kind = opAdd // AddIndexers calls run one at a time
	}
	switch o.kind {
	case opAdd, opUpdate, opDelete:
		o.obj = d.pod(top)
	case opReplace:
		for range d.next() % 6 {
			o.list = append(o.list, d.pod(top))
		}
	case opPrepare:
		o.slot = int(d.next() % 4)
		o.obj = d.pod(top)
	case opCommit:
		o.slot = int(d.next() % 4)
	case opAddIndexers:
		o.add = d.next()
		for range d.next() % 6 {
			o.during = append(o.during, d.op(false))
		}
	}
	return o
}

// pod decodes a pod. An index function fails on one in sixteen of those
// of top-level operations, so that AddIndexers often finds nothing stored
// to fail on, and on one in three of those written while it computes,
// which have two names rather than four, to write a key more than once.
func (d *decoder) pod(top bool) podSpec {
	s := podSpec{ns: int(d.next() % 3), node: int(d.next() % 3)}
	switch n := d.next() % 32; {
	case n >= 30:
		s.name = int(n) - 26
	case top:
		s.name = int(n % 4)
	default:
		s.name = int(n % 2)
	}
	v := d.next()
	for i := range int(v % 4) {
		s.vals = append(s.vals, int(v>>(2+2*i)&3)%3)
	}
	f := d.next()
	if top {
		f %= 32
	} else {
		f %= 6
	}
	switch f {
	case 0:
		s.fail = failError
	case 1:
		s.fail = failPanic
	}
	return s
}

func encode(initial uint8, ops []op) []byte {
	out := []byte{initial, 0xff}
	for _, o := range ops {
		out = encodeOp(out, o)
	}
	return out
}

func encodeOp(out []byte, o op) []byte {
	out = append(out, byte(slices.Index(kinds, o.kind)))
	switch o.kind {
	case opAdd, opUpdate, opDelete:
		out = encodePod(out, o.obj)
	case opReplace:
		out = append(out, byte(len(o.list)))
		for _, s := range o.list {
			out = encodePod(out, s)
		}
	case opPrepare:
		out = encodePod(append(out, byte(o.slot)), o.obj)
	case opCommit:
		out = append(out, byte(o.slot))
	case opAddIndexers:
		out = append(out, o.add, byte(len(o.during)))
		for _, d := range o.during {
			out = encodeOp(out, d)
		}
	}
	return out
}

func encodePod(out []byte, s podSpec) []byte {
	name := s.name
	if name >= 4 {
		name += 26
	}
	v := len(s.vals)
	for i, x := range s.vals {
		v |= x << (2 + 2*i)
	}
	return append(out, byte(s.ns), byte(s.node), byte(name), byte(v), [...]byte{2, 0, 1}[s.fail])
}
