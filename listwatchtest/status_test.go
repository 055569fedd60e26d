package listwatchtest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/listwatchtest"
	"github.com/listwatch/listwatch/reflector"
)

// modified reads the next events of w and requires them to be MODIFIED
// events of the objects at resourceVersions rvs, in order: a write that
// wrote nothing in between would have come as an event of its own.
func modified[T reflector.Object](t *testing.T, w reflector.Watcher[T], rvs ...string) {
	t.Helper()
	for _, rv := range rvs {
		ev, err := w.Next()
		require.NoError(t, err)
		assert.Equal(t, reflector.Modified, ev.Type)
		assert.Equal(t, rv, ev.Object.GetResourceVersion())
	}
}

// kube-apiserver's PUT to a Deployment, a Pod or another kind with a
// status subresource keeps the stored status, whatever the request's
// says: the strategies' PrepareForUpdate copy it from the stored object
// (k8s.io/kubernetes v1.37 pkg/registry/apps/deployment/strategy.go:113,
// "newDeployment.Status = oldDeployment.Status"; core/pod/strategy.go:110,
// "newPod.Status = oldPod.Status"); the status is written only through
// /status. A Source wrote it: a controller under test that set its status
// with Update passed, where against a server its status never changes.
func TestUpdateKeepsTheStoredStatus(t *testing.T) {
	src := listwatchtest.NewSource[*appsv1.Deployment]()
	d, err := src.Create(&appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Status:     appsv1.DeploymentStatus{Replicas: 1},
	})
	require.NoError(t, err)
	w, err := src.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: d.ResourceVersion})
	require.NoError(t, err)
	defer w.Close()

	d.Status.Replicas = 5
	same, err := src.Update(d)
	require.NoError(t, err)
	assert.Equal(t, d.ResourceVersion, same.ResourceVersion, "a change to the status only: nothing written")
	assert.Equal(t, int32(1), same.Status.Replicas)

	d.Labels = map[string]string{"app": "web"}
	labelled, err := src.Update(d)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"app": "web"}, labelled.Labels)
	assert.Equal(t, int32(1), labelled.Status.Replicas, "the stored status")
	assert.Equal(t, int64(1), labelled.Generation)

	replicas := int32(3)
	labelled.Spec.Replicas = &replicas
	labelled.Status = appsv1.DeploymentStatus{}
	scaled, err := src.Update(labelled)
	require.NoError(t, err)
	assert.Equal(t, int32(3), *scaled.Spec.Replicas)
	assert.Equal(t, int32(1), scaled.Status.Replicas, "an empty status is no change to it either")
	assert.Equal(t, int64(2), scaled.Generation, "a change to the spec")
	stored, _ := src.Get("ns", "web")
	assert.Equal(t, scaled, stored)
	modified(t, w, labelled.ResourceVersion, scaled.ResourceVersion)

	// A Pod, and a type of one's own that embeds one.
	pods := listwatchtest.NewSource[*cachedPod]()
	p, err := pods.Create(&cachedPod{Pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}})
	require.NoError(t, err)
	p.Status.Phase = corev1.PodRunning
	p.Labels = map[string]string{"app": "web"}
	p, err = pods.Update(p)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"app": "web"}, p.Labels)
	assert.Empty(t, p.Status.Phase, "the stored status")
}

// A PUT to /status writes the status alone: the status strategies keep
// the stored spec (deployment/strategy.go:174, "newDeployment.Spec =
// oldDeployment.Spec") and metadata (metav1.ResetObjectMetaForStatus:
// labels, annotations, finalizers, ownerReferences, deletionTimestamp,
// generation; the field manager keeps managedFields for a subresource),
// and rest.BeforeUpdate keeps the generation. Watchers get one MODIFIED
// per status write that changes the status, none for one that does not.
func TestUpdateStatusWritesTheStatusAlone(t *testing.T) {
	src := listwatchtest.NewSource[*appsv1.Deployment]()
	one := int32(1)
	d, err := src.Create(&appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{"note": "a"}, Finalizers: []string{"example.com/f"}},
		Spec: appsv1.DeploymentSpec{Replicas: &one},
	})
	require.NoError(t, err)
	w, err := src.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: d.ResourceVersion})
	require.NoError(t, err)
	defer w.Close()

	req := d.DeepCopy()
	three := int32(3)
	req.Spec.Replicas = &three
	req.Labels = map[string]string{"app": "other"}
	req.Annotations = nil
	req.Finalizers = nil
	req.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "c", UID: "u"}}
	req.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "me"}}
	req.Generation = 9
	req.Status = appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: 1, ObservedGeneration: 1}
	got, err := src.UpdateStatus(req)
	require.NoError(t, err)
	want := d.DeepCopy()
	want.Status = req.Status
	want.ResourceVersion = got.ResourceVersion
	assert.Equal(t, want, got, "the stored object with the new status")
	assert.NotEqual(t, d.ResourceVersion, got.ResourceVersion)
	stored, _ := src.Get("ns", "web")
	assert.Equal(t, got, stored)

	same, err := src.UpdateStatus(req)
	assert.True(t, apierrors.IsConflict(err), "an old resourceVersion: %v", err)
	req.ResourceVersion = ""
	same, err = src.UpdateStatus(req)
	require.NoError(t, err, "no resourceVersion: whatever is stored")
	assert.Equal(t, got, same, "the same status: nothing written")

	got.Spec.Replicas = &three
	scaled, err := src.Update(got)
	require.NoError(t, err)
	assert.Equal(t, int64(2), scaled.Generation)
	scaled.Status.ObservedGeneration = 2
	observed, err := src.UpdateStatus(scaled)
	require.NoError(t, err)
	assert.Equal(t, int64(2), observed.Generation, "a status write moves no generation on")
	assert.Equal(t, int64(2), observed.Status.ObservedGeneration)
	modified(t, w, got.ResourceVersion, scaled.ResourceVersion, observed.ResourceVersion)

	// Of an object being deleted, a status write keeps the deletion marks
	// and the finalizers: taking them away is for Update.
	require.NoError(t, src.Delete("ns", "web"))
	marked, _ := src.Get("ns", "web")
	marked.Finalizers = nil
	marked.DeletionTimestamp = nil
	marked.Status.ReadyReplicas = 0
	after, err := src.UpdateStatus(marked)
	require.NoError(t, err)
	assert.Equal(t, []string{"example.com/f"}, after.Finalizers)
	assert.NotNil(t, after.DeletionTimestamp)
	assert.Zero(t, after.Status.ReadyReplicas)
	_, ok := src.Get("ns", "web")
	assert.True(t, ok, "still held by its finalizer")
}

// UpdateStatus makes Update's checks: kube-apiserver's PUT to /status
// goes through the same store (registry/generic/registry/store.go, Update).
func TestUpdateStatusIsChecked(t *testing.T) {
	src := listwatchtest.NewSource[*corev1.Pod]()
	_, err := src.UpdateStatus(pod("ns", "missing"))
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	assert.EqualError(t, err, `pods "missing" not found`)
	p, err := src.Create(pod("ns", "a"))
	require.NoError(t, err)
	p.UID = "another"
	p.ResourceVersion = ""
	_, err = src.UpdateStatus(p)
	assert.True(t, apierrors.IsConflict(err), "another UID: %v", err)
	var nilPod *corev1.Pod
	_, err = src.UpdateStatus(nilPod)
	assert.ErrorContains(t, err, "nil")

	// A PodDisruptionBudget's status strategy, as its strategy, refuses
	// an update without a resourceVersion.
	pdbs := listwatchtest.NewSource[*policyv1.PodDisruptionBudget]()
	pdb, err := pdbs.Create(&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}})
	require.NoError(t, err)
	pdb.ResourceVersion = ""
	pdb.Status.DisruptionsAllowed = 1
	_, err = pdbs.UpdateStatus(pdb)
	assert.True(t, apierrors.IsInvalid(err), "%v", err)
}

// Of an object being deleted, kube-apiserver's validation refuses another
// deletionGracePeriodSeconds (immutable; only a delete shortens it) and
// new finalizers, from a PUT to it or, of a built-in kind, to its /status,
// whose strategy takes the request's metadata; a custom resource's /status
// takes none, so nothing there is refused. A Source kept the stored grace
// period, and UpdateStatus checked nothing of the kind.
func TestDeletionMarksAreChecked(t *testing.T) {
	src := listwatchtest.NewSource[*corev1.Pod]()
	p := pod("ns", "a")
	p.Finalizers = []string{"example.com/hold"}
	_, err := src.Create(p)
	require.NoError(t, err)
	require.NoError(t, src.Delete("ns", "a"))
	marked, ok := src.Get("ns", "a")
	require.True(t, ok)
	require.NotNil(t, marked.DeletionGracePeriodSeconds)

	longer := marked.DeepCopy()
	longer.DeletionGracePeriodSeconds = new(int64(30))
	more := marked.DeepCopy()
	more.Finalizers = append(more.Finalizers, "example.com/more")
	for name, write := range map[string]func(*corev1.Pod) (*corev1.Pod, error){"Update": src.Update, "UpdateStatus": src.UpdateStatus} {
		_, err = write(longer)
		require.True(t, apierrors.IsInvalid(err), "%s: %v", name, err)
		assert.ErrorContains(t, err, "metadata.deletionGracePeriodSeconds", name)
		_, err = write(more)
		require.True(t, apierrors.IsInvalid(err), "%s: %v", name, err)
		assert.ErrorContains(t, err, "metadata.finalizers", name)
	}
	unmarked := marked.DeepCopy()
	unmarked.DeletionTimestamp, unmarked.DeletionGracePeriodSeconds = nil, nil
	unmarked.Status.Phase = corev1.PodSucceeded
	got, err := src.UpdateStatus(unmarked)
	require.NoError(t, err, "marks left out are kept")
	assert.Equal(t, marked.DeletionGracePeriodSeconds, got.DeletionGracePeriodSeconds)
	assert.Equal(t, corev1.PodSucceeded, got.Status.Phase)

	// pods/status drops the request's deletionTimestamp before the
	// server validates: no error, and nothing marked.
	live, err := src.Create(pod("ns", "live"))
	require.NoError(t, err)
	now := metav1.Now()
	live.DeletionTimestamp = &now
	live.Status.Phase = corev1.PodRunning
	live, err = src.UpdateStatus(live)
	require.NoError(t, err)
	assert.Nil(t, live.DeletionTimestamp)

	// A kind whose status strategy resets the metadata (ResourceClaims:
	// metav1.ResetObjectMetaForStatus) takes no finalizer from it either.
	claims := listwatchtest.NewSource[*resourcev1.ResourceClaim]()
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Finalizers: []string{"example.com/hold"}}}
	_, err = claims.Create(c)
	require.NoError(t, err)
	require.NoError(t, claims.Delete("ns", "c"))
	mc, _ := claims.Get("ns", "c")
	mc.Finalizers = append(mc.Finalizers, "example.com/more")
	_, err = claims.UpdateStatus(mc)
	require.NoError(t, err, "its status strategy keeps the stored finalizers")

	gadgets := listwatchtest.NewSource[*unstructured.Unstructured](listwatchtest.WithResource(
		schema.GroupResource{Group: "example.com", Resource: "gadgets"}, "Gadget"),
		listwatchtest.WithStatusSubresource())
	g := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Gadget",
		"metadata": map[string]any{"namespace": "ns", "name": "g", "finalizers": []any{"example.com/hold"}}}}
	_, err = gadgets.Create(g)
	require.NoError(t, err)
	require.NoError(t, gadgets.Delete("ns", "g"))
	mg, _ := gadgets.Get("ns", "g")
	mg = mg.DeepCopy()
	mg.SetFinalizers([]string{"example.com/hold", "example.com/more"})
	mg.Object["status"] = map[string]any{"phase": "Gone"}
	got2, err := gadgets.UpdateStatus(mg)
	require.NoError(t, err, "a custom resource's /status takes no metadata")
	assert.Equal(t, []string{"example.com/hold"}, got2.GetFinalizers())
}

// A kind without a status subresource has no /status path: kube-apiserver
// answers 404 "404 page not found", which client-go reports as a NotFound
// StatusError, whether or not the object exists.
func TestUpdateStatusOfAKindWithoutOne(t *testing.T) {
	src := listwatchtest.NewSource[*corev1.ConfigMap]()
	c, err := src.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}})
	require.NoError(t, err)
	c.Data = map[string]string{"k": "v"}
	_, err = src.UpdateStatus(c)
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	assert.EqualError(t, err, "the server could not find the requested resource (put configmaps c)")
	stored, _ := src.Get("ns", "c")
	assert.Empty(t, stored.Data, "nothing written")
}

// Whether a custom resource has a status subresource is its CRD's choice
// (spec.versions[].subresources.status). With one, the custom resource
// strategy's PrepareForUpdate keeps the stored status on a PUT
// (apiextensions-apiserver pkg/registry/customresource/strategy.go), and
// the status strategy takes the stored object but for its status
// (status_strategy.go); without one, a PUT writes the status with the
// rest, and /status is the handler's NotFound
// (pkg/apiserver/customresource_handler.go).
func TestStatusOfCustomResources(t *testing.T) {
	widgets := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	withSpec := func(size int64) *unstructured.Unstructured {
		w := newWidget("w")
		w.SetLabels(map[string]string{"app": "web"})
		w.Object["spec"] = map[string]any{"size": size}
		return w
	}

	without := listwatchtest.NewSource[*unstructured.Unstructured](listwatchtest.WithResource(widgets, "Widget"))
	w, err := without.Create(withSpec(1))
	require.NoError(t, err)
	w.Object["status"] = map[string]any{"ready": true}
	w, err = without.Update(w)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"ready": true}, w.Object["status"], "no subresource: Update writes the status")
	_, err = without.UpdateStatus(w)
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	assert.EqualError(t, err, `widgets.example.com "w" not found`)

	with := listwatchtest.NewSource[*unstructured.Unstructured](listwatchtest.WithResource(widgets, "Widget"), listwatchtest.WithStatusSubresource())
	w, err = with.Create(withSpec(1))
	require.NoError(t, err)
	ws, err := with.Watch(t.Context(), reflector.WatchOptions{ResourceVersion: w.GetResourceVersion()})
	require.NoError(t, err)
	defer ws.Close()
	w.Object["status"] = map[string]any{"ready": true}
	same, err := with.Update(w)
	require.NoError(t, err)
	assert.Equal(t, w.GetResourceVersion(), same.GetResourceVersion(), "a change to the status only: nothing written")
	assert.NotContains(t, same.Object, "status")

	req := withSpec(2)
	req.SetLabels(nil)
	req.SetResourceVersion(w.GetResourceVersion())
	req.Object["status"] = map[string]any{"ready": true}
	got, err := with.UpdateStatus(req)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"ready": true}, got.Object["status"])
	assert.Equal(t, map[string]any{"size": int64(1)}, got.Object["spec"], "the stored spec")
	assert.Equal(t, map[string]string{"app": "web"}, got.GetLabels(), "the stored labels")
	assert.Equal(t, int64(1), got.GetGeneration())
	_, err = with.UpdateStatus(req)
	assert.True(t, apierrors.IsConflict(err), "an old resourceVersion: %v", err)
	req.SetResourceVersion("")
	_, err = with.UpdateStatus(req)
	assert.True(t, apierrors.IsInvalid(err), "a custom resource's update needs a resourceVersion: %v", err)

	got.Object["status"] = map[string]any{"ready": false}
	got.Object["spec"] = map[string]any{"size": int64(2)}
	resized, err := with.Update(got)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"ready": true}, resized.Object["status"], "the stored status")
	assert.Equal(t, int64(2), resized.GetGeneration())
	delete(resized.Object, "status")
	cleared, err := with.UpdateStatus(resized)
	require.NoError(t, err)
	assert.NotContains(t, cleared.Object, "status", "a status write without one removes it")
	modified(t, ws, got.GetResourceVersion(), resized.GetResourceVersion(), cleared.GetResourceVersion())
}

// Without a status subresource, a custom resource's status is content like
// its spec: the custom resource strategy moves the generation on for any
// change but to metadata (apiextensions-apiserver
// pkg/registry/customresource/strategy.go, PrepareForUpdate: "except for
// the changes to `metadata`, any other changes cause the generation to
// increment"). A Source left it, as for a CRD with /status.
func TestStatusOfACustomResourceWithoutASubresourceMovesItsGeneration(t *testing.T) {
	widgets := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	for _, c := range []struct {
		opts []listwatchtest.Option
		want int64
	}{
		{[]listwatchtest.Option{listwatchtest.WithResource(widgets, "Widget")}, 2},
		{[]listwatchtest.Option{listwatchtest.WithResource(widgets, "Widget"), listwatchtest.WithStatusSubresource()}, 1},
	} {
		src := listwatchtest.NewSource[*unstructured.Unstructured](c.opts...)
		w, err := src.Create(newWidget("w"))
		require.NoError(t, err)
		w.Object["status"] = map[string]any{"ready": true}
		w, err = src.Update(w)
		require.NoError(t, err)
		assert.Equal(t, c.want, w.GetGeneration(), "with %d options", len(c.opts))
	}
}

// Update keeps what the kind's strategy keeps beside the status: a
// Namespace's spec.finalizers (written through /finalize), a
// CertificateSigningRequest's spec (immutable). UpdateStatus keeps what a
// Pod's status strategy keeps of its status when the request leaves it
// out: the qosClass, the observedGeneration and the claim statuses (a
// nil list; an empty one clears them, as a JSON [] does on
// kube-apiserver), and what a CertificateSigningRequest's keeps: its
// Approved and Denied conditions. A Source wrote them all.
func TestUpdateKeepsWhatTheStrategyKeeps(t *testing.T) {
	namespaces := listwatchtest.NewSource[*corev1.Namespace]()
	ns, err := namespaces.Create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"},
		Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}}})
	require.NoError(t, err)
	ns.Spec.Finalizers = nil
	ns.Labels = map[string]string{"x": "y"}
	ns, err = namespaces.Update(ns)
	require.NoError(t, err)
	assert.Equal(t, []corev1.FinalizerName{corev1.FinalizerKubernetes}, ns.Spec.Finalizers)
	assert.Equal(t, "y", ns.Labels["x"])

	csrs := listwatchtest.NewSource[*certificatesv1.CertificateSigningRequest]()
	csr, err := csrs.Create(&certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "c"},
		Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: "example.com/signer", Request: []byte("pem")}})
	require.NoError(t, err)
	created := csr.Generation
	csr.Spec.SignerName = "example.com/other"
	csr.Annotations = map[string]string{"x": "y"}
	csr, err = csrs.Update(csr)
	require.NoError(t, err)
	assert.Equal(t, "example.com/signer", csr.Spec.SignerName)
	assert.Equal(t, "y", csr.Annotations["x"])
	assert.Equal(t, created, csr.Generation, "the spec did not change")

	pods := listwatchtest.NewSource[*corev1.Pod]()
	p := pod("ns", "a")
	p.Status.QOSClass, p.Status.ObservedGeneration = corev1.PodQOSBestEffort, 1
	claims := []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: new("gpu-1")}}
	p.Status.ResourceClaimStatuses = claims
	p, err = pods.Create(p)
	require.NoError(t, err)
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning}
	p, err = pods.UpdateStatus(p)
	require.NoError(t, err)
	assert.Equal(t, corev1.PodRunning, p.Status.Phase)
	assert.Equal(t, corev1.PodQOSBestEffort, p.Status.QOSClass)
	assert.Equal(t, int64(1), p.Status.ObservedGeneration)
	assert.Equal(t, claims, p.Status.ResourceClaimStatuses)
	p.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{}
	p, err = pods.UpdateStatus(p)
	require.NoError(t, err)
	assert.Empty(t, p.Status.ResourceClaimStatuses)

	// A CertificateSigningRequest's status write keeps its Approved and
	// Denied conditions (only /approval changes them); a Source wrote
	// the request's.
	approved := certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Admin"}
	csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approved}
	csr, err = csrs.UpdateStatus(csr)
	require.NoError(t, err)
	csr.Status.Conditions[0].Reason = "Changed"
	csr.Status.Certificate = []byte("cert")
	csr, err = csrs.UpdateStatus(csr)
	require.NoError(t, err)
	assert.Equal(t, []certificatesv1.CertificateSigningRequestCondition{approved}, csr.Status.Conditions)
	assert.Equal(t, []byte("cert"), csr.Status.Certificate)
}
