package apisim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/listwatch/listwatch/internal/kubeproto"
)

// protoEvent returns one complete protobuf watch frame.
func protoEvent(typ string, obj encoded) []byte {
	b := appendProtoEventHead(nil, typ, obj)
	b = append(b, obj.body...)
	return append(b, kubeproto.UnknownTrailer...)
}

func TestEnvelopeMatchesRuntimeUnknown(t *testing.T) {
	raw := []byte{1, 2, 3, 4, 5}
	want, err := (&runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, Raw: raw}).Marshal()
	assert.NoError(t, err)
	assert.Equal(t, append([]byte("k8s\x00"), want...), kubeproto.Envelope("apps/v1", "Deployment", raw))
	assert.Equal(t, len(want)+4, kubeproto.EnvelopeLen("apps/v1", "Deployment", len(raw)))
}

func TestProtoEventMatchesWatchEvent(t *testing.T) {
	raw := make([]byte, 300) // lengths above 127 need two varint bytes
	obj := encoded{apiVersion: "v1", kind: "Pod", body: raw}
	we := metav1.WatchEvent{Type: "MODIFIED", Object: runtime.RawExtension{Raw: kubeproto.Envelope("v1", "Pod", raw)}}
	want, err := we.Marshal()
	assert.NoError(t, err)
	frame := protoEvent("MODIFIED", obj)
	assert.Equal(t, []byte{0, 0, byte(len(want) >> 8), byte(len(want))}, frame[:4])
	assert.Equal(t, want, frame[4:])
}
