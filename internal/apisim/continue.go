package apisim

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/listwatch/listwatch/internal/apistatus"
)

// Continue tokens have kube-apiserver's format: unpadded base64url of
// {"v":"meta.k8s.io/v1","rv":N,"start":"/key\u0000"}, where rv is the
// snapshot the first page was read at (-1: "the newest state", as in the
// token a 410 carries) and start is the key after which the next page
// begins, relative to the list's scope ("/name" in a namespace,
// "/namespace/name" across namespaces).

type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

// encodeContinue encodes a token; startKey is relative to the scope,
// without the leading slash.
func encodeContinue(rv int64, startKey string) string {
	b, _ := json.Marshal(continueToken{APIVersion: "meta.k8s.io/v1", ResourceVersion: rv, StartKey: "/" + startKey})
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeContinue returns the snapshot RV and the start key (relative to
// the scope), or the 400 kube-apiserver sends for a bad token.
func decodeContinue(token string) (int64, string, error) {
	invalid := func(format string, a ...any) error {
		return apierrors.NewBadRequest("invalid continue token: " + fmt.Sprintf(format, a...))
	}
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return 0, "", invalid("continue key is not valid: %v", err)
	}
	var t continueToken
	if err := json.Unmarshal(data, &t); err != nil {
		return 0, "", invalid("continue key is not valid: %v", err)
	}
	switch {
	case t.APIVersion != "meta.k8s.io/v1":
		return 0, "", invalid("continue key is not valid: server does not recognize this encoded version %v", t.APIVersion)
	case t.ResourceVersion == 0:
		return 0, "", invalid("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
	case t.StartKey == "":
		return 0, "", invalid("continue key is not valid: encoded start key empty (version meta.k8s.io/v1)")
	}
	key := t.StartKey
	if !strings.HasPrefix(key, "/") {
		key = "/" + key
	}
	if path.Clean(key) != key {
		return 0, "", invalid("continue key is not valid: %v", t.StartKey)
	}
	return t.ResourceVersion, key[1:], nil
}

// errContinueExpired is kube-apiserver's 410 for a token whose snapshot was
// compacted; it carries a token that continues from the newest state.
func errContinueExpired(startKey string) error {
	return apistatus.ContinueExpired(encodeContinue(-1, startKey))
}

// tokenExpired reports whether a token at snapshot rv outlived the
// continue TTL. The caller holds s.mu.
func (s *Server) tokenExpired(rv uint64) bool {
	if s.opts.continueTTL <= 0 {
		return false
	}
	issued, ok := s.tokenIssued[rv]
	if !ok {
		return rv <= s.tokensForgotten
	}
	return time.Since(issued) > s.opts.continueTTL
}

// noteTokenIssued remembers when the first token at snapshot rv was handed
// out. The caller holds s.mu.
func (s *Server) noteTokenIssued(rv uint64) {
	if s.opts.continueTTL <= 0 {
		return
	}
	if _, ok := s.tokenIssued[rv]; ok {
		return
	}
	now := time.Now()
	if len(s.tokenIssued) > 1024 {
		for k, t := range s.tokenIssued {
			if now.Sub(t) > s.opts.continueTTL {
				delete(s.tokenIssued, k)
				s.tokensForgotten = max(s.tokensForgotten, k)
			}
		}
	}
	s.tokenIssued[rv] = now
}
