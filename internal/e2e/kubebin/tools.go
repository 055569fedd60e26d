//go:build tools

// Package kubebin pins the kube-apiserver and etcd sources that build.sh
// compiles for the end-to-end suite.
package kubebin

import (
	_ "go.etcd.io/etcd/server/v3/etcdmain"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
