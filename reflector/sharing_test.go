package reflector_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/listwatch/listwatch/reflector"
)

// chanStore hands each object the Reflector stores to the test.
type chanStore struct{ objs chan *corev1.Pod }

func (s chanStore) Add(p *corev1.Pod) error    { s.objs <- p; return nil }
func (s chanStore) Update(p *corev1.Pod) error { s.objs <- p; return nil }
func (s chanStore) Delete(p *corev1.Pod) error { s.objs <- p; return nil }
func (s chanStore) Replace(list []*corev1.Pod, _ string) error {
	for _, p := range list {
		s.objs <- p
	}
	return nil
}

// With WithSharing, the objects share their identical parts: after the
// transform, which may modify the object it is given; or, without a
// transform, as they are decoded (by their bytes).
// Either way the objects are those the server holds.
func TestSharingSharesParts(t *testing.T) {
	for _, c := range []struct {
		name      string
		ct        reflector.ContentType
		transform bool
		sharing   bool
	}{
		{"off", reflector.Protobuf, true, false},
		{"after-transform/json", reflector.JSON, true, true},
		{"after-transform/protobuf", reflector.Protobuf, true, true},
		{"decoding/json", reflector.JSON, false, true},
		{"decoding/protobuf", reflector.Protobuf, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			server, pods := startServer("web-1", "web-2")
			defer server.Close()
			client, err := reflector.NewClient(&reflector.Config{Host: server.URL()})
			require.NoError(t, err)
			lw, err := reflector.NewListerWatcher[*corev1.Pod](client, reflector.Target{Namespace: "default"}, reflector.WithContentType(c.ct))
			require.NoError(t, err)

			var opts []reflector.Option[*corev1.Pod]
			if c.transform { // it modifies the object it is given
				opts = append(opts, reflector.WithTransform(func(p *corev1.Pod) (*corev1.Pod, error) {
					p.Labels["seen"] = p.Name
					p.ManagedFields = nil
					return p, nil
				}))
			}
			if c.sharing {
				opts = append(opts, reflector.WithSharing[*corev1.Pod]())
			}
			store := chanStore{objs: make(chan *corev1.Pod, 10)}
			r := reflector.New(lw, reflector.Store[*corev1.Pod](store), opts...)
			defer run(t, r)()

			got := map[string]*corev1.Pod{}
			for range 2 {
				p := <-store.objs
				got[p.Name] = p
			}
			for name, p := range got {
				want, err := pods.Get("default", name)
				require.NoError(t, err)
				if c.transform {
					want.Labels["seen"], want.ManagedFields = name, nil
				}
				wantJSON, err := json.Marshal(want)
				require.NoError(t, err)
				gotJSON, err := json.Marshal(p)
				require.NoError(t, err)
				assert.JSONEq(t, string(wantJSON), string(gotJSON))
			}
			one, two := got["web-1"], got["web-2"]
			same := func(a, b any) bool {
				return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
			}
			assert.Equal(t, c.sharing && !c.transform, same(one.Labels, two.Labels), "labels (they differ after the transform)")
			assert.Equal(t, c.sharing, same(one.Spec.Containers, two.Spec.Containers), "containers")
			assert.Equal(t, c.sharing, same(one.Spec.Tolerations, two.Spec.Tolerations), "tolerations")

			// A new version shares what did not change with the old one.
			p, err := pods.Get("default", "web-1")
			require.NoError(t, err)
			p.Annotations = map[string]string{"changed": "yes"}
			_, err = pods.Update(p)
			require.NoError(t, err)
			updated := <-store.objs
			assert.Equal(t, "yes", updated.Annotations["changed"])
			assert.Equal(t, c.sharing, same(one.Spec.Containers, updated.Spec.Containers), "containers of the new version")
		})
	}
}

// Parts shared while decoding are remembered by their bytes, so a cached
// object changed against the rules (a handler writing into its labels)
// would also change the objects decoded later from the same bytes. Every
// list starts from an empty table, so a relist repairs the cache; so it
// does when the parts are shared after a transform (by the Reflector's own
// table, which kept what it remembered across lists).
func TestSharingRelistRepairsAModifiedPart(t *testing.T) {
	for name, ct := range map[string]reflector.ContentType{"json": reflector.JSON, "protobuf": reflector.Protobuf} {
		for _, transform := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/transform=%v", name, transform), func(t *testing.T) {
				testSharingRelistRepairsAModifiedPart(t, ct, transform)
			})
		}
	}
}

func testSharingRelistRepairsAModifiedPart(t *testing.T, ct reflector.ContentType, transform bool) {
	server, pods := startServer("web-1", "web-2")
	defer server.Close()
	client, err := reflector.NewClient(&reflector.Config{Host: server.URL()})
	require.NoError(t, err)
	lw, err := reflector.NewListerWatcher[*corev1.Pod](client, reflector.Target{Namespace: "default"}, reflector.WithContentType(ct))
	require.NoError(t, err)
	store := chanStore{objs: make(chan *corev1.Pod, 10)}
	opts := []reflector.Option[*corev1.Pod]{reflector.WithSharing[*corev1.Pod](), reflector.WithRelistInterval[*corev1.Pod](50 * time.Millisecond)}
	if transform {
		opts = append(opts, reflector.WithTransform(func(p *corev1.Pod) (*corev1.Pod, error) { return p, nil }))
	}
	r := reflector.New(lw, reflector.Store[*corev1.Pod](store), opts...)
	defer run(t, r)()

	want, err := pods.Get("default", "web-2")
	require.NoError(t, err)
	first := <-store.objs
	<-store.objs
	for k := range first.Labels {
		first.Labels[k] = "modified" // shared with web-2, and remembered
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case p := <-store.objs:
			if p.Name == "web-2" && reflect.DeepEqual(p.Labels, want.Labels) {
				return
			}
		case <-deadline:
			t.Fatalf("no relist gave web-2 its labels back (%v)", want.Labels)
		}
	}
}

// The Reflector's own table, which shares parts after a transform, is
// emptied before every list, as the decoder's is: an object listed again
// gets parts of its own, not those remembered from the list before (which
// kept a deleted object's parts alive for as long as the table remembered
// them: 135 MiB for ten live ConfigMaps of 16 KiB, replaced over and over,
// in a review's soak).
func TestSharingAfterATransformStartsAfreshOnEveryList(t *testing.T) {
	server, _ := startServer("web-1", "web-2")
	defer server.Close()
	client, err := reflector.NewClient(&reflector.Config{Host: server.URL()})
	require.NoError(t, err)
	lw, err := reflector.NewListerWatcher[*corev1.Pod](client, reflector.Target{Namespace: "default"})
	require.NoError(t, err)
	store := chanStore{objs: make(chan *corev1.Pod, 10)}
	r := reflector.New(lw, reflector.Store[*corev1.Pod](store),
		reflector.WithSharing[*corev1.Pod](), reflector.WithRelistInterval[*corev1.Pod](50*time.Millisecond),
		reflector.WithTransform(func(p *corev1.Pod) (*corev1.Pod, error) { return p, nil }))
	defer run(t, r)()
	first, second := <-store.objs, <-store.objs
	require.True(t, sameMap(first.Labels, second.Labels), "the objects of one list share their labels")
	again := <-store.objs // listed again, 50 ms later
	require.Equal(t, first.Name, again.Name)
	assert.False(t, sameMap(first.Labels, again.Labels), "an object of the next list shares a part remembered from the last")
}

func sameMap[K comparable, V any](a, b map[K]V) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}
