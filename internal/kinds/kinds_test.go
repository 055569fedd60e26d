package kinds

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		got      func() (string, string, error)
		gvk, gvr string
	}{
		{wrap(Of[*corev1.Pod]), "/v1, Kind=Pod", "/v1, Resource=pods"},
		{wrap(Of[*corev1.Endpoints]), "/v1, Kind=Endpoints", "/v1, Resource=endpoints"},
		{wrap(Of[*appsv1.Deployment]), "apps/v1, Kind=Deployment", "apps/v1, Resource=deployments"},
		{wrap(Of[*networkingv1.Ingress]), "networking.k8s.io/v1, Kind=Ingress", "networking.k8s.io/v1, Resource=ingresses"},
		{wrap(Of[*networkingv1.NetworkPolicy]), "networking.k8s.io/v1, Kind=NetworkPolicy", "networking.k8s.io/v1, Resource=networkpolicies"},
		{wrap(Of[*rbacv1.ClusterRole]), "rbac.authorization.k8s.io/v1, Kind=ClusterRole", "rbac.authorization.k8s.io/v1, Resource=clusterroles"},
	} {
		gvk, gvr, err := tc.got()
		require.NoError(t, err)
		assert.Equal(t, tc.gvk, gvk)
		assert.Equal(t, tc.gvr, gvr)
	}
	_, _, err := Of[*unstructured.Unstructured]()
	assert.ErrorContains(t, err, "not a k8s.io/api type")
}

func wrap[A, B interface{ String() string }](f func() (A, B, error)) func() (string, string, error) {
	return func() (string, string, error) {
		a, b, err := f()
		return a.String(), b.String(), err
	}
}
