// Package strategy holds the parts of kube-apiserver's update strategies
// (their PrepareForUpdate, k8s.io/kubernetes v1.37 pkg/registry) that take
// more from the stored object than the status subresource explains: for
// the typed objects of k8s.io/api, parts of the spec and of the status;
// for the built-in kinds, the metadata a status write keeps (StatusMeta).
// internal/apisim and listwatchtest keep the status apart themselves (a
// PUT to an object keeps the stored status, one to its status the stored
// spec) and call this package for the rest, for how the storage reads a
// write's resourceVersion (WriteVersion) and checks its UID
// (UIDPrecondition), and for how much of a generateName a generated name
// keeps (GenerateNameBase).
package strategy

import (
	"fmt"
	"strconv"

	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// KeepOnUpdate sets in obj, the object a PUT to the object carries (a
// private copy), what its kind's strategy takes from old, the stored
// object, besides the status: a Namespace's spec.finalizers (written only
// through /finalize), a CertificateSigningRequest's spec (immutable).
// obj and old are of one Go type; other types are left alone.
func KeepOnUpdate(obj, old runtime.Object) {
	switch o := obj.(type) {
	case *corev1.Namespace:
		o.Spec.Finalizers = old.(*corev1.Namespace).DeepCopy().Spec.Finalizers
	case *certificatesv1.CertificateSigningRequest:
		o.Spec = *old.(*certificatesv1.CertificateSigningRequest).Spec.DeepCopy()
	case *certificatesv1beta1.CertificateSigningRequest:
		o.Spec = *old.(*certificatesv1beta1.CertificateSigningRequest).Spec.DeepCopy()
	}
}

// KeepOnStatusUpdate sets in obj, the object a PUT to the status
// subresource carries with the stored spec already in it, what its kind's
// status strategy keeps of old's status:
//
//   - of a Pod, the qosClass (set at creation, which old kubelets
//     dropped), the observedGeneration of the status and of each
//     condition, and the claim statuses of dynamic resource allocation,
//     each when obj leaves it out: a nil list, not an empty one, which
//     clears them (obj must hold the request as decoded, as
//     kube-apiserver's strategy reads it, not as stored, where the two are
//     one);
//   - of a CertificateSigningRequest, the Approved and Denied conditions:
//     the n-th of a type in obj becomes the n-th stored one when obj has
//     as many (only /approval changes them; with more or fewer,
//     kube-apiserver's validation refuses the write, which this leaves
//     to the caller).
//
// obj and old are of one Go type; other types are left alone.
func KeepOnStatusUpdate(obj, old runtime.Object) {
	switch o := obj.(type) {
	case *corev1.Pod:
		keepPodStatus(o, old.(*corev1.Pod))
	case *certificatesv1.CertificateSigningRequest:
		was := old.(*certificatesv1.CertificateSigningRequest).Status.DeepCopy()
		for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
			keepConditions(o.Status.Conditions, was.Conditions, func(c certificatesv1.CertificateSigningRequestCondition) bool { return c.Type == t })
		}
	case *certificatesv1beta1.CertificateSigningRequest:
		was := old.(*certificatesv1beta1.CertificateSigningRequest).Status.DeepCopy()
		for _, t := range []certificatesv1beta1.RequestConditionType{certificatesv1beta1.CertificateApproved, certificatesv1beta1.CertificateDenied} {
			keepConditions(o.Status.Conditions, was.Conditions, func(c certificatesv1beta1.CertificateSigningRequestCondition) bool { return c.Type == t })
		}
	}
}

// KeepOnApproval sets in obj, the object a PUT to a
// CertificateSigningRequest's approval subresource carries with the stored
// spec already in it, the stored status but its conditions, which are
// obj's (csrApprovalStrategy.PrepareForUpdate: only the Approved and
// Denied conditions are meant to change there). obj and old are of one Go
// type; other types are left alone.
func KeepOnApproval(obj, old runtime.Object) {
	switch o := obj.(type) {
	case *certificatesv1.CertificateSigningRequest:
		conds := o.Status.Conditions
		o.Status = *old.(*certificatesv1.CertificateSigningRequest).Status.DeepCopy()
		o.Status.Conditions = conds
	case *certificatesv1beta1.CertificateSigningRequest:
		conds := o.Status.Conditions
		o.Status = *old.(*certificatesv1beta1.CertificateSigningRequest).Status.DeepCopy()
		o.Status.Conditions = conds
	}
}

// keepConditions makes the conditions of conds that is selects old's, the
// n-th the n-th, when conds has as many of them as old; otherwise it
// leaves conds alone (csrStatusStrategy's preserveConditionInstances).
func keepConditions[C any](conds, old []C, is func(C) bool) {
	var at, was []int
	for i, c := range conds {
		if is(c) {
			at = append(at, i)
		}
	}
	for i, c := range old {
		if is(c) {
			was = append(was, i)
		}
	}
	if len(at) != len(was) {
		return
	}
	for n, i := range at {
		conds[i] = old[was[n]]
	}
}

// keepPodStatus is podStatusStrategy's part of KeepOnStatusUpdate.
func keepPodStatus(p, oldPod *corev1.Pod) {
	was := oldPod.Status.DeepCopy()
	st := &p.Status
	if st.QOSClass == "" {
		st.QOSClass = was.QOSClass
	}
	// A non-nil empty slice still clears these.
	if st.ResourceClaimStatuses == nil {
		st.ResourceClaimStatuses = was.ResourceClaimStatuses
	}
	if st.ExtendedResourceClaimStatus == nil {
		st.ExtendedResourceClaimStatus = was.ExtendedResourceClaimStatus
	}
	if st.NodeAllocatableResourceClaimStatuses == nil {
		st.NodeAllocatableResourceClaimStatuses = was.NodeAllocatableResourceClaimStatuses
	}
	if st.ObservedGeneration == 0 {
		st.ObservedGeneration = was.ObservedGeneration
	}
	// The n-th condition of a type takes the n-th old one's generation.
	olds := map[corev1.PodConditionType][]int64{}
	for _, c := range was.Conditions {
		olds[c.Type] = append(olds[c.Type], c.ObservedGeneration)
	}
	for i := range st.Conditions {
		c := &st.Conditions[i]
		gens := olds[c.Type]
		if len(gens) == 0 {
			continue
		}
		olds[c.Type] = gens[1:]
		if c.ObservedGeneration == 0 {
			c.ObservedGeneration = gens[0]
		}
	}
}

// StatusMeta returns what the status strategy of the built-in kind gk
// takes from the stored object's metadata, old, into obj's, the metadata
// a PUT to its status carries: a Pod's ownerReferences (and its
// deletionTimestamp, which the update then keeps), a Deployment's labels,
// all that metav1.ResetObjectMetaForStatus resets for the kinds that call
// it. nil for the kinds whose status strategy takes the request's.
func StatusMeta(gk schema.GroupKind) func(obj, old metav1.Object) {
	return statusMeta[gk]
}

// statusMeta holds the built-in kinds whose status strategy takes some
// metadata from the stored object (k8s.io/kubernetes v1.37
// pkg/registry/*/strategy.go); the others take the request's.
var statusMeta = map[schema.GroupKind]func(obj, old metav1.Object){
	{Kind: "Pod"}: func(obj, old metav1.Object) {
		// Old kubelets corrupted them in ways that broke garbage collection.
		obj.SetOwnerReferences(old.GetOwnerReferences())
		obj.SetDeletionTimestamp(nil) // and the update then keeps old's
	},
	{Group: "apps", Kind: "Deployment"}: func(obj, old metav1.Object) {
		obj.SetLabels(old.GetLabels())
	},
	{Group: "apiregistration.k8s.io", Kind: "APIService"}: func(obj, old metav1.Object) {
		obj.SetLabels(old.GetLabels())
		obj.SetAnnotations(old.GetAnnotations())
		obj.SetFinalizers(old.GetFinalizers())
		obj.SetOwnerReferences(old.GetOwnerReferences())
	},
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}:                 storedMeta,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}: storedMeta,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:  metav1.ResetObjectMetaForStatus,
	{Group: "certificates.k8s.io", Kind: "PodCertificateRequest"}:               metav1.ResetObjectMetaForStatus,
	{Group: "internal.apiserver.k8s.io", Kind: "StorageVersion"}:                metav1.ResetObjectMetaForStatus,
	{Group: "lifecycle.k8s.io", Kind: "Eviction"}:                               metav1.ResetObjectMetaForStatus,
	{Group: "lifecycle.k8s.io", Kind: "EvictionRequest"}:                        metav1.ResetObjectMetaForStatus,
	{Group: "networking.k8s.io", Kind: "ServiceCIDR"}:                           metav1.ResetObjectMetaForStatus,
	{Group: "resource.k8s.io", Kind: "DeviceTaintRule"}:                         metav1.ResetObjectMetaForStatus,
	{Group: "resource.k8s.io", Kind: "ResourceClaim"}:                           metav1.ResetObjectMetaForStatus,
	{Group: "resource.k8s.io", Kind: "ResourcePoolStatusRequest"}:               metav1.ResetObjectMetaForStatus,
	{Group: "scheduling.k8s.io", Kind: "CompositePodGroup"}:                     metav1.ResetObjectMetaForStatus,
	{Group: "scheduling.k8s.io", Kind: "PodGroup"}:                              metav1.ResetObjectMetaForStatus,
	{Group: "storage.k8s.io", Kind: "CSINode"}:                                  metav1.ResetObjectMetaForStatus,
	{Group: "storage.k8s.io", Kind: "VolumeAttachment"}:                         metav1.ResetObjectMetaForStatus,
	{Group: "storagemigration.k8s.io", Kind: "StorageVersionMigration"}:         metav1.ResetObjectMetaForStatus,
}

// storedMeta makes obj's metadata old's but its managedFields, as the
// status strategies of FlowSchemas and PriorityLevelConfigurations do.
func storedMeta(obj, old metav1.Object) {
	metav1.ResetObjectMetaForStatus(obj, old)
	obj.SetDeletionGracePeriodSeconds(old.GetDeletionGracePeriodSeconds())
	obj.SetGenerateName(old.GetGenerateName())
	obj.SetUID(old.GetUID())
	obj.SetCreationTimestamp(old.GetCreationTimestamp())
	obj.SetResourceVersion(old.GetResourceVersion())
}

// DeletionMarkErrors returns what kube-apiserver's validation
// (ValidateObjectMetaAccessorUpdate) finds wrong with obj, an update's
// metadata after rest.BeforeUpdate has put back old's deletion marks:
// finalizers added to an object being deleted, deletion marks on one that
// is not (only a delete sets them), or another grace period on one that is.
func DeletionMarkErrors(obj, old metav1.Object) field.ErrorList {
	var errs field.ErrorList
	if old.GetDeletionTimestamp() != nil {
		if added := sets.New(obj.GetFinalizers()...).Difference(sets.New(old.GetFinalizers()...)); added.Len() > 0 {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "finalizers"),
				fmt.Sprintf("no new finalizers can be added if the object is being deleted, found new finalizers %#v", sets.List(added))))
		}
	}
	if ts := obj.GetDeletionTimestamp(); ts != nil && old.GetDeletionTimestamp() == nil {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "deletionTimestamp"), ts, "field is immutable"))
	}
	if g, was := obj.GetDeletionGracePeriodSeconds(), old.GetDeletionGracePeriodSeconds(); g != nil && (was == nil || *g != *was) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "deletionGracePeriodSeconds"), *g, "field is immutable"))
	}
	return errs
}

// WriteVersion parses the resourceVersion a write carries, as
// kube-apiserver's storage does (APIObjectVersioner.ObjectResourceVersion):
// "" is 0, which is none, and one that is not a number is an error.
func WriteVersion(rv string) (uint64, error) {
	if rv == "" {
		return 0, nil
	}
	return strconv.ParseUint(rv, 10, 64)
}

// RefusedOnCreate reports whether a create's resourceVersion refuses it,
// as etcd3's store.Create decides: one that parses as a number other than
// 0. "0", "00" and one that is not a number are cleared and stored.
func RefusedOnCreate(rv string) bool {
	n, err := WriteVersion(rv)
	return err == nil && n != 0
}

// MaxGeneratedNameLength is how much of a generateName kube-apiserver
// keeps before it adds its 5 random characters, so that a generated name
// is at most 63 characters (apiserver/pkg/storage/names/generate.go).
const MaxGeneratedNameLength = 63 - 5

// GenerateNameBase returns the part of generateName that a generated name
// begins with: its first MaxGeneratedNameLength bytes, as
// SimpleNameGenerator cuts it.
func GenerateNameBase(generateName string) string {
	if len(generateName) > MaxGeneratedNameLength {
		return generateName[:MaxGeneratedNameLength]
	}
	return generateName
}

// UIDPrecondition is the first check of an update whose body names uid:
// kube-apiserver's generic store makes it a precondition of the write,
// which etcd3's GuaranteedUpdate checks before anything else against the
// stored object's UID, stored ("" when none is stored: the empty object),
// whatever the kind. A mismatch is 409 Conflict (InterpretUpdateError).
func UIDPrecondition(gr schema.GroupResource, name string, uid, stored types.UID) error {
	if uid == "" || uid == stored {
		return nil
	}
	return apierrors.NewConflict(gr, name,
		fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", uid, stored))
}
