// Package e2e holds the end-to-end tests of listwatch: they run against a
// real kube-apiserver v1.37.2 and etcd on 127.0.0.1 (package cluster), with
// a TCP proxy in between when they need network faults (package tcpproxy),
// and use client-go v0.37.2 as the reference client.
//
// It is a nested module so that client-go never enters the root module's
// dependencies. Run everything with ./run in this folder; it builds or
// finds the binaries (kubebin/build.sh) and runs `go test ./...` here.
//
// The conformance tests (TestConformance*) record what the real apiserver
// answers to the list and watch requests listwatch makes, error cases
// included, as golden JSON files under testdata/conformance; the apiserver
// simulator (internal/apisim) is checked against them. README.md describes
// the files and how to regenerate them.
//
// The scenarios (TestScenariosReal, TestScenariosSim) run listwatch
// informers end to end: each is written once against a small server
// interface with two implementations, the real apiserver and the
// simulator, and ends by comparing every cache and handler's view with a
// fresh LIST.
package e2e
