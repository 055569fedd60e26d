// Package listwatchtest is an in-memory apiserver for one resource, for the
// unit tests of code built on listwatch: a Source is a
// reflector.ListerWatcher that an informer (informer.New) or a Reflector
// lists and watches, and that a test writes to.
//
//	test ──Create/Update/UpdateStatus/Delete──▶ Source ──List/Watch──▶ informer ──▶ your handlers
//	test ──FailList/FailWatch/Compact/CloseWatches──▶ Source (faults, as a real server has them)
//
// Writes are checked as kube-apiserver checks them: creating an object that
// exists is AlreadyExists, updating or deleting one that does not is
// NotFound (but an Update creates it where the server does: of Services,
// Endpoints, Events, Leases, RBAC roles and bindings and the other kinds
// whose strategy allows create on update), and updating with a
// resourceVersion (when one is set) that is not the stored one is a
// Conflict; the errors are apimachinery's, so apierrors.IsNotFound and its
// friends work on them. Each write gives the object a new resourceVersion,
// one counter for the whole Source as in etcd, and a Create gives it a UID
// (a random UUID, as the server's: unique across all Sources, so that an
// ownerReference in one names no object of another) and a
// creationTimestamp. The server's fields are the server's, whatever the client sends: metadata.generation
// starts at 1 and goes up by 1 on each write that changes more than
// metadata and status (or a Deployment's annotations, as the server's
// Deployment strategy has it, or the status of a custom resource without
// a status subresource), for the types that have one (see NewSource), and
// an Update that changes nothing writes nothing. The status is apart,
// as the server keeps it for a kind with a status subresource (every type
// with a Status field; an *unstructured.Unstructured given
// WithStatusSubresource): Update keeps the stored status, and
// UpdateStatus, a PUT to /status, writes the status alone, with the same
// checks, moving no generation on. For another type UpdateStatus is the
// server's 404. A Delete of an object
// with finalizers marks it with a deletionTimestamp; it goes when an
// Update takes its last finalizer away. A Delete is the server's DELETE
// with propagationPolicy Background, whatever the kind: a Job or a
// ReplicationController, which the server's default (Orphan) would mark
// with the "orphan" finalizer until its garbage collector removed it, goes
// at once (see Source.Delete). An Update without a resourceVersion of an
// object of a custom resource, a Lease or another kind whose server
// refuses that is refused so (Invalid); of a missing Lease, it creates it,
// as the server does. Times are stored as the server
// stores them: to the second (metav1.Time) or the microsecond
// (metav1.MicroTime). The graceful deletion of Pods is not simulated: a
// Pod without finalizers goes at once. The Source keeps
// copies and hands out copies: a test may change an object it wrote or
// got back, and an informer may change what it lists or watches (a
// transform), without changing the Source or what another informer sees.
//
// A Source serves what the reflector asks for: paged lists (each list's
// pages from one state, as a server's are; at an exact resourceVersion,
// the state at it, while the history holds it; at resourceVersion "0",
// one page whatever the limit; through a selector, a last page that may
// be empty, as the server's may be), a watch from any
// resourceVersion it still has the history of (410 Gone for an older one,
// after Compact) or from "" or "0" (the current state first), and
// streaming lists (sendInitialEvents), unless RefuseStreaming. A list at
// a resourceVersion it has not reached gets kube-apiserver's 504 "Too
// large resource version" at once, where the server waits up to 3
// seconds for it first; a plain watch from one is accepted and gets the
// events past it, as from kube-apiserver's watch cache. A watch ends after its timeoutSeconds (a
// Reflector asks for 5 to 10 minutes by default), as CloseWatches ends it.
// As a ListerWatcher it serves every object it holds; For gives the view
// a server serves for a namespace and label and field selectors (an
// object that stops matching is DELETED from a watch, one that starts is
// ADDED). It runs no goroutines of its own, but for those
// time.AfterFunc and context.AfterFunc start to end a watch at its
// timeout (in a testing/synctest bubble, at the bubble's time) or when
// its context ends.
//
// In a testing/synctest bubble, time stands still while a goroutine runs:
// an informer that listed or watched again at once, over and over, would
// stop the bubble's clock and hang the test. A Source panics instead, with
// a message that says so, once one client (the context it asks with) has
// asked for more than 10,000 watches and lists (their first pages) at one
// instant with the Source unchanged in between, or all clients together
// for more than a million; no informer that waits between its attempts
// comes near that, nor do thousands of informers started at one instant,
// nor one whose watch a test ends after every write.
//
// Code that takes an informer.Factory can be given one whose informers of
// type T use a Source, with no Config:
// informer.NewFactory(nil, informer.WithListerWatcherFor(src.For)) gives
// each informer the view of its Target; WithListerWatcher[T](src), all of
// the Source.
//
// It wraps internal/fakelw, the fake the project's own informer and
// reflector tests use, and adds the checks on writes that a real server
// makes.
package listwatchtest
