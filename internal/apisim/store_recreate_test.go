package apisim_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/internal/apisim"
)

// An object deleted, compacted away and created again is listed once.
func TestRecreatedAfterCompactionListedOnce(t *testing.T) {
	s := start(t)
	createPods(t, s, "default", 2)
	pods := apisim.Of[*corev1.Pod](s, apisim.Pods())
	_, _, err := pods.List("") // sorts the keys
	require.NoError(t, err)
	_, err = pods.Delete("default", "p1")
	require.NoError(t, err)
	s.Compact() // the tombstone goes
	_, err = pods.Create(apisim.MakePod("default", "p1"))
	require.NoError(t, err)
	got, _, err := pods.List("")
	require.NoError(t, err)
	var names []string
	for _, p := range got {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"p0", "p1"}, names)
	assert.Equal(t, []string{"p0", "p1"}, getList(t, s, "/api/v1/pods").names())
}
