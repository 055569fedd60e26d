package apisim_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kube-apiserver keeps the first 58 characters of a generateName and adds
// 5 random ones (SimpleNameGenerator): a generated name is at most 63.
// apisim kept the whole generateName.
func TestGenerateNameIsCutTo58Characters(t *testing.T) {
	s := start(t)
	long := strings.Repeat("a", 70)
	resp, body := do(t, s, http.MethodPost, "/api/v1/namespaces/default/configmaps", jsonBody(t, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{GenerateName: long}}))
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(body))
	var got corev1.ConfigMap
	require.NoError(t, json.Unmarshal(body, &got))
	assert.Len(t, got.Name, 63)
	assert.True(t, strings.HasPrefix(got.Name, long[:58]), got.Name)
}
