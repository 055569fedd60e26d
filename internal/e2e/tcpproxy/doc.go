// Package tcpproxy is a TCP proxy for network faults between a client and
// the kube-apiserver of the end-to-end tests.
//
// It forwards bytes and knows nothing of TLS or HTTP, so the client still
// verifies the apiserver's certificate (valid for 127.0.0.1, the proxy's
// address too). Faults apply at once to every connection:
//
//   - CutAll resets every open connection (RST on both sides): the client
//     sees its stream end with an error, as when a load balancer drops it.
//   - Stall stops forwarding in both directions while the connections stay
//     open, and holds new connections the same way; Resume lets the bytes
//     flow again. The proxy's kernel still acknowledges TCP segments and
//     keepalive probes, so only an application-level check (an HTTP/2 PING
//     with a timeout, a read deadline) notices: it simulates a peer that
//     hangs, or a black-holed path behind a middlebox that keeps TCP alive.
//   - BlackHole accepts new connections and never forwards them (no
//     connection to the target is made), until Resume. Connections
//     black-holed meanwhile stay so until CutAll or Close.
package tcpproxy
