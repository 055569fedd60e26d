package listwatchtest_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/listwatchtest"
	"github.com/listwatch/listwatch/reflector"
)

// kube-apiserver v1.37 registers field label conversions of their own for
// resource.k8s.io/v1 ResourceSlices (pkg/apis/resource/v1/conversion.go:27:
// metadata.name, spec.nodeName, spec.driver, spec.pool.name, and no
// metadata.namespace), for certificates.k8s.io/v1 ClusterTrustBundles
// (pkg/apis/certificates/v1/conversion.go:45: metadata.name,
// spec.signerName) and PodCertificateRequests (:60: metadata.name,
// spec.signerName, spec.podName, spec.nodeName, and no
// metadata.namespace); their registries compute those fields
// (pkg/registry/resource/resourceslice/strategy.go:183,
// pkg/registry/certificates/*/storage/storage.go getAttrs). DRA drivers
// and the kubelet watch ResourceSlices by spec.driver and spec.nodeName;
// a Source refused those selectors, and took metadata.namespace.
func TestFieldSelectorsOfResourcesWithTheirOwnFields(t *testing.T) {
	slices := listwatchtest.NewSource[*resourcev1.ResourceSlice]()
	node := "n1"
	for _, s := range []*resourcev1.ResourceSlice{
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: resourcev1.ResourceSliceSpec{Driver: "gpu.example.com", NodeName: &node, Pool: resourcev1.ResourcePool{Name: "p1"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: resourcev1.ResourceSliceSpec{Driver: "net.example.com", Pool: resourcev1.ResourcePool{Name: "p2"}}},
	} {
		_, err := slices.Create(s)
		require.NoError(t, err)
	}
	for _, sel := range []string{"spec.driver=gpu.example.com", "spec.nodeName=n1", "spec.pool.name=p1"} {
		lw, err := slices.For(reflector.Target{FieldSelector: sel})
		if assert.NoError(t, err, "kube-apiserver serves %s on resourceslices", sel) {
			assert.Equal(t, []string{"a"}, names(t, anyLister[*resourcev1.ResourceSlice]{lw}), sel)
		}
	}
	_, err := slices.For(reflector.Target{FieldSelector: "metadata.namespace=x"})
	assert.True(t, apierrors.IsBadRequest(err), "kube-apiserver refuses metadata.namespace on resourceslices: %v", err)

	_, err = listwatchtest.NewSource[*certificatesv1.ClusterTrustBundle]().For(reflector.Target{FieldSelector: "spec.signerName=example.com/s"})
	assert.NoError(t, err, "kube-apiserver serves spec.signerName on clustertrustbundles")
	pcrs := listwatchtest.NewSource[*certificatesv1.PodCertificateRequest]()
	_, err = pcrs.For(reflector.Target{FieldSelector: "spec.nodeName=n1"})
	assert.NoError(t, err, "kube-apiserver serves spec.nodeName on podcertificaterequests")
	_, err = pcrs.For(reflector.Target{FieldSelector: "metadata.namespace=ns"})
	assert.True(t, apierrors.IsBadRequest(err), "kube-apiserver refuses metadata.namespace on podcertificaterequests: %v", err)
}

// kube-apiserver gives a generation to kinds with no Spec field:
// EndpointSlices (pkg/registry/discovery/endpointslice/strategy.go:63, 1 on
// create; :81, +1 when anything but metadata changes, or the labels),
// PodTemplates (pkg/registry/core/podtemplate/strategy.go:51, :86),
// PriorityClasses (pkg/registry/scheduling/priorityclass/strategy.go:48)
// and webhook configurations
// (pkg/registry/admissionregistration/validatingwebhookconfiguration/strategy.go:52, :63).
// A Source gave them 0, whatever the test set, so code that compares
// generations (the endpointslice tracker's ShouldSync) saw no change where
// production sees one.
func TestGenerationOfKindsWithoutASpec(t *testing.T) {
	eps := listwatchtest.NewSource[*discoveryv1.EndpointSlice]()
	s, err := eps.Create(&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-abc"}, AddressType: discoveryv1.AddressTypeIPv4})
	require.NoError(t, err)
	assert.Equal(t, int64(1), s.Generation, "endpointslice/strategy.go:63")
	s.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}}
	s, err = eps.Update(s)
	require.NoError(t, err)
	assert.Equal(t, int64(2), s.Generation, "endpointslice/strategy.go:81: endpoints changed")
	s.Labels = map[string]string{"kubernetes.io/service-name": "web"}
	s, err = eps.Update(s)
	require.NoError(t, err)
	assert.Equal(t, int64(3), s.Generation, "endpointslice/strategy.go:81: labels changed")

	vwc, err := listwatchtest.NewSource[*admissionregistrationv1.ValidatingWebhookConfiguration]().Create(
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "v"}})
	require.NoError(t, err)
	assert.Equal(t, int64(1), vwc.Generation, "validatingwebhookconfiguration/strategy.go:52")

	pt, err := listwatchtest.NewSource[*corev1.PodTemplate]().Create(&corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "t"}})
	require.NoError(t, err)
	assert.Equal(t, int64(1), pt.Generation, "podtemplate/strategy.go:51")

	pc, err := listwatchtest.NewSource[*schedulingv1.PriorityClass]().Create(&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000})
	require.NoError(t, err)
	assert.Equal(t, int64(1), pc.Generation, "priorityclass/strategy.go:48")
}

// kube-apiserver stores a metav1.Time to the second: its protobuf form
// keeps no nanoseconds (apimachinery pkg/apis/meta/v1/time_proto.go
// ProtoTime, "Nanos" left out; JSON is RFC 3339 to the second). So what a
// write stores, and what every reader and watcher gets, has whole-second
// times; and two writes that differ only below the second store the same
// bytes, and the second writes nothing (etcd3 store GuaranteedUpdate:
// "if !origState.stale && bytes.Equal(data, origState.data)", no new
// resourceVersion, no event). A Source kept the nanoseconds: the informer
// got times no server sends, and the second write made a MODIFIED event
// that production never sends.
func TestTimesAreStoredToTheSecond(t *testing.T) {
	src := listwatchtest.NewSource[*corev1.Pod]()
	base := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	p := pod("ns", "a")
	p.Status.StartTime = &metav1.Time{Time: base.Add(100 * time.Millisecond)}
	created, err := src.Create(p)
	require.NoError(t, err)
	assert.Equal(t, base, created.Status.StartTime.UTC(), "stored to the second")

	w, err := src.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: created.ResourceVersion})
	require.NoError(t, err)
	defer w.Close()

	again := created.DeepCopy()
	again.Status.StartTime = &metav1.Time{Time: base.Add(700 * time.Millisecond)}
	updated, err := src.UpdateStatus(again)
	require.NoError(t, err)
	assert.Equal(t, created.ResourceVersion, updated.ResourceVersion,
		"the same bytes as stored: kube-apiserver writes nothing")
}

// kube-apiserver refuses an Update without a resourceVersion (422
// Invalid, "metadata.resourceVersion: Invalid value: 0x0: must be
// specified for an update": apiserver pkg/registry/generic/registry/store.go,
// Update, "if newResourceVersion == 0") for the resources whose strategy
// says AllowUnconditionalUpdate false: every custom resource
// (apiextensions-apiserver pkg/registry/customresource/strategy.go:269),
// Leases (pkg/registry/coordination/lease/strategy.go:101),
// PodDisruptionBudgets (pkg/registry/policy/poddisruptionbudget/strategy.go:148)
// and others. A Source took it and overwrote whatever was stored, so a
// controller that writes a freshly built object passed its test and
// failed in production.
func TestUpdateWithoutResourceVersionRefusedWhereTheServerRefusesIt(t *testing.T) {
	widgets := listwatchtest.NewSource[*unstructured.Unstructured](
		listwatchtest.WithResource(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "Widget"))
	_, err := widgets.Create(newWidget("w"))
	require.NoError(t, err)
	fresh := newWidget("w")
	fresh.Object["spec"] = map[string]any{"size": int64(2)}
	_, err = widgets.Update(fresh)
	assert.True(t, apierrors.IsInvalid(err), "a custom resource: %v", err)

	leases := listwatchtest.NewSource[*coordinationv1.Lease]()
	_, err = leases.Create(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "leader"}})
	require.NoError(t, err)
	holder := "me"
	_, err = leases.Update(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "leader"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}})
	assert.True(t, apierrors.IsInvalid(err), "a Lease: %v", err)
}

// When an Update takes the last finalizer off an object being deleted,
// kube-apiserver deletes it and answers the PUT with the object of the
// request, not the stored one: apiserver
// pkg/registry/generic/registry/store.go:658-680 (deleteWithoutFinalizers,
// "clients are expecting an updated object if a PUT succeeded ... return
// the object in the request instead"). A Source returned the stored state,
// finalizers still listed: a controller that checks its finalizer is gone
// from what Update returned saw it still there.
func TestUpdateRemovingTheLastFinalizerAnswersWithTheRequest(t *testing.T) {
	src := listwatchtest.NewSource[*corev1.ConfigMap]()
	cm, err := src.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Finalizers: []string{"example.com/f"}}})
	require.NoError(t, err)
	require.NoError(t, src.Delete("ns", "c"))
	cm, _ = src.Get("ns", "c")
	cm.Finalizers = nil
	got, err := src.Update(cm)
	require.NoError(t, err)
	assert.Empty(t, got.Finalizers, "the PUT's own object")
}

// kube-apiserver's watch cache accepts a plain watch from a
// resourceVersion it has not reached, and sends the events past it
// (internal/e2e/testdata/conformance/too-large-rv-watch.json: 200, the
// stream held open). A Source refused it at once with 504 "Too large
// resource version", which only a LIST gets.
func TestWatchFromAResourceVersionAheadWaitsForIt(t *testing.T) {
	src := listwatchtest.NewSource[*corev1.Pod]()
	_, err := src.Create(pod("ns", "a")) // resourceVersion 1
	require.NoError(t, err)
	w, err := src.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: "3"})
	require.NoError(t, err)
	defer w.Close()
	for _, name := range []string{"b", "c", "d"} { // 2, 3, 4
		_, err := src.Create(pod("ns", name))
		require.NoError(t, err)
	}
	ev, err := w.Next()
	require.NoError(t, err)
	assert.Equal(t, "d", ev.Object.Name, "the first event past resourceVersion 3")

	_, err = src.List(t.Context(), reflector.ListOptions{ResourceVersion: "9", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
		func(*corev1.Pod) error { return nil })
	assert.True(t, apierrors.IsTimeout(err), "a LIST ahead of the Source is refused: %v", err)
}

// A CRD may have a group under k8s.io (Gateway API's
// gateway.networking.k8s.io, the VPA's autoscaling.k8s.io,
// snapshot.storage.k8s.io): apiextensions-apiserver serves it as any
// custom resource: no update without a resourceVersion
// (customResourceStrategy.AllowUnconditionalUpdate false), /status the
// handler's NotFound when the CRD has none, and a status change through
// a PUT moves the generation (PrepareForUpdate's copyNonMetadata).
func TestCustomResourceOfAK8sIOGroup(t *testing.T) {
	routes := schema.GroupResource{Group: "gateway.networking.k8s.io", Resource: "httproutes"}
	src := listwatchtest.NewSource[*unstructured.Unstructured](listwatchtest.WithResource(routes, "HTTPRoute"))
	r := &unstructured.Unstructured{}
	r.SetAPIVersion("gateway.networking.k8s.io/v1")
	r.SetKind("HTTPRoute")
	r.SetNamespace("ns")
	r.SetName("r")
	r, err := src.Create(r)
	require.NoError(t, err)

	r.Object["status"] = map[string]any{"parents": []any{}}
	r2, err := src.Update(r)
	require.NoError(t, err)
	assert.Equal(t, int64(2), r2.GetGeneration(), "a CR without /status: a status change moves the generation")

	_, err = src.UpdateStatus(r2)
	assert.EqualError(t, err, `httproutes.gateway.networking.k8s.io "r" not found`, "the CR handler's NotFound")

	r2.SetResourceVersion("")
	r2.Object["spec"] = map[string]any{"hostnames": []any{"a"}}
	_, err = src.Update(r2)
	assert.True(t, apierrors.IsInvalid(err), "a CR's update needs a resourceVersion: got %v", err)
}

// kube-apiserver v1.37 refuses an update (and a /status update: the status
// strategies embed the strategy) without a resourceVersion for these
// kinds too (AllowUnconditionalUpdate false: pkg/registry/storagemigration/
// storagemigration/strategy.go:105, scheduling/podgroup/strategy.go:119,
// resource/devicetaintrule/strategy.go:129 for v1).
func TestUpdateWithoutResourceVersionOfNewerKinds(t *testing.T) {
	svms := listwatchtest.NewSource[*storagemigrationv1.StorageVersionMigration]()
	m, err := svms.Create(&storagemigrationv1.StorageVersionMigration{ObjectMeta: metav1.ObjectMeta{Name: "m"}})
	require.NoError(t, err)
	m.ResourceVersion = ""
	m.Status.ResourceVersion = "5"
	_, err = svms.UpdateStatus(m)
	assert.True(t, apierrors.IsInvalid(err), "storageversionmigrations /status without a resourceVersion: got %v", err)

	pgs := listwatchtest.NewSource[*schedulingv1beta1.PodGroup]()
	g, err := pgs.Create(&schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g"}})
	require.NoError(t, err)
	g.ResourceVersion = ""
	g.Labels = map[string]string{"a": "b"}
	_, err = pgs.Update(g)
	assert.True(t, apierrors.IsInvalid(err), "podgroups without a resourceVersion: got %v", err)

	dtrs := listwatchtest.NewSource[*resourcev1.DeviceTaintRule]()
	d, err := dtrs.Create(&resourcev1.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "d"}})
	require.NoError(t, err)
	d.ResourceVersion = ""
	d.Labels = map[string]string{"a": "b"}
	_, err = dtrs.Update(d)
	assert.True(t, apierrors.IsInvalid(err), "resource.k8s.io/v1 devicetaintrules without a resourceVersion: got %v", err)
}

// kube-apiserver's generic store creates the object of an update when none
// is stored and the strategy's AllowCreateOnUpdate is true (Leases,
// Services, Events, RBAC, ...): 201 Created, stamped as a create stamps
// it, whatever resourceVersion the request names, before it asks for one
// (an unconditional PUT of a missing Lease creates it, where one of a
// stored Lease is 422). A uid in the request is a precondition that the
// missing object fails: 409. A Service's status strategy inherits its
// create on update. Other kinds stay NotFound. A Source answered
// NotFound to them all.
func TestUpdateCreatesWhereTheServerDoes(t *testing.T) {
	leases := listwatchtest.NewSource[*coordinationv1.Lease]()
	w, err := leases.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: leases.ResourceVersion()})
	require.NoError(t, err)
	defer w.Close()
	for _, rv := range []string{"", "12345"} {
		name := "l" + rv
		got, err := leases.Update(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}})
		require.NoError(t, err, "resourceVersion %q", rv)
		assert.NotEmpty(t, got.UID, rv)
		assert.False(t, got.CreationTimestamp.IsZero(), rv)
		assert.Equal(t, int64(1), got.Generation, rv)
		assert.Equal(t, leases.ResourceVersion(), got.ResourceVersion, rv)
		ev, err := w.Next()
		require.NoError(t, err)
		assert.Equal(t, reflector.Added, ev.Type, rv)
		assert.Equal(t, got, ev.Object, rv)
	}
	_, err = leases.Update(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "l"}})
	assert.True(t, apierrors.IsInvalid(err), "a stored Lease still needs a resourceVersion: %v", err)

	_, err = leases.Update(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "u", UID: "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f"}})
	assert.True(t, apierrors.IsConflict(err), "%v", err)
	_, ok := leases.Get("ns", "u")
	assert.False(t, ok)

	services := listwatchtest.NewSource[*corev1.Service]()
	svc, err := services.UpdateStatus(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}})
	require.NoError(t, err, "a Service's status strategy creates on update too")
	assert.NotEmpty(t, svc.UID)

	roles := listwatchtest.NewSource[*unstructured.Unstructured](listwatchtest.WithResource(
		schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "roles"}, "Role"))
	role := &unstructured.Unstructured{}
	role.SetAPIVersion("rbac.authorization.k8s.io/v1")
	role.SetKind("Role")
	role.SetNamespace("ns")
	role.SetName("r")
	_, err = roles.Update(role)
	require.NoError(t, err, "an Unstructured of a resource that creates on update")

	_, err = listwatchtest.NewSource[*corev1.Pod]().Update(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	_, err = listwatchtest.NewSource[*unstructured.Unstructured]().Update(newWidget("w"))
	assert.True(t, apierrors.IsNotFound(err), "a custom resource's strategy does not create on update: %v", err)
}

// Delete deletes as propagationPolicy Background does, whatever the kind:
// a Job, which kube-apiserver's DELETE without options (default policy
// Orphan) would mark with the "orphan" finalizer, goes at once, as its
// doc says.
func TestDeleteOfAJobIsBackground(t *testing.T) {
	jobs := listwatchtest.NewSource[*batchv1.Job]()
	j, err := jobs.Create(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j"}})
	require.NoError(t, err)
	w, err := jobs.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: j.ResourceVersion})
	require.NoError(t, err)
	defer w.Close()
	require.NoError(t, jobs.Delete("ns", "j"))
	ev, err := w.Next()
	require.NoError(t, err)
	assert.Equal(t, reflector.Deleted, ev.Type)
	assert.Empty(t, ev.Object.Finalizers)
	_, ok := jobs.Get("ns", "j")
	assert.False(t, ok)
}
