package indexer_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/indexer"
)

type podIndexer = indexer.Indexer[*corev1.Pod]

// pod returns a pod ns/name at resource version rv, scheduled on node (if
// not empty) and carrying the given labels ("k=v" strings).
func pod(ns, name, rv, node string, labels ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv},
		Spec:       corev1.PodSpec{NodeName: node},
	}
	for _, l := range labels {
		k, v, _ := strings.Cut(l, "=")
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
	return p
}

var errIndex = errors.New("index function failed")

// byNode indexes a pod by its node; an unscheduled pod has no value.
func byNode(p *corev1.Pod) ([]string, error) {
	if p.Spec.NodeName == "" {
		return nil, nil
	}
	return []string{p.Spec.NodeName}, nil
}

// byLabel indexes a pod by each of its labels, as "k=v".
func byLabel(p *corev1.Pod) ([]string, error) {
	var out []string
	for k, v := range p.Labels {
		out = append(out, k+"="+v)
	}
	return out, nil
}

// failing indexes a pod by its "team" label and fails on a pod labelled
// fail=true.
func failing(p *corev1.Pod) ([]string, error) {
	if p.Labels["fail"] == "true" {
		return nil, errIndex
	}
	return []string{p.Labels["team"]}, nil
}

func allIndexers() indexer.Indexers[*corev1.Pod] {
	return indexer.Indexers[*corev1.Pod]{
		indexer.NamespaceIndex: indexer.NamespaceIndexFunc[*corev1.Pod],
		"node":                 byNode,
		"label":                byLabel,
	}
}

// dump renders the whole observable state, sorted: one "key@rv" line per
// object, then one "index value: keys" line per index value.
func dump(t *testing.T, x *podIndexer, indexes ...string) []string {
	t.Helper()
	var out []string
	for _, p := range x.List() {
		out = append(out, fmt.Sprintf("%s/%s@%s", p.Namespace, p.Name, p.ResourceVersion))
	}
	slices.Sort(out)
	keys := x.ListKeys()
	slices.Sort(keys)
	require.Len(t, keys, len(out))
	require.Equal(t, len(out), x.Len())
	for _, name := range indexes {
		values := x.ListIndexFuncValues(name)
		slices.Sort(values)
		for _, v := range values {
			keys, err := x.IndexKeys(name, v)
			require.NoError(t, err)
			require.NotEmpty(t, keys, "index %s keeps the empty value %q", name, v)
			slices.Sort(keys)
			out = append(out, fmt.Sprintf("%s %s: %s", name, v, strings.Join(keys, ",")))
		}
	}
	return out
}

func sortedKeys(objs []*corev1.Pod) []string {
	keys := make([]string, len(objs))
	for i, p := range objs {
		keys[i] = indexer.MetaNamespaceKey(p)
	}
	slices.Sort(keys)
	return keys
}
