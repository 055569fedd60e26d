package apisim_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/apisim"
)

// A GET honours resourceVersion as kube-apiserver's does: "" and "0" read
// the newest state, N the newest once the server has reached N, after
// waiting for it, else 504 ResourceVersionTooLarge; a resourceVersion that
// is not a number is a 500. apisim ignored the parameter.
func TestGetResourceVersion(t *testing.T) {
	s := start(t, apisim.WithTooLargeWait(50*time.Millisecond))
	pods := apisim.Of[*corev1.Pod](s, apisim.Pods())
	p, err := pods.Create(apisim.MakePod("default", "p"))
	require.NoError(t, err)
	p.Labels["v"] = "2"
	p, err = pods.Update(p)
	require.NoError(t, err)
	path := apisim.Pods().ObjectPath("default", "p")

	for _, rv := range []string{"", "0", rvPlus(t, p.ResourceVersion, -1), p.ResourceVersion} {
		resp, body := get(t, s, path+"?resourceVersion="+rv)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
		assert.JSONEq(t, mustJSON(t, p), string(body), "at %q: the newest state", rv)
	}

	resp, body := get(t, s, path+"?resourceVersion=1000")
	st := status(t, resp, body, http.StatusGatewayTimeout)
	assert.Equal(t, metav1.StatusReasonTimeout, st.Reason)
	assert.Equal(t, "Timeout: Too large resource version: 1000, current: "+p.ResourceVersion, st.Message)
	require.NotNil(t, st.Details)
	assert.Equal(t, []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}, st.Details.Causes)
	resp, body = get(t, s, apisim.Pods().ObjectPath("default", "nope")+"?resourceVersion=1000")
	status(t, resp, body, http.StatusGatewayTimeout)

	resp, body = get(t, s, path+"?resourceVersion=abc")
	st = status(t, resp, body, http.StatusInternalServerError)
	assert.Equal(t, `resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`, st.Message)
	assert.Empty(t, st.Reason)
}

// A GET at a resourceVersion one past the server's answers once a write
// creates it, with the state as of that write. Time is synctest's, the
// request goes straight to ServeHTTP.
func TestGetWaitsForAResourceVersionAboutToExist(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := apisim.New(apisim.WithResources(apisim.Pods()))
		defer s.Close()
		pods := apisim.Of[*corev1.Pod](s, apisim.Pods())
		p, err := pods.Create(apisim.MakePod("default", "p"))
		require.NoError(t, err)

		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet,
			apisim.Pods().ObjectPath("default", "p")+"?resourceVersion="+rvPlus(t, p.ResourceVersion, 1), nil)
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.ServeHTTP(rec, req)
		}()
		synctest.Wait()
		select {
		case <-done:
			t.Fatalf("the GET answered %d before its resourceVersion existed", rec.Code)
		default:
		}
		p.Labels["v"] = "2"
		p, err = pods.Update(p)
		require.NoError(t, err)
		<-done
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		assert.JSONEq(t, mustJSON(t, p), rec.Body.String())
	})
}
