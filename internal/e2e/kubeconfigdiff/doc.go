// Package kubeconfigdiff checks listwatch's kubeconfig handling against
// client-go's clientcmd, by the requests each sends.
//
// TestKubeconfigMatchesClientcmd runs written cases, then kubeconfigs
// generated from a small grammar with seeded randomness (a failure names
// its case or seed and prints every file): clusters, users and contexts
// spread over one to three files merged through $KUBECONFIG, with CAs in
// files or data, insecure-skip-tls-verify, tls-server-name, proxy-url,
// disable-compression, tokens, token files, basic auth, client
// certificates, impersonation, exec credential plugins (the test binary
// itself, see TestMain), and broken inputs: names never defined, bad
// base64, missing files, unreadable YAML. Files a kubeconfig names lie
// under the same relative names beside every file, with contents of that
// file's own, so a path resolved against the wrong folder shows.
//
// Each kubeconfig is loaded by clientcmd (the deferred loading client
// config kubectl uses) and by rest.LoadKubeconfig, and each library's
// client sends a GET to local recording servers: two HTTPS servers with
// CAs of the test's own that ask for a client certificate, a plain HTTP
// one, and a forward proxy. The servers record which of them got the
// request, under which path prefix, whether through the proxy, the
// Authorization header, the Impersonate-* headers, the client
// certificate's CN and Accept-Encoding. The exec plugin puts what it was
// told (KUBERNETES_EXEC_INFO: the cluster's server, TLS settings, proxy
// and exec extension) into the token it returns, so that is compared too.
// The libraries must agree on how far they get (refused before sending,
// failed to send, or sent: clientcmd reads the files a kubeconfig names
// when it loads it, listwatch when it builds the Client, and both count
// as refusing), on the namespace, and on everything recorded.
//
// The differences expected are named in differences_test.go, each with
// where internal/rest documents it: refusals
// (listwatch refuses on purpose what client-go takes; listwatch's error is
// checked), readings (clientcmd refuses what listwatch reads in a way of
// its own; client-go runs again on the kubeconfig rewritten to that
// reading, and everything is compared), and one client-go bug. Any other
// difference fails, and so does an entry that no case shows.
//
// It needs no kube-apiserver:
//
//	go test -race ./kubeconfigdiff/
//
// LISTWATCH_KCDIFF_SEEDS=N runs N random kubeconfigs instead of 300.
package kubeconfigdiff
