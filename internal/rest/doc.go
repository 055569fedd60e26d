// Package rest is the HTTP client layer under the Reflector: it turns a
// cluster's address and credentials into requests the apiserver accepts, and
// the apiserver's refusals into typed errors.
//
// Where it sits in the flow:
//
//	kube-apiserver
//	  ▲ HTTPS (HTTP/2 with PING health checks, or HTTP/1.1 with TCP keepalive
//	  │        and TCP_USER_TIMEOUT), bearer token / client certificate / exec plugin
//	rest.Client          ← this package: Config → TLS, transport, auth chain
//	  ▲ Do, URL, CheckResponse, LimitReader
//	the HTTP ListerWatcher (decodes LIST pages and WATCH frames)
//	  ▲
//	reflector.Reflector
//
// A caller follows four steps:
//
//  1. Get a Config: LoadKubeconfig (a kubeconfig file, $KUBECONFIG or
//     ~/.kube/config), InClusterConfig (a pod's service account), or fill
//     one in by hand.
//  2. Build a Client with NewClient. It checks the configuration once:
//     certificates parse, credentials are not sent over plain http, at most
//     one way to authenticate is chosen.
//  3. Build request URLs with Client.URL and send them with Client.Do,
//     bounded by the request's context (the HTTP ListerWatcher bounds each
//     LIST page itself, by the shorter of its list timeout and
//     Config.Timeout).
//  4. Turn a non-2xx response into an *APIError with CheckResponse (or an
//     ERROR event's Status into one with FromStatus), bound every body with
//     LimitReader, and decide what to do: IsGone (relist),
//     IsTooLargeResourceVersion (wait and retry), IsRetryable (back off and
//     retry), RetryAfter (how long the server asked for).
//
// Credentials stay out of errors and logs: Config, TLSConfig and ExecConfig
// redact themselves (exec arguments and environment values included, and
// the user info of URLs) when formatted with fmt, marshalled to JSON or
// logged with log/slog; a response's Request is the caller's, without the
// Authorization header the client added. An exec plugin's standard error
// goes to this process's, as with client-go, and is never quoted in an
// error: plugins that log verbosely write tokens there. (fmt cannot redact
// a Config held in an unexported field of another struct, nor YAML a
// Config marshalled with it.)
//
// Files named by a Config are read again when they change, so that a
// rotation needs no restart: the bearer token file, the client certificate
// and key files (the connections made with the old pair are closed), and
// the CA file (connections made from then on verify the apiserver against
// the new roots; those made before, verified already, stay open, watches
// included). Each is looked at before every request; the CA file also when
// a handshake finds the apiserver's certificate signed by an unknown
// authority. A file caught mid-write or removed leaves what was read
// before in use, with one warning in the log. Each is read when the Client
// is made whatever it is (a pipe from a shell's process substitution
// included), but read again only as a regular file of at most 16 MiB: a
// named pipe nobody writes to would hold every request.
//
// Dead connections are noticed on the client: over HTTP/2 a PING is sent
// after Config.HTTP2ReadIdleTimeout without a frame and the connection is
// dropped when no answer comes within Config.HTTP2PingTimeout (5 s + 5 s by
// default); over HTTP/1.1 TCP keepalive probes and, on Linux,
// TCP_USER_TIMEOUT do the same job in the kernel.
//
// Over HTTPS with HTTP/2, a request made while no connection is up goes
// alone: once it has its connection, up to 99 more go (Go's HTTP/2 client
// assumes 100 streams until the server's SETTINGS come), and the rest wait
// for the first answer on it (through a wrapped transport that does not
// say when the connection is up, everyone waits for that answer); nobody
// waits more than two seconds. So a Factory starting hundreds of
// informers at once, or watches coming back after their connection was
// cut, share one HTTP/2 connection rather than dialing one each. After
// that, one request at a time looks for a connection (two seconds at
// most each): when every connection is at the server's stream limit
// (kube-apiserver's is 100 streams), or the server does not finish its
// TLS handshakes, one dials and the others wait for its connection, rather
// than all dialing at once. A request whose own timeout is shorter than
// these waits may run out while it waits.
package rest
