// Package cluster runs a real kube-apiserver and etcd on 127.0.0.1 for the
// end-to-end tests of listwatch.
//
// It sits outside the list-watch flow: it provides the server that the
// reflector and the reference client (client-go) talk to, so that the
// behaviour recorded against it is the truth the simulator (internal/apisim)
// is checked against.
//
// A test run goes like this:
//
//  1. LocateBinaries finds kube-apiserver and etcd: the folder named by the
//     environment variable LISTWATCH_KUBEBIN, or the one that
//     ../kubebin/build.sh prints (it builds them from the Go module proxy the
//     first time, about 14 minutes on 2 cores, then answers from its cache).
//  2. Start writes a private PKI (a CA and a serving certificate for
//     127.0.0.1 and localhost, a service-account RSA key pair), a static
//     token file with an admin user (group system:masters) and an
//     unprivileged user (no RBAC binding), then starts etcd and
//     kube-apiserver on free loopback ports and waits for /readyz.
//  3. Tests reach the server through HTTPClient, WriteKubeconfig, or URL, CAPEM
//     and a token of their own choosing. Faults come from RestartAPIServer,
//     StopAPIServer/StartAPIServer, CompactEtcd and the tcpproxy package.
//     A cluster started with Options.Audit logs every LIST and WATCH request
//     it receives; AuditEvents reads them back, to count one client's.
//  4. Stop kills both process groups and removes the temporary folder.
//
// Every process runs in its own process group and is killed with it; the
// kernel also kills it if the test process dies (Pdeathsig).
package cluster
