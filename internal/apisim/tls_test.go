package apisim_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/listwatch/listwatch/internal/apisim"
)

func startTLS(t *testing.T, opts ...apisim.Option) *apisim.Server {
	t.Helper()
	s := apisim.New(append([]apisim.Option{apisim.WithResources(apisim.Pods())}, opts...)...)
	require.NoError(t, s.StartTLS())
	t.Cleanup(s.Close)
	return s
}

// clientTrusting returns an HTTP/2-capable client trusting the given PEMs.
func clientTrusting(pems ...[]byte) *http.Client {
	pool := x509.NewCertPool()
	for _, p := range pems {
		pool.AppendCertsFromPEM(p)
	}
	return &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true,
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

func TestTLSWithHTTP2(t *testing.T) {
	s := startTLS(t)
	assert.Regexp(t, `^https://127\.0\.0\.1:\d+$`, s.URL())
	assert.Equal(t, "localhost", s.ServerName())
	require.NotEmpty(t, s.CAPEM())

	resp, err := clientTrusting(s.CAPEM()).Get(s.URL() + "/api/v1/pods")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "HTTP/2.0", resp.Proto)

	other, err := apisim.NewCA("other")
	require.NoError(t, err)
	_, err = clientTrusting(other.PEM()).Get(s.URL() + "/readyz")
	var unknown x509.UnknownAuthorityError
	assert.ErrorAs(t, err, &unknown)
}

func TestTLSWithoutHTTP2(t *testing.T) {
	s := startTLS(t, apisim.WithHTTP2(false))
	resp, err := s.Client().Get(s.URL() + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, "HTTP/1.1", resp.Proto)
}

func TestServeWithAnotherCA(t *testing.T) {
	s := startTLS(t)
	oldCA := s.CAPEM()
	rotated, err := apisim.NewCA("rotated")
	require.NoError(t, err)
	require.NoError(t, s.ServeWithCA(rotated))
	assert.Equal(t, rotated.PEM(), s.CAPEM())

	_, err = clientTrusting(oldCA).Get(s.URL() + "/readyz")
	var unknown x509.UnknownAuthorityError
	assert.ErrorAs(t, err, &unknown, "wrong CA")

	resp, err := clientTrusting(oldCA, rotated.PEM()).Get(s.URL() + "/readyz")
	require.NoError(t, err, "a bundle with both CAs survives the rotation")
	resp.Body.Close()

	plain := apisim.New()
	assert.Error(t, plain.ServeWithCA(rotated), "plain HTTP has no certificate")
	assert.Nil(t, plain.CAPEM())
}

func TestDropConnectionOverHTTP2ResetsTheStream(t *testing.T) {
	s := startTLS(t)
	createPods(t, s, "default", 2)
	s.Inject(apisim.Match{Verb: apisim.VerbWatch}, apisim.DropConnection().After(1), 1)
	resp, err := s.Client().Get(s.URL() + "/api/v1/pods?watch=1")
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, "HTTP/2.0", resp.Proto)
	_, err = io.ReadAll(resp.Body)
	assert.Error(t, err, "the stream is reset, not ended")
}
