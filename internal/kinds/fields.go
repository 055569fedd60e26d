package kinds

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// FieldLabels lists the field selector labels kube-apiserver accepts for a
// resource: metadata.name and metadata.namespace for every one, and a few
// more for some core resources (spec.nodeName of pods, type of secrets).
func FieldLabels(gr schema.GroupResource) []string {
	out := []string{"metadata.name", "metadata.namespace"}
	switch gr {
	case schema.GroupResource{Resource: "pods"}:
		out = append(out, "spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
			"spec.serviceAccountName", "status.phase", "status.podIP")
	case schema.GroupResource{Resource: "secrets"}:
		out = append(out, "type")
	case schema.GroupResource{Resource: "namespaces"}:
		out = append(out, "status.phase")
	case schema.GroupResource{Resource: "nodes"}:
		out = append(out, "spec.unschedulable")
	}
	return out
}

// Fields returns obj's values for the field selector labels of its
// resource (FieldLabels).
func Fields(obj metav1.Object) fields.Set {
	set := fields.Set{"metadata.name": obj.GetName(), "metadata.namespace": obj.GetNamespace()}
	switch o := obj.(type) {
	case *corev1.Pod:
		set["spec.nodeName"] = o.Spec.NodeName
		set["spec.restartPolicy"] = string(o.Spec.RestartPolicy)
		set["spec.schedulerName"] = o.Spec.SchedulerName
		set["spec.serviceAccountName"] = o.Spec.ServiceAccountName
		set["status.phase"] = string(o.Status.Phase)
		set["status.podIP"] = o.Status.PodIP
	case *corev1.Secret:
		set["type"] = string(o.Type)
	case *corev1.Namespace:
		set["status.phase"] = string(o.Status.Phase)
	case *corev1.Node:
		set["spec.unschedulable"] = strconv.FormatBool(o.Spec.Unschedulable)
	}
	return set
}
