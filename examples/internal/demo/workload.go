package demo

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/listwatch/listwatch/internal/apisim"
)

// namespaces returns the namespaces of the synthetic workload.
func namespaces() []string {
	return []string{"default", "kube-system", "monitoring", "ingress", "payments",
		"checkout", "search", "frontend", "batch", "staging"}
}

// apps are the prefixes of the synthetic objects' names.
const apps = "web api worker cache auth search cart queue"

// colors are the colors of widgets.
const colors = "red green blue yellow"

// pick returns one of the space-separated words of list at random.
func pick(list string, r *rand.Rand) string {
	words := strings.Fields(list)
	return words[r.IntN(len(words))]
}

// A Workload is one resource of the simulator with its synthetic objects:
// how many there are for -sim-objects pods, how to make one and how to
// change one. Get them from Pods, Deployments, ConfigMaps and Widgets; the
// zero value is not usable. A Workload is a plain value, never modified.
type Workload struct {
	// Resource is the resource the simulator serves.
	Resource apisim.Resource
	// Name is the resource's plural, for messages.
	Name string

	perPod  float64 // objects per pod of -sim-objects
	initial func(namespace, name string, r *rand.Rand) runtime.Object
	create  func(s *apisim.Server, namespace, name string, r *rand.Rand) error
	update  func(s *apisim.Server, namespace, name string, r *rand.Rand) error
	remove  func(s *apisim.Server, namespace, name string) error
}

// workload builds a Workload whose objects are of Go type T: initial makes
// the objects present at the start, fresh those the churn creates, change
// edits one.
func workload[T runtime.Object](res apisim.Resource, perPod float64,
	initial, fresh func(namespace, name string, r *rand.Rand) T, change func(obj T, r *rand.Rand)) Workload {
	return Workload{
		Resource: res,
		Name:     res.Resource,
		perPod:   perPod,
		initial:  func(ns, name string, r *rand.Rand) runtime.Object { return initial(ns, name, r) },
		create: func(s *apisim.Server, ns, name string, r *rand.Rand) error {
			_, err := apisim.Of[T](s, res).Create(fresh(ns, name, r))
			return err
		},
		update: func(s *apisim.Server, ns, name string, r *rand.Rand) error {
			objs := apisim.Of[T](s, res)
			obj, err := objs.Get(ns, name)
			if err != nil {
				return err
			}
			change(obj, r)
			_, err = objs.Update(obj)
			return err
		},
		remove: func(s *apisim.Server, ns, name string) error {
			_, err := apisim.Of[T](s, res).Delete(ns, name)
			return err
		},
	}
}

// Pods is core/v1 pods, -sim-objects of them, each about 4 KB of JSON as a
// Deployment's pod on a real cluster. Churn creates pods Pending, starts
// them (Running), restarts their containers and deletes them.
func Pods() Workload {
	return workload(apisim.Pods(), 1, newPod, newPendingPod, changePod)
}

// Deployments is apps/v1 deployments, one per 10 pods. Churn scales them
// (the new replicas are not ready at first) and completes their rollouts.
func Deployments() Workload {
	return workload(apisim.Deployments(), 0.1, newDeployment, newUnreadyDeployment, changeDeployment)
}

// ConfigMaps is core/v1 config maps, one per 3 pods. Churn edits their data.
func ConfigMaps() Workload {
	return workload(apisim.ConfigMaps(), 1.0/3, newConfigMap, newConfigMap, changeConfigMap)
}

// WidgetResource is the custom resource of the Widgets workload:
// widgets.example.com/v1, kind Widget, namespaced, served as JSON like a
// CustomResourceDefinition's objects.
func WidgetResource() apisim.Resource {
	return apisim.CustomResource("example.com", "v1", "widgets", "Widget", true)
}

// Widgets is a custom resource (see WidgetResource), one per 10 pods, with a
// spec (size, color) and a status (phase). Churn resizes and recolors them.
func Widgets() Workload {
	return workload(WidgetResource(), 0.1, newWidget, newWidget, changeWidget)
}

func newPod(ns, name string, _ *rand.Rand) *corev1.Pod {
	return apisim.MakePod(ns, name)
}

func changePod(p *corev1.Pod, r *rand.Rand) {
	switch {
	case p.Status.Phase == corev1.PodPending:
		p.Status.Phase = corev1.PodRunning
	case r.IntN(10) == 0:
		p.Status.Phase = corev1.PodFailed
	default:
		for i := range p.Status.ContainerStatuses {
			p.Status.ContainerStatuses[i].RestartCount++
		}
	}
}

// newPendingPod is a pod just created: scheduled, not started.
func newPendingPod(ns, name string, _ *rand.Rand) *corev1.Pod {
	p := apisim.MakePod(ns, name)
	p.Status = corev1.PodStatus{
		Phase:      corev1.PodPending,
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
	}
	return p
}

func newDeployment(ns, name string, r *rand.Rand) *appsv1.Deployment {
	app := appOf(name)
	replicas := int32(1 + r.IntN(5))
	labels := map[string]string{"app": app}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "registry.example.com/team/" + app + ":v1.42.0",
				}}},
			},
		},
		Status: appsv1.DeploymentStatus{
			Replicas: replicas, UpdatedReplicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas,
		},
	}
}

// newUnreadyDeployment is a deployment just created: none of its replicas
// is ready yet.
func newUnreadyDeployment(ns, name string, r *rand.Rand) *appsv1.Deployment {
	d := newDeployment(ns, name, r)
	d.Status = appsv1.DeploymentStatus{}
	return d
}

func changeDeployment(d *appsv1.Deployment, r *rand.Rand) {
	want := *d.Spec.Replicas
	if d.Status.ReadyReplicas != want {
		// The rollout completes.
		d.Status = appsv1.DeploymentStatus{Replicas: want, UpdatedReplicas: want, ReadyReplicas: want, AvailableReplicas: want}
		return
	}
	// Someone scales it; the new replicas are not ready yet.
	want = int32(1 + (int(want)+r.IntN(4))%5) // 1..5, not the current count
	d.Spec.Replicas = &want
	d.Status.Replicas = want
	d.Status.ReadyReplicas = min(d.Status.ReadyReplicas, want)
}

func newConfigMap(ns, name string, _ *rand.Rand) *corev1.ConfigMap {
	return apisim.MakeConfigMap(ns, name, 256)
}

func changeConfigMap(c *corev1.ConfigMap, r *rand.Rand) {
	c.Data["revision"] = strconv.Itoa(r.IntN(1000000))
}

func newWidget(ns, name string, r *rand.Rand) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1",
		"kind":       "Widget",
		"metadata":   map[string]any{"namespace": ns, "name": name, "labels": map[string]any{"app": appOf(name)}},
		"spec":       map[string]any{"size": int64(1 + r.IntN(10)), "color": pick(colors, r)},
		"status":     map[string]any{"phase": "Ready"},
	}}
}

func changeWidget(w *unstructured.Unstructured, r *rand.Rand) {
	_ = unstructured.SetNestedField(w.Object, int64(1+r.IntN(10)), "spec", "size")
	_ = unstructured.SetNestedField(w.Object, pick(colors, r), "spec", "color")
	phase := "Ready"
	if r.IntN(4) == 0 {
		phase = "Resizing"
	}
	_ = unstructured.SetNestedField(w.Object, phase, "status", "phase")
}

// objectName is the name of the i-th synthetic object: "web-0", ...,
// "web-9", "api-10", ... Objects are spread over namespaces round robin, so
// every namespace gets objects of every app.
func objectName(i int) string {
	words := strings.Fields(apps)
	return fmt.Sprintf("%s-%d", words[(i/10)%len(words)], i)
}

// appOf is the app an object name belongs to: "web-12" → "web".
func appOf(name string) string {
	for i := len(name) - 1; i > 0; i-- {
		if name[i] == '-' {
			return name[:i]
		}
	}
	return name
}
