package wire

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A value cut off deep inside its nesting, where the decoder keeps a
// value's bytes (SkipAndReturnBytes: an ERROR event's object, a list
// body's Status fields, managedFields not whole in the read buffer, a
// part shared by its bytes) costs about what it read: json-iterator
// appended its whole read buffer again at every level it unwound, and
// 32 KiB of input cost 1.5 GB of allocations.
func TestValueCutDeepInsideCostsLittle(t *testing.T) {
	deep := strings.Repeat("[", 9990) + strings.Repeat(" ", 22000)
	pods := mustCodec[*corev1.Pod](t, podGVK)
	shared := mustCodec[*corev1.Pod](t, podGVK, WithSharedParts())
	watch := func(c *Codec[*corev1.Pod]) func(string) error {
		return func(body string) error {
			_, err := NewJSONWatchDecoder(strings.NewReader(body), c, 0).Next()
			return err
		}
	}
	list := func(body string) error {
		_, err := DecodeJSONList(strings.NewReader(body), pods, 0, func(*corev1.Pod) error { return nil })
		return err
	}
	for name, tc := range map[string]struct {
		body   string
		decode func(string) error
	}{
		"ERROR event":         {`{"type":"ERROR","object":{"details":` + deep, watch(pods)},
		"list Status":         {`{"details":` + deep, list},
		"managedFields":       {`{"type":"ADDED","object":{"metadata":{"managedFields":[{"fieldsV1":` + deep, watch(pods)},
		"shared part":         {`{"type":"ADDED","object":{"spec":{"containers":[{"name":"c","env":` + deep, watch(shared)},
		"list managedFields":  {`{"items":[{"metadata":{"managedFields":[{"fieldsV1":` + deep, list},
		"ERROR event, frames": {`{"type":"ERROR","object":{"details":` + deep + `}`, watch(pods)},
	} {
		t.Run(name, func(t *testing.T) {
			var err error
			n := allocatedBy(func() { err = tc.decode(tc.body) })
			if err == nil {
				t.Fatal("no error for a value cut off")
			}
			if n > 16<<20 {
				t.Errorf("%d MiB allocated for %d bytes of input (%v)", n>>20, len(tc.body), err)
			}
		})
	}
}

// A JSON item or event that does not decode is an error that quotes none
// of its bytes: json-iterator's errors quote some 100 bytes around where
// they failed, a Secret's data among them, and the informer logs the
// error at Warn. apimachinery's decoding errors quote no data either.
func TestMalformedJSONErrorsQuoteNoData(t *testing.T) {
	codec, err := TypedCodec[*corev1.Secret](schema.GroupVersionKind{Version: "v1", Kind: "Secret"})
	require.NoError(t, err)
	const secret = "aHVudGVyMi1TVVBFUlNFQ1JFVA=="
	secretJSON := `{"kind":"Secret","apiVersion":"v1","metadata":{"name":"db","namespace":"ns","resourceVersion":"1"},"data":{"password":"` + secret + `"},"immutable":"yes"}`

	list := `{"kind":"SecretList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[` + secretJSON + `]}`
	_, err = DecodeJSONList(strings.NewReader(list), codec, 0, func(*corev1.Secret) error { return nil })
	require.ErrorIs(t, err, ErrMalformed)
	assert.NotContains(t, err.Error(), secret[:8], "a list item's error")
	assert.Contains(t, err.Error(), "Immutable", "it still names the field")

	_, err = NewJSONWatchDecoder(strings.NewReader(`{"type":"ADDED","object":`+secretJSON+"}\n"), codec, 0).Next()
	require.ErrorIs(t, err, ErrMalformed)
	assert.NotContains(t, err.Error(), secret[:8], "a watch event's error")
}
