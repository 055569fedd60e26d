// Package strategy holds the parts of kube-apiserver's update strategies
// (their PrepareForUpdate, k8s.io/kubernetes v1.37 pkg/registry) that take
// more from the stored object than the status subresource explains, for
// the typed objects of k8s.io/api. internal/apisim and listwatchtest keep
// the status apart themselves (a PUT to an object keeps the stored status,
// one to its status the stored spec) and call this package for the rest.
package strategy

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
// status strategy keeps of old's status: of a Pod, the qosClass (set at
// creation, which old kubelets dropped), the observedGeneration of the
// status and of each condition, and the claim statuses of dynamic
// resource allocation, each when obj leaves it out. obj and old are of
// one Go type; other types are left alone.
func KeepOnStatusUpdate(obj, old runtime.Object) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	was := old.(*corev1.Pod).Status.DeepCopy()
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
