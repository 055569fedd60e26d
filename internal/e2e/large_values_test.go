package e2e

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/reflector"
)

// scenarioLargeValues: a ConfigMap whose value is longer than the JSON
// decoder's 32 KiB read buffer and full of what JSON escapes (line breaks,
// tabs, quotes, backslashes; <, > and &, which kube-apiserver writes as
// \u003c, \u003e and \u0026), with text that is not ASCII, and 40 KB of
// binary data (base64 in JSON), reaches every cache byte for byte: from
// the initial list and from a watch event, as JSON and as protobuf, with
// and without sharing.
func scenarioLargeValues(t *testing.T, srv server, ns string) {
	srv.createNamespace(t, ns)
	text := func(seed int) string {
		var b strings.Builder
		for i := 0; b.Len() < 40<<10; i++ {
			fmt.Fprintf(&b, "line %d of %d: \"quoted\" back\\slash\ttab <tag a=\"b&c\"/> café ✓ 😀\n", i, seed)
		}
		return b.String()
	}
	blob := make([]byte, 40<<10)
	for i := range blob {
		blob[i] = byte(i*31 + i>>8)
	}
	obj := newObject("v1", "ConfigMap", ns, "large", nil, map[string]any{
		"data":       map[string]any{"config.yaml": text(1), "small": "x"},
		"binaryData": map[string]any{"blob": base64.StdEncoding.EncodeToString(blob)},
	})
	created := srv.create(t, configMaps, obj)

	type cache struct {
		label string
		inf   *informer.SharedIndexInformer[*corev1.ConfigMap]
	}
	var caches []cache
	for name, ct := range map[string]reflector.ContentType{"json": reflector.JSON, "protobuf": reflector.Protobuf} {
		for _, sharing := range []bool{false, true} {
			label := name
			opts := []informer.FactoryOption{informer.WithHTTPOptions(reflector.WithContentType(ct))}
			if sharing {
				opts = append(opts, informer.WithSharing())
				label += "+sharing"
			}
			f := newFactory(t, srv.config(srv.addr(), false), opts...)
			inf, err := informer.For[*corev1.ConfigMap](f, reflector.Target{Namespace: ns})
			require.NoError(t, err)
			startFactory(t, f)
			caches = append(caches, cache{label, inf})
		}
	}
	// check waits until every cache holds the ConfigMap at rv, and
	// compares its values with those written.
	check := func(rv, data string) {
		t.Helper()
		for _, c := range caches {
			deadline := time.Now().Add(time.Minute)
			cm, ok := c.inf.Lister().Get(ns, "large")
			for (!ok || cm.ResourceVersion != rv) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
				cm, ok = c.inf.Lister().Get(ns, "large")
			}
			require.True(t, ok, "%s: no ConfigMap", c.label)
			require.Equal(t, rv, cm.ResourceVersion, "%s", c.label)
			require.Equal(t, map[string]string{"config.yaml": data, "small": "x"}, cm.Data, "%s", c.label)
			require.Equal(t, map[string][]byte{"blob": blob}, cm.BinaryData, "%s", c.label)
		}
	}
	check(created.GetResourceVersion(), text(1))
	require.NoError(t, unstructured.SetNestedField(created.Object, text(2), "data", "config.yaml"))
	updated := srv.update(t, configMaps, created)
	check(updated.GetResourceVersion(), text(2))
}
