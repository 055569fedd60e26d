package cluster_test

import (
	"context"
	"fmt"
	"io"
	"log"

	"github.com/listwatch/listwatch/internal/e2e/cluster"
)

// Start a cluster, ask it for its version as the admin, and stop it. (Not
// run by go test: it needs the binaries; the e2e tests do the same.)
func Example() {
	ctx := context.Background()
	bin, err := cluster.LocateBinaries(ctx, "../kubebin/build.sh")
	if err != nil {
		log.Fatal(err)
	}
	c, err := cluster.Start(ctx, cluster.Options{Binaries: bin, APIServerFlags: []string{"--watch-cache=false"}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Stop()

	resp, err := c.HTTPClient(c.AdminToken()).Get(c.URL() + "/version")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, len(body) > 0)
}
