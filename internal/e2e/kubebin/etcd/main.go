// Command etcd is etcd's own main, built from the Go module proxy so the
// end-to-end suite needs no downloaded binary.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
