package apisim

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Factories of realistic objects for tests and benchmarks: the sizes and
// shapes that a list-watch client meets on a real cluster.

// MakePod returns a pod as a Deployment's ReplicaSet would create it once
// the kubelet has started it: labels, an owner reference, two containers
// with probes, resources and mounts, a projected token volume, a Running
// status with conditions and container statuses, and the two managedFields
// entries (controller manager, kubelet). Its JSON is about 4 KB.
func MakePod(namespace, name string) *corev1.Pod {
	app := appName(name)
	created := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	started := metav1.NewTime(created.Add(3 * time.Second))
	trueVal := true
	fields := metav1.NewFieldsV1
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: namespace, GenerateName: app + "-7d9f8b6c5d-",
			CreationTimestamp: created,
			Labels: map[string]string{"app": app, "pod-template-hash": "7d9f8b6c5d", "tier": "backend",
				"app.kubernetes.io/part-of": "listwatch-bench"},
			Annotations: map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet",
				Name: app + "-7d9f8b6c5d", UID: types.UID("6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f"),
				Controller: &trueVal, BlockOwnerDeletion: &trueVal}},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
					Time: &created, FieldsType: "FieldsV1", FieldsV1: fields(`{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{},"f:tier":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{}},"k:{\"name\":\"sidecar\"}":{".":{},"f:image":{},"f:name":{}}}}}`)},
				{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &started,
					FieldsType: "FieldsV1", Subresource: "status",
					FieldsV1: fields(`{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:startTime":{}}}`)},
			},
		},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{appContainer(app), sidecarContainer()},
			Volumes:                       []corev1.Volume{tokenVolume()},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr(int64(30)),
			DNSPolicy:                     corev1.DNSClusterFirst,
			ServiceAccountName:            "default",
			NodeName:                      "node-" + fmt.Sprint(len(name)%7),
			SchedulerName:                 "default-scheduler",
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))}},
			Priority: ptr(int32(0)),
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: created},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: started},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: started},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: created},
			},
			HostIP: "10.0.0.12", PodIP: "10.244.1.17", StartTime: &created, QOSClass: corev1.PodQOSBurstable,
			ContainerStatuses: []corev1.ContainerStatus{
				containerStatus("app", "registry.example.com/team/"+app+":v1.42.0", started),
				containerStatus("sidecar", "registry.example.com/infra/log-shipper:v3.1.4", started),
			},
		},
	}
}

func appContainer(app string) corev1.Container {
	return corev1.Container{
		Name:  "app",
		Image: "registry.example.com/team/" + app + ":v1.42.0",
		Args:  []string{"--listen=:8080", "--metrics=:9090", "--log-level=info"},
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
			{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}},
		Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			APIVersion: "v1", FieldPath: "metadata.name"}}}, {Name: "GOMAXPROCS", Value: "2"}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access", ReadOnly: true,
			MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/readyz", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}},
			PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3},
		TerminationMessagePath:   "/dev/termination-log",
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		ImagePullPolicy:          corev1.PullIfNotPresent,
	}
}

func sidecarContainer() corev1.Container {
	return corev1.Container{
		Name:  "sidecar",
		Image: "registry.example.com/infra/log-shipper:v3.1.4",
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		},
		TerminationMessagePath:   "/dev/termination-log",
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		ImagePullPolicy:          corev1.PullIfNotPresent,
	}
}

func tokenVolume() corev1.Volume {
	return corev1.Volume{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr(int32(420)),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr(int64(3607)), Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		},
	}}}
}

func containerStatus(name, image string, started metav1.Time) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name: name, Image: image, ImageID: image + "@sha256:" + strings.Repeat("ab", 32),
		ContainerID: "containerd://" + strings.Repeat("0f", 32), Ready: true, Started: ptr(true),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
	}
}

// MakeConfigMap returns a config map with a label and one data entry of
// dataBytes bytes (a small object for throughput tests).
func MakeConfigMap(namespace, name string, dataBytes int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app": appName(name)}},
		Data:       map[string]string{"data": strings.Repeat("x", dataBytes)},
	}
}

// appName derives an app label from an object name: "web-12" → "web".
func appName(name string) string {
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		return name[:i]
	}
	return name
}

func ptr[T any](v T) *T { return &v }
