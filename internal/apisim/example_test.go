package apisim_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/internal/apisim"
)

// A test creates objects through the Go API and reads them over HTTP, as a
// reflector would.
func Example() {
	s := apisim.New(apisim.WithResources(apisim.Pods()))
	if err := s.Start(); err != nil {
		panic(err)
	}
	defer s.Close()

	pods := apisim.Of[*corev1.Pod](s, apisim.Pods())
	for _, name := range []string{"web-1", "web-2"} {
		if _, err := pods.Create(apisim.MakePod("default", name)); err != nil {
			panic(err)
		}
	}

	resp, err := s.Client().Get(s.URL() + "/api/v1/namespaces/default/pods?limit=1")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var list corev1.PodList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		panic(err)
	}
	// An empty server is at resourceVersion 1, as etcd's first revision;
	// the two creates moved it to 3.
	fmt.Println(list.Kind, list.ResourceVersion, list.Items[0].Name, *list.RemainingItemCount)
	// Output: PodList 3 web-1 1
}

// Faults make the next matching requests misbehave; here the watch delivers
// one event, then an ERROR event with 410 Expired, then ends.
func ExampleServer_Inject() {
	s := apisim.New(apisim.WithResources(apisim.ConfigMaps()), apisim.WithBookmarkInterval(0))
	if err := s.Start(); err != nil {
		panic(err)
	}
	defer s.Close()
	cms := apisim.Of[*corev1.ConfigMap](s, apisim.ConfigMaps())
	for _, name := range []string{"a", "b"} {
		if _, err := cms.Create(apisim.MakeConfigMap("default", name, 4)); err != nil {
			panic(err)
		}
	}
	s.Inject(apisim.Match{Verb: apisim.VerbWatch, Resource: "configmaps"},
		apisim.ErrorEvent(http.StatusGone, metav1.StatusReasonExpired).After(1), 1)

	resp, err := s.Client().Get(s.URL() + "/api/v1/configmaps?watch=1&resourceVersion=0&" +
		"sendInitialEvents=true&resourceVersionMatch=NotOlderThan")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			fmt.Println("end of stream")
			return
		}
		var e struct {
			Type   string
			Object struct {
				Reason   string
				Metadata struct{ Name string }
			}
		}
		if err := json.Unmarshal(line, &e); err != nil {
			panic(err)
		}
		fmt.Println(e.Type, e.Object.Metadata.Name+e.Object.Reason)
	}
	// Output:
	// ADDED a
	// ERROR Expired
	// end of stream
}
