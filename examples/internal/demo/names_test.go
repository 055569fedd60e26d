package demo

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/internal/apisim"
)

// The churn names the objects it creates after those of the fill: its
// first creates do not reuse the names of objects that exist, in their
// namespace (where the create would fail) or in another one.
func TestChurnCreatesNewNames(t *testing.T) {
	const objects = 20
	var out bytes.Buffer
	c, err := Connect(t.Context(), Flags{Sim: true, SimObjects: objects, SimChurn: 200}, &out, Pods())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The fill wrote the objects resourceVersions that follow an empty
	// server's: watch the churn's writes after them.
	empty, err := strconv.Atoi(apisim.New().ResourceVersion())
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet,
		c.Config.Host+"/api/v1/pods?watch=true&resourceVersion="+strconv.Itoa(empty+objects), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch: %s", resp.Status)
	}
	dec := json.NewDecoder(resp.Body)
	for created := 0; created < 3; {
		var e struct {
			Type   string
			Object struct {
				Metadata struct{ Namespace, Name, ResourceVersion string }
			}
		}
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("watch: %v", err)
		}
		if e.Type != "ADDED" {
			continue
		}
		created++
		md := e.Object.Metadata
		n, err := strconv.Atoi(md.Name[strings.LastIndexByte(md.Name, '-')+1:])
		if err != nil || n < objects {
			t.Errorf("the churn created %s/%s (rv %s): a name of the fill's, which named objects 0 to %d",
				md.Namespace, md.Name, md.ResourceVersion, objects-1)
		}
	}
}
