package informer

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/indexer"
)

// An index named by two WithIndexers is an option New cannot follow: the
// first function stays, and the error names the index.
func TestWithIndexersNamingAnIndexTwice(t *testing.T) {
	byName := func(p *corev1.Pod) ([]string, error) { return []string{p.Name}, nil }
	o := defaultOptions[*corev1.Pod]()
	WithIndexers(indexer.Indexers[*corev1.Pod]{"byName": byName, "ns": indexer.NamespaceIndexFunc[*corev1.Pod]})(&o)
	assert.NoError(t, o.err)
	WithIndexers(indexer.Indexers[*corev1.Pod]{"byName": nil, "other": byName})(&o)
	assert.EqualError(t, o.err, `informer: index "byName" is given twice (WithIndexers)`)
	assert.NotNil(t, o.indexers["byName"], "the first one stays")
	assert.Len(t, o.indexers, 3)
}

// The mutation detector's period: ≤ 0 is a second, and anything under
// minMutationPeriod is raised to it (a nanosecond compared the whole cache
// back to back: half a core on an idle informer of 1,000 pods, and a fake
// millisecond took 23 s of wall time in a synctest bubble).
func TestMutationDetectorPeriod(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{
		{0, time.Second},
		{-time.Hour, time.Second},
		{time.Nanosecond, minMutationPeriod},
		{time.Millisecond, minMutationPeriod},
		{time.Minute, time.Minute},
	} {
		o := defaultOptions[*corev1.Pod]()
		WithMutationDetector[*corev1.Pod](tc.in, nil)(&o)
		d := newMutationDetector("pods", o.mutations, func(error) {})
		assert.Equal(t, tc.want, d.period, "%v", tc.in)
	}
}

// Under churn, the mutation detector keeps the newest objects that left
// the cache, as many as the cache holds and at least minRetiredKept, not
// every one of the last minute (1.5 GiB after 250k changes of 1,000 pods
// in 42 s, in a review's soak).
func TestMutationDetectorBoundsWhatLeftTheCache(t *testing.T) {
	o := defaultOptions[*corev1.Pod]()
	WithMutationDetector[*corev1.Pod](time.Hour, nil)(&o)
	d := newMutationDetector("pods", o.mutations, func(error) {})
	for i := range 100 {
		key := fmt.Sprint("live-", i)
		d.remember(d.copyOf(key, &corev1.Pod{}))
	}
	for i := range 5 * minRetiredKept {
		key := fmt.Sprint("churned-", i)
		d.remember(d.copyOf(key, &corev1.Pod{}))
		d.forget(key)
	}
	assert.LessOrEqual(t, len(d.retired), 2*minRetiredKept)
	assert.GreaterOrEqual(t, len(d.retired), minRetiredKept)
	assert.Equal(t, fmt.Sprint("churned-", 5*minRetiredKept-1), d.retired[len(d.retired)-1].key, "the newest are kept")
	assert.Len(t, d.cached, 100)
}
