package apisim_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/apisim"
)

func TestEndStream(t *testing.T) {
	s, path := watchFrom3(t, apisim.EndStream().After(2))
	w := watch(t, s, path)
	w.next(t)
	w.next(t)
	assert.Equal(t, io.EOF, w.end(t), "a clean end after two events")

	s.Inject(apisim.Match{Verb: apisim.VerbList}, apisim.EndStream().After(1), 1)
	resp, body := get(t, s, "/api/v1/pods")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), `"name":"p0"`)
	assert.NotContains(t, string(body), `"name":"p1"`)
	assert.False(t, strings.HasSuffix(string(body), "]}\n"), "the list body stops at an item boundary")
}

func TestStatusShapes(t *testing.T) {
	st := apierrors.NewTimeoutError("Too large resource version: 9, current: 3", 1).ErrStatus
	st.Details.Causes = []metav1.StatusCause{{Message: "Too large resource version"}}

	s := start(t)
	createPods(t, s, "default", 1)
	s.Inject(apisim.Match{Verb: apisim.VerbList}, apisim.StatusResponse(st), 1)
	resp, body := get(t, s, "/api/v1/pods")
	got := status(t, resp, body, http.StatusGatewayTimeout)
	assert.Equal(t, st.Details.Causes, got.Details.Causes)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))

	s, path := watchFrom3(t, apisim.ErrorEventStatus(st).After(1))
	w := watch(t, s, path)
	w.next(t)
	e := w.next(t)
	require.Equal(t, "ERROR", e.Type)
	got = e.status(t)
	assert.Equal(t, int32(http.StatusGatewayTimeout), got.Code)
	assert.Equal(t, st.Message, got.Message)
	assert.Equal(t, st.Details.Causes, got.Details.Causes)
	assert.Equal(t, io.EOF, w.end(t))
	assert.Equal(t, "error-event 504 after 1", apisim.ErrorEventStatus(st).After(1).String())
}

func TestDerivedUIDs(t *testing.T) {
	a, b := start(t, apisim.WithDerivedUIDs()), start(t, apisim.WithDerivedUIDs())
	createPods(t, a, "default", 3)
	createPods(t, b, "default", 2)
	pa, _, err := apisim.Of[*metav1.PartialObjectMetadata](a, apisim.Pods()).List("")
	require.NoError(t, err)
	pb, _, err := apisim.Of[*metav1.PartialObjectMetadata](b, apisim.Pods()).List("")
	require.NoError(t, err)
	require.Len(t, pb, 2)
	for i := range pb {
		assert.Equal(t, pa[i].UID, pb[i].UID, "same writes, same uid")
		assert.Equal(t, pa[i].ResourceVersion, pb[i].ResourceVersion)
	}
	assert.NotEqual(t, pa[0].UID, pa[1].UID)
}
