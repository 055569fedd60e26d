package kinds

import (
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fieldLabels are the field selector labels kube-apiserver (v1.37) accepts
// for the resources that have field label conversions of their own
// (k8s.io/kubernetes/pkg/apis/*/conversion.go), each mapped to the field
// of the set the server matches (Fields): spec.host is an old name of a
// pod's spec.nodeName, and events.k8s.io's regarding.* are core's
// involvedObject.*. Every other resource takes metadata.name and
// metadata.namespace. Nodes, namespaces and certificate signing requests
// take no metadata.namespace.
var fieldLabels = map[schema.GroupResource]map[string]string{
	{Resource: "pods"}: same("metadata.name", "metadata.namespace", "spec.nodeName",
		"spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
		"spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs",
		"status.nominatedNodeName").with("spec.host", "spec.nodeName"),
	{Resource: "nodes"}:                  same("metadata.name", "spec.unschedulable"),
	{Resource: "replicationcontrollers"}: same("metadata.name", "metadata.namespace", "status.replicas"),
	{Resource: "events"}: same("metadata.name", "metadata.namespace",
		"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
		"involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
		"involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"),
	{Group: "events.k8s.io", Resource: "events"}: same("metadata.name", "metadata.namespace", "reason", "type").
		with("regarding.kind", "involvedObject.kind").
		with("regarding.namespace", "involvedObject.namespace").
		with("regarding.name", "involvedObject.name").
		with("regarding.uid", "involvedObject.uid").
		with("regarding.apiVersion", "involvedObject.apiVersion").
		with("regarding.resourceVersion", "involvedObject.resourceVersion").
		with("regarding.fieldPath", "involvedObject.fieldPath").
		with("reportingController", "reportingComponent"),
	{Resource: "namespaces"}:           same("metadata.name", "status.phase"),
	{Resource: "secrets"}:              same("metadata.name", "metadata.namespace", "type"),
	{Resource: "services"}:             same("metadata.name", "metadata.namespace", "spec.clusterIP", "spec.type"),
	{Group: "batch", Resource: "jobs"}: same("metadata.name", "metadata.namespace", "status.successful"),
	{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}: same("metadata.name", "spec.signerName"),
	{Group: "certificates.k8s.io", Resource: "clustertrustbundles"}:        same("metadata.name", "spec.signerName"),
	{Group: "certificates.k8s.io", Resource: "podcertificaterequests"}: same("metadata.name", "spec.signerName",
		"spec.podName", "spec.nodeName"),
	{Group: "resource.k8s.io", Resource: "resourceslices"}: same("metadata.name", "spec.nodeName",
		"spec.driver", "spec.pool.name"),
}

// models are the k8s.io/api types of the resources in fieldLabels, into
// which FieldsOf reads an unstructured object of one.
var models = map[schema.GroupResource]func() metav1.Object{
	{Resource: "pods"}:                           func() metav1.Object { return &corev1.Pod{} },
	{Resource: "nodes"}:                          func() metav1.Object { return &corev1.Node{} },
	{Resource: "replicationcontrollers"}:         func() metav1.Object { return &corev1.ReplicationController{} },
	{Resource: "events"}:                         func() metav1.Object { return &corev1.Event{} },
	{Group: "events.k8s.io", Resource: "events"}: func() metav1.Object { return &eventsv1.Event{} },
	{Resource: "namespaces"}:                     func() metav1.Object { return &corev1.Namespace{} },
	{Resource: "secrets"}:                        func() metav1.Object { return &corev1.Secret{} },
	{Resource: "services"}:                       func() metav1.Object { return &corev1.Service{} },
	{Group: "batch", Resource: "jobs"}:           func() metav1.Object { return &batchv1.Job{} },
	{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}: func() metav1.Object {
		return &certificatesv1.CertificateSigningRequest{}
	},
	{Group: "certificates.k8s.io", Resource: "clustertrustbundles"}: func() metav1.Object {
		return &certificatesv1.ClusterTrustBundle{}
	},
	{Group: "certificates.k8s.io", Resource: "podcertificaterequests"}: func() metav1.Object {
		return &certificatesv1.PodCertificateRequest{}
	},
	{Group: "resource.k8s.io", Resource: "resourceslices"}: func() metav1.Object { return &resourcev1.ResourceSlice{} },
}

// defaultFieldLabels are those of every other resource.
var defaultFieldLabels = same("metadata.name", "metadata.namespace")

type labelMap map[string]string

func same(labels ...string) labelMap {
	m := labelMap{}
	for _, l := range labels {
		m[l] = l
	}
	return m
}

func (m labelMap) with(label, field string) labelMap {
	m[label] = field
	return m
}

// ConvertFieldLabel is kube-apiserver's field label conversion for
// resource gr: the label a field selector names for it, mapped to the
// field of Fields' set, or an error for a label the server does not
// serve. It fits fields.Selector.Transform.
func ConvertFieldLabel(gr schema.GroupResource, label, value string) (string, string, error) {
	labels, ok := fieldLabels[gr]
	if !ok {
		labels = defaultFieldLabels
	}
	field, ok := labels[label]
	if !ok {
		return "", "", fmt.Errorf("field label not supported: %s", label)
	}
	return field, value, nil
}

// Fields returns obj's values for the fields a field selector of its
// resource matches (after ConvertFieldLabel), as kube-apiserver's
// registries compute them.
func Fields(obj metav1.Object) fields.Set {
	set := fields.Set{"metadata.name": obj.GetName(), "metadata.namespace": obj.GetNamespace()}
	switch o := obj.(type) {
	case *corev1.Pod:
		set["spec.nodeName"] = o.Spec.NodeName
		set["spec.restartPolicy"] = string(o.Spec.RestartPolicy)
		set["spec.schedulerName"] = o.Spec.SchedulerName
		set["spec.serviceAccountName"] = o.Spec.ServiceAccountName
		set["spec.hostNetwork"] = strconv.FormatBool(o.Spec.HostNetwork)
		set["status.phase"] = string(o.Status.Phase)
		// The first of status.podIPs, which the apiserver's conversion
		// makes status.podIP when that is set (it is the authoritative one
		// of the two, for older clients).
		set["status.podIP"] = o.Status.PodIP
		if o.Status.PodIP == "" && len(o.Status.PodIPs) > 0 {
			set["status.podIP"] = o.Status.PodIPs[0].IP
		}
		set["status.nominatedNodeName"] = o.Status.NominatedNodeName
	case *corev1.Node:
		set["spec.unschedulable"] = strconv.FormatBool(o.Spec.Unschedulable)
	case *corev1.ReplicationController:
		set["status.replicas"] = strconv.Itoa(int(o.Status.Replicas))
	case *corev1.Event:
		involvedObject(set, o.InvolvedObject)
		set["reason"] = o.Reason
		set["reportingComponent"] = o.ReportingController
		set["source"] = o.Source.Component
		if set["source"] == "" {
			set["source"] = o.ReportingController
		}
		set["type"] = o.Type
	case *eventsv1.Event:
		involvedObject(set, o.Regarding)
		set["reason"] = o.Reason
		set["reportingComponent"] = o.ReportingController
		set["source"] = o.DeprecatedSource.Component
		if set["source"] == "" {
			set["source"] = o.ReportingController
		}
		set["type"] = o.Type
	case *corev1.Namespace:
		set["status.phase"] = string(o.Status.Phase)
	case *corev1.Secret:
		set["type"] = string(o.Type)
	case *corev1.Service:
		set["spec.clusterIP"] = o.Spec.ClusterIP
		set["spec.type"] = string(o.Spec.Type)
	case *batchv1.Job:
		set["status.successful"] = strconv.Itoa(int(o.Status.Succeeded))
	case *certificatesv1.CertificateSigningRequest:
		set["spec.signerName"] = o.Spec.SignerName
	case *certificatesv1.ClusterTrustBundle:
		set["spec.signerName"] = o.Spec.SignerName
	case *certificatesv1.PodCertificateRequest:
		set["spec.signerName"] = o.Spec.SignerName
		set["spec.podName"] = o.Spec.PodName
		set["spec.nodeName"] = string(o.Spec.NodeName)
	case *resourcev1.ResourceSlice:
		set["spec.nodeName"] = ""
		if o.Spec.NodeName != nil {
			set["spec.nodeName"] = *o.Spec.NodeName
		}
		set["spec.driver"] = o.Spec.Driver
		set["spec.pool.name"] = o.Spec.Pool.Name
	}
	return set
}

// FieldsOf is Fields for an object of resource gr, which may be an
// *unstructured.Unstructured: one of a resource with fields of its own
// (pods, events and the others of ConvertFieldLabel's table) is read into
// its k8s.io/api type first, as the server reads it. It is an error if
// obj does not fit that type, which the server would have refused to
// store.
func FieldsOf(gr schema.GroupResource, obj metav1.Object) (fields.Set, error) {
	u, ok := obj.(*unstructured.Unstructured)
	model := models[gr]
	if !ok || u == nil || model == nil {
		return Fields(obj), nil
	}
	typed := model()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
		return nil, fmt.Errorf("reading %s %q as its type: %w", gr, u.GetName(), err)
	}
	return Fields(typed), nil
}

// Selects reports whether field (after ConvertFieldLabel) is one of those
// kube-apiserver computes for the objects of resource gr, which an object
// of another type (a PartialObjectMetadata) may not hold.
func Selects(gr schema.GroupResource, field string) bool {
	if model := models[gr]; model != nil {
		_, ok := Fields(model())[field]
		return ok
	}
	_, ok := defaultFieldLabels[field]
	return ok
}

func involvedObject(set fields.Set, o corev1.ObjectReference) {
	set["involvedObject.kind"] = o.Kind
	set["involvedObject.namespace"] = o.Namespace
	set["involvedObject.name"] = o.Name
	set["involvedObject.uid"] = string(o.UID)
	set["involvedObject.apiVersion"] = o.APIVersion
	set["involvedObject.resourceVersion"] = o.ResourceVersion
	set["involvedObject.fieldPath"] = o.FieldPath
}
