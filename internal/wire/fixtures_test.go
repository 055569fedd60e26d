package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Fixtures: real API objects, and the bytes kube-apiserver would send for
// them, produced with k8s.io/apimachinery's own encoders.

var (
	podGVK        = corev1.SchemeGroupVersion.WithKind("Pod")
	configMapGVK  = corev1.SchemeGroupVersion.WithKind("ConfigMap")
	deploymentGVK = appsv1.SchemeGroupVersion.WithKind("Deployment")
)

func testScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}

// fixedTime has whole seconds: JSON keeps no more, so JSON and protobuf
// round trips give equal objects.
func fixedTime(sec int) metav1.Time {
	return metav1.NewTime(time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC).Add(time.Duration(sec) * time.Second))
}

// realisticPod is a pod as a controller sees it: labels, annotations, two
// containers with env, ports, resources and probes, a status with
// conditions and container statuses, and two managedFields entries. Its
// JSON is about 4 KB.
func realisticPod(i int) *corev1.Pod {
	name := fmt.Sprintf("web-7d4b9c6f5-%05d", i)
	probe := func(path string, port int) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(int32(port)), Scheme: corev1.URISchemeHTTP}},
			InitialDelaySeconds: 5, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
		}
	}
	container := func(n, image string, port int32) corev1.Container {
		return corev1.Container{
			Name: n, Image: image,
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: port, Protocol: corev1.ProtocolTCP}},
			Env: []corev1.EnvVar{
				{Name: "LOG_LEVEL", Value: "info"},
				{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
			},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			},
			LivenessProbe:            probe("/healthz", int(port)),
			ReadinessProbe:           probe("/ready", int(port)),
			TerminationMessagePath:   "/dev/termination-log",
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			ImagePullPolicy:          corev1.PullIfNotPresent,
		}
	}
	status := func(n, image string, started int) corev1.ContainerStatus {
		return corev1.ContainerStatus{
			Name: n, Image: image, ImageID: image + "@sha256:4a5f0c6a2f1e3b7d9c8e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e",
			ContainerID: "containerd://" + fmt.Sprintf("%064x", started),
			Ready:       true, Started: new(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: fixedTime(started)}},
		}
	}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", GenerateName: "web-7d4b9c6f5-",
			UID:             "6f1d2c3b-4a5e-4f60-8b7c-9d0e1f2a3b4c",
			ResourceVersion: fmt.Sprint(100000 + i), Generation: 1,
			CreationTimestamp: fixedTime(0),
			Labels:            map[string]string{"app": "web", "pod-template-hash": "7d4b9c6f5", "tier": "frontend"},
			Annotations:       map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-05-04T03:00:00Z"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d4b9c6f5",
				UID: "0a1b2c3d-4e5f-4061-8728-394a5b6c7d8e", Controller: new(true), BlockOwnerDeletion: new(true),
			}},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{
					Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
					Time: new(fixedTime(0)), FieldsType: "FieldsV1",
					FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"0a1b2c3d\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{}}}}}`),
				},
				{
					Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
					Time: new(fixedTime(9)), FieldsType: "FieldsV1", Subresource: "status",
					FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:podIP":{},"f:startTime":{}}}`),
				},
			},
		},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{container("app", "registry.example.com/web/app:1.27.3", 8080), container("sidecar", "registry.example.com/mesh/proxy:1.22.0", 15001)},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: new(int64(30)),
			DNSPolicy:                     corev1.DNSClusterFirst,
			ServiceAccountName:            "web",
			NodeName:                      fmt.Sprintf("node-%03d", i%100),
			SchedulerName:                 "default-scheduler",
			Tolerations:                   []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: fixedTime(1)},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: fixedTime(9)},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: fixedTime(9)},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: fixedTime(0)},
			},
			HostIP: "10.0.3.17", PodIP: fmt.Sprintf("10.244.%d.%d", i/250%250, i%250+2),
			PodIPs:            []corev1.PodIP{{IP: fmt.Sprintf("10.244.%d.%d", i/250%250, i%250+2)}},
			StartTime:         new(fixedTime(1)),
			QOSClass:          corev1.PodQOSBurstable,
			ContainerStatuses: []corev1.ContainerStatus{status("app", "registry.example.com/web/app:1.27.3", 3), status("sidecar", "registry.example.com/mesh/proxy:1.22.0", 4)},
		},
	}
}

func testConfigMap(i int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Namespace: "kube-system", ResourceVersion: fmt.Sprint(500 + i), CreationTimestamp: fixedTime(i)},
		Data:       map[string]string{"config.yaml": "a: 1\nb: \"two\"\n", "empty": ""},
		BinaryData: map[string][]byte{"blob": {0, 1, 2, 255}},
	}
}

func testDeployment(i int) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{Kind: "Deployment", APIVersion: "apps/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i), Namespace: "default", ResourceVersion: fmt.Sprint(900 + i), Generation: 1 << 40, CreationTimestamp: fixedTime(i)},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(3)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxUnavailable: new(intstr.FromString("25%")), MaxSurge: new(intstr.FromInt32(1)),
			}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       realisticPod(i).Spec,
			},
		},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1 << 40, Replicas: 3, ReadyReplicas: 3},
	}
}

// bookmark is what the server sends for a BOOKMARK: an empty object of the
// watched kind with only a resourceVersion and annotations.
func bookmarkPod(rv string, initialEventsEnd bool) *corev1.Pod {
	p := &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}}
	if initialEventsEnd {
		p.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	return p
}

func goneStatus() *metav1.Status {
	return &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired,
		Message: "too old resource version: 100 (2000)",
	}
}

// jsonOf encodes obj as the JSON serializer does (encoding/json).
func jsonOf(t testing.TB, obj any) []byte {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// protoOf encodes obj as the protobuf serializer does: k8s\x00 + Unknown.
func protoOf(t testing.TB, obj runtime.Object) []byte {
	t.Helper()
	var buf bytes.Buffer
	s := protobufSerializer(t)
	if err := s.Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// protobufSerializer is built once: a scheme takes a while to fill.
var protobufSerializer = func() func(testing.TB) *protobuf.Serializer {
	var once sync.Once
	var s *protobuf.Serializer
	return func(t testing.TB) *protobuf.Serializer {
		once.Do(func() {
			scheme := testScheme(t)
			s = protobuf.NewSerializer(scheme, scheme)
		})
		return s
	}
}()

// event is one watch event to encode.
type event struct {
	typ string
	obj runtime.Object
}

// jsonStream is a JSON watch body: one {"type","object"} per line.
func jsonStream(t testing.TB, events ...event) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, e := range events {
		fmt.Fprintf(&buf, `{"type":%q,"object":%s}`+"\n", e.typ, jsonOf(t, e.obj))
	}
	return buf.Bytes()
}

// protoFrame is one protobuf watch frame: length + WatchEvent.
func protoFrame(t testing.TB, typ string, object []byte) []byte {
	t.Helper()
	we := metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: object}}
	b, err := we.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

func protoWatchStream(t testing.TB, events ...event) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, e := range events {
		buf.Write(protoFrame(t, e.typ, protoOf(t, e.obj)))
	}
	return buf.Bytes()
}

// semanticEqual fails the test when got and want differ as API objects
// (apiequality: quantities by value, times by instant).
func semanticEqual(t testing.TB, got, want any) {
	t.Helper()
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Fatalf("objects differ:\n got: %s\nwant: %s", jsonOfAny(got), jsonOfAny(want))
	}
}

func jsonOfAny(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}

func mustCodec[T runtime.Object](t testing.TB, gvk schema.GroupVersionKind, opts ...CodecOption) *Codec[T] {
	t.Helper()
	c, err := TypedCodec[T](gvk, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// withoutManagedFields returns a copy of the pod as a codec built with
// WithoutManagedFields should decode it.
func withoutManagedFields(p *corev1.Pod) *corev1.Pod {
	c := p.DeepCopy()
	c.ManagedFields = nil
	return c
}

func schemaGVK(group, version, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
}

type unstructuredObj = unstructured.Unstructured
