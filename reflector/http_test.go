package reflector_test

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/reflector"
)

// TestProtobufIsRefusedWhereItCannotBeRead: asking for protobuf is an error
// for what is read as JSON (custom resources, metadata), never a silent
// JSON.
func TestProtobufIsRefusedWhereItCannotBeRead(t *testing.T) {
	client, err := reflector.NewClient(&reflector.Config{Host: "http://127.0.0.1:1"})
	require.NoError(t, err)
	pb := reflector.WithContentType(reflector.Protobuf)

	_, err = reflector.NewListerWatcher[*corev1.Pod](client, reflector.Target{}, pb)
	assert.NoError(t, err, "pods have a protobuf form")

	crd := reflector.Target{Resource: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, Kind: "Widget"}
	_, err = reflector.NewListerWatcher[*unstructured.Unstructured](client, crd, pb)
	assert.ErrorContains(t, err, "protobuf")

	pods := reflector.Target{Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod"}
	_, err = reflector.NewListerWatcher[*metav1.PartialObjectMetadata](client, pods, pb)
	assert.ErrorContains(t, err, "reads JSON")
	_, err = reflector.NewListerWatcher[*metav1.PartialObjectMetadata](client, pods)
	assert.NoError(t, err)
}

// TestClientLoggerGetsTheClientsOwnReports: what the HTTP client does on its
// own (here: a token file it cannot read, with a static token standing in)
// reaches WithClientLogger, without the credential.
func TestClientLoggerGetsTheClientsOwnReports(t *testing.T) {
	var buf bytes.Buffer
	cfg := &reflector.Config{Host: "https://127.0.0.1:1", BearerToken: "s3cr3t", BearerTokenFile: filepath.Join(t.TempDir(), "missing")}
	_, err := reflector.NewClient(cfg, reflector.WithClientLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	require.NoError(t, err)
	assert.Contains(t, buf.String(), "bearer token file")
	assert.NotContains(t, buf.String(), "s3cr3t")
}

// TestPanickingTransformOverHTTP: over HTTP the transform runs inside the
// list decoder; its panic is still the transform's (skipped, reported),
// not malformed data from the server, and the LIST is not retried for it.
func TestPanickingTransformOverHTTP(t *testing.T) {
	for _, ct := range []reflector.ContentType{reflector.JSON, reflector.Protobuf} {
		server, _ := startServer("good", "bad")
		client, err := reflector.NewClient(&reflector.Config{Host: server.URL()})
		require.NoError(t, err)
		lw, err := reflector.NewListerWatcher[*corev1.Pod](client, reflector.Target{Namespace: "default"}, reflector.WithContentType(ct))
		require.NoError(t, err)
		errs := make(chan error, 10)
		store := chanStore{objs: make(chan *corev1.Pod, 10)}
		r := reflector.New(lw, reflector.Store[*corev1.Pod](store),
			reflector.WithMode[*corev1.Pod](reflector.ListWatch),
			reflector.WithErrorHandler[*corev1.Pod](func(err error) { errs <- err }),
			reflector.WithTransform(func(p *corev1.Pod) (*corev1.Pod, error) {
				if p.Name == "bad" {
					panic("transform bug")
				}
				return p, nil
			}))
		stop := run(t, r)
		err = <-errs
		assert.ErrorIs(t, err, reflector.ErrSkipped, ct)
		assert.ErrorContains(t, err, "transform bug")
		assert.Equal(t, "good", (<-store.objs).Name)
		stop()
		server.Close()
		assert.Empty(t, errs, "one error only: the list was not retried")
	}
}
