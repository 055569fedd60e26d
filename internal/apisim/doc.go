// Package apisim is an in-process kube-apiserver for tests and benchmarks:
// a real HTTP server on 127.0.0.1 that speaks kube-apiserver's REST paths
// and follows its list and watch rules, with faults that tests script per
// request. Every test of the library, the examples and the benchmarks talk
// to it, so a reflector must not be able to tell it from the real thing on
// the behaviours below.
//
// # Place in the flow
//
// apisim stands where kube-apiserver stands at the top of the flow (see
// README.md, "How an object flows"): the HTTP ListerWatcher sends it LIST and WATCH requests; tests
// change objects through its Go API (Of) and watch the reflector, FIFO,
// indexer and handlers react.
//
// # Use
//
//	s := apisim.New(apisim.WithResources(apisim.Pods()))
//	if err := s.Start(); err != nil { ... }
//	defer s.Close()
//	pods := apisim.Of[*corev1.Pod](s, apisim.Pods())
//	pods.Create(apisim.MakePod("default", "web-1"))
//	// point the client at s.URL(); s.Inject(...) to make it misbehave.
//
// # Storage
//
// One global resourceVersion counter, decimal, incremented by every write
// to any resource, as etcd's revision. Like etcd's, it starts at 1: an
// empty server lists at "1" (kube-apiserver never answers at "0") and its
// first write is at 2. Each resource keeps every version of every object
// that a read at a retained resourceVersion may need, each encoded once
// (JSON; protobuf too for built-in types) when written, and a bounded
// history of events (WithHistorySize, default 10000) from which watches
// resume. When an event falls off the history, the versions only it
// could show are dropped too: the history is the window within which
// watches, exact-RV lists and continue tokens are served, and older ones get
// 410 Expired. Compact closes that window at the current resourceVersion.
// Objects of a resource without protobuf are held unstructured, those of
// a kind the scheme knows in the shape its Go type encodes to, as
// kube-apiserver decodes every write into its type and stores that (a
// container gains "resources": {}); the others as given. A write body
// that the type of its kind (built-in, or a JSON-only resource's known
// kind) refuses, by the server's JSON rules (a float or a number too
// large for an integer field; field names are case-sensitive), is 400
// BadRequest in its words ("Deployment in version "v1" cannot be handled
// as a Deployment: ...").
// A JSON list of a built-in kind carries the kind and apiVersion on the
// list only, as kube-apiserver writes it from its Go type: its items have
// none. A custom resource's items and metadata-only items carry theirs, as
// does every object of a watch event or a GET.
// A GET of one object reads as a list without limit does: "" and "0" the
// newest state, N the newest once the server has reached N (a
// resourceVersion ahead of it waits, then gets 504 Timeout, cause
// ResourceVersionTooLarge).
//
// Writes stamp uid (on create), creationTimestamp (on create, unless the
// object has one), generation (1 on create, +1 when anything but metadata
// and status changes, or a Deployment's annotations, for every kind:
// kube-apiserver gives ConfigMaps and Secrets none) and resourceVersion.
// An update that changes nothing writes nothing. Optimistic concurrency,
// AlreadyExists, NotFound and namespace checks answer with kube-apiserver's
// Status errors; so does a PUT without metadata.resourceVersion (or with
// "0") to a custom resource or to a kind whose strategy refuses
// unconditional updates (leases, poddisruptionbudgets, ...): 422 Invalid,
// "must be specified for an update". A PUT of a missing object is 404
// NotFound, but for the kinds whose strategy allows create on update
// (services, endpoints, events, limitranges, leases, leasecandidates, the
// RBAC roles and bindings, runtimeclasses: kinds.CreateOnUpdate; a
// Service's /status too, whose strategy inherits it): it creates the
// object as a POST does, whatever resourceVersion it names (a Lease's
// none), and answers 201 Created; a uid in it is then 409 Conflict, the
// precondition the missing object fails. A PUT keeps the stored deletion marks
// and answers 422 to one that sets them (only a delete does), changes the
// grace period, or adds a finalizer to an object being deleted.
//
// Kinds with a status subresource (see Resource) serve GET and PUT on
// .../{name}/status (a Namespace's at /api/v1/namespaces/{name}/status);
// other kinds answer 404 there. As kube-apiserver's update strategies do,
// a PUT to the object keeps the stored status (and a Namespace's
// spec.finalizers, a CertificateSigningRequest's spec: internal/strategy),
// and a PUT to its status keeps the rest: of a built-in kind the spec, the
// metadata its status strategy protects (a Pod's ownerReferences and
// deletionTimestamp, a Deployment's labels, what
// metav1.ResetObjectMetaForStatus resets for the kinds that call it) and
// what a Pod's keeps of its status when the request leaves it out
// (qosClass, observedGeneration, claim statuses: an empty list sent in
// JSON clears them; protobuf cannot send one) and a
// CertificateSigningRequest's stored Approved and Denied conditions
// (where the request has as many of each); of a custom resource
// everything but the status. A status write never moves the generation.
// Two more subresources write one part, as kube-apiserver's do: PUT
// /api/v1/namespaces/{name}/finalize a Namespace's spec.finalizers (only
// PUT is served there), PUT .../certificatesigningrequests/{name}/approval
// a CertificateSigningRequest's conditions; each takes the request's
// metadata and keeps the rest, and neither moves the generation. Objects.Update writes the object whole,
// status and deletion marks included, with or without a resourceVersion.
//
// # Wire
//
// JSON always; application/vnd.kubernetes.protobuf for built-in types
// (Resource.Protobuf), framed for watches as kube-apiserver frames them;
// metadata-only responses for Accept
// "application/json;as=PartialObjectMetadata(List);g=meta.k8s.io;v=v1" (and
// the protobuf equivalent). A custom resource asked for protobuf only
// answers 406 NotAcceptable; with JSON as a second choice it answers JSON.
// Errors are Status objects encoded in the first format the client accepts,
// as kube-apiserver does (protobuf Status for a protobuf-only client). LIST
// bodies and watch streams are written from the stored bytes without
// re-encoding; a watch stream is flushed whenever the watcher has no more
// events queued.
//
// # Watch behaviour worth knowing
//
//   - Slow watchers: each watcher has a queue (WithWatchBuffer, default
//     1024). A watcher whose queue is full when an event arrives is
//     terminated, like the watch cache terminates watchers that cannot keep
//     up: its stream ends cleanly after the queued events and the client is
//     expected to resume from the last resourceVersion it saw.
//   - A watch from "" or "0" without sendInitialEvents gets initial events
//     (the WatchList default since 1.34), closed by the initial-events-end
//     bookmark when it allows bookmarks.
//   - A watch from a resourceVersion ahead of the server waits for it, as
//     with the watch cache (WithFutureWatchError makes it fail instead); a
//     streaming list (sendInitialEvents) from such an RV
//     fails after the too-large wait with an ERROR event, 504 Timeout, cause
//     ResourceVersionTooLarge.
//   - sendInitialEvents=true without allowWatchBookmarks is accepted, as by
//     kube-apiserver: the initial events come without the closing bookmark.
//   - An object that stops matching a watch's selector arrives as DELETED
//     carrying its previous state stamped with the change's resourceVersion
//     (kube-apiserver's choice); one that starts matching as ADDED.
//   - Watches allowing bookmarks get one every WithBookmarkInterval, and
//     one 2 s before their timeout, as from kube-apiserver; as from its
//     watch cache, only a bookmark newer than the resourceVersion the watch
//     started from is sent (none on a resource nobody writes to), and one
//     the watcher's queue has no room for is dropped. Bookmarks carry the
//     server's resourceVersion, which writes to other resources move too;
//     kube-apiserver's watch cache of one resource moves only with its own
//     events and etcd's progress notifications.
//
// # Fidelity
//
// The tests replay the Status answers a real kube-apiserver v1.37.2 gave
// (recorded by internal/e2e under testdata/conformance) against the
// simulator and compare them field by field. Not simulated: authentication
// beyond one bearer token, authorization (403), namespace lifecycle
// (creating in a missing namespace succeeds), finalizers and graceful
// deletion (a delete removes the object at once), the DeleteOptions'
// propagationPolicy (not read: a delete is Background's, also of the
// batch/v1 Jobs and core/v1 ReplicationControllers whose default, Orphan,
// holds kube-apiserver's delete with the "orphan" finalizer until the
// garbage collector removes it), the status a create
// resets (a created Pod keeps the status it was given), validation beyond
// the rules above (a CertificateSigningRequest's status write that adds or
// removes an Approved or Denied condition is taken), the times a strategy
// stamps (a CertificateSigningRequest's condition lastUpdateTime),
// subresources other than status, a Namespace's finalize and a
// CertificateSigningRequest's approval, PATCH, deletecollection,
// Table output, YAML and CBOR, response compression, and an etcd
// compaction that the watch cache outlives (Compact drops both).
//
// # Faults
//
// Server.Inject schedules a Fault for the requests a Match selects, a given
// number of times. Server.Restart, Compact and DropEvents act on the whole
// server; Requests counts requests per verb and resource so that tests can
// assert the absence of relist storms (SubresourceRequests those to a
// subresource, which a Match names as RBAC does: "pods/status",
// "namespaces/finalize", "certificatesigningrequests/approval"). See Fault
// for the list.
//
// Everything exported is safe for concurrent use.
package apisim
