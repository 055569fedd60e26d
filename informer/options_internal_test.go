package informer

import (
	"testing"

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
