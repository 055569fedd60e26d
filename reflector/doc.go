// Package reflector is the first stage of the list-watch flow: it keeps a
// Store (normally a deltafifo.FIFO) in step with one resource on the
// apiserver.
//
//	kube-apiserver ──LIST, WATCH──▶ Reflector ──Add/Update/Delete/Replace──▶ Store
//
// A Reflector lists the resource, hands the whole list to Store.Replace, and
// then watches from the list's resourceVersion, turning each watch event into
// Add, Update or Delete. It owns all of the recovery logic:
//
//   - A watch stream that ends cleanly is reopened from the last
//     resourceVersion seen, without listing again.
//   - BOOKMARK events only advance the resourceVersion.
//   - 410 Gone (the resourceVersion was compacted away) means list again,
//     then watch again; a list refused with 410 asks for the server's
//     latest state.
//   - "Too large resource version" (the server is behind us) means wait at
//     least a second; on a watch, then list at a state at least as new as
//     the Store's, which the server waits for. Never a tight loop. (client-go
//     relists too, and then takes the server's newest state even if it is
//     older than its cache; listwatch does after two minutes, below.)
//   - 429 and 5xx answers, dropped connections and malformed streams back
//     off with jitter (honouring Retry-After, plus up to half of it at
//     random so that informers turned away together come back apart, up
//     to the backoff's maximum; a Retry-After at or past the maximum
//     waits two thirds to all of the maximum, spread the same way)
//     and resume without relisting (unless the server refuses the
//     resourceVersion itself: below); a watch that moved the cache forward
//     before it broke resumes after the backoff's first wait. A watch that
//     fails twice in a row in its stream at the same resourceVersion, on
//     what the server sent (an event it cannot decode, an ERROR event), is
//     relisted instead: resuming again would bring the same event back.
//     Watches that keep failing are resumed, not relisted, however long
//     the failures last: once the server serves them again, the watch
//     brings every change since the Store's resourceVersion (or a 410,
//     and a relist). While they fail, the cache stays at its last state;
//     WithRelistInterval's relists come on time whether a watch is open or
//     not, for those who want the cache refreshed meanwhile. (client-go
//     relists after a watch refused with 500, 503 or 504.)
//   - A watch that ends at once without moving the resourceVersion forward
//     counts as a failure, so that a server doing that is not asked again
//     in a tight loop.
//   - A server whose resourceVersions go backwards is relisted (events at
//     one resourceVersion are not: etcd deletes an expired lease's keys,
//     a minute's Events, in one transaction), and a relist asks for a
//     state at least as new as the Store's. A server behind the
//     Store answers "too large" (an apiserver whose cache lags, one
//     restored from a backup without a jump in its resourceVersions, or
//     one that sent a resourceVersion it never had): the Reflector waits,
//     and lists it whole once it passes the Store's version. A server
//     still behind after two minutes is not lagging: the Reflector takes
//     its latest state, older as it is, so that the cache converges to
//     what the server holds (client-go does at once). That refill is
//     reported as ErrBackInTime; the handlers see objects go back. A
//     relist answered without a resourceVersion, where the Store has one
//     (a proxy's {"items":[]}), is taken as older than the Store, and so
//     is refused for two minutes; a JSON list without "items" ({}) is no
//     list at all, and is refused every time. Nor are these pages of
//     the list, which kube-apiserver never sends, and which a proxy
//     may make up or mix up: a page after the first not at the first
//     page's resourceVersion (kube-apiserver gives them all the
//     first's), a page that counts items left (remainingItemCount) but
//     has no continue token to fetch them, an item of a namespace other
//     than the one listed. The list fails and starts over after the
//     backoff, rather than end there without the objects of the pages
//     not sent, or cache what is not there. A watch skips an event of
//     another namespace, and reports it; a DELETED event whose object
//     has no resourceVersion ends the watch, and a relist takes the
//     object out (skipped, it would stay cached for good).
//   - A watch is not refused that way: kube-apiserver's watch cache
//     accepts a watch from a resourceVersion it has not reached and sends
//     only the events past it. So after the server was out of reach (no
//     answer to a watch: connections refused, reset or timed out; or 502
//     or 503 from a proxy) or went away (a watch ended by an HTTP/2
//     GOAWAY, as kube-apiserver shuts down), the first attempt is a list
//     of one object, the server's newest state, whose resourceVersion
//     tells whether it came back behind the Store (etcd restored from a
//     backup while it was down); if it did, its state is taken at once
//     (ErrBackInTime), else the watch resumes. One small LIST per outage;
//     client-go has no such check, and after a restore its cache stays
//     wrong. A server restored and back before the Reflector noticed it
//     was away (a stream cut with no GOAWAY, then a watch answered), or
//     that passes the Store's version before the probe, is not caught:
//     restore etcd with --bump-revision and --mark-compacted, which makes
//     it a 410 and a relist at once, or set WithRelistInterval.
//   - A resourceVersion the server calls invalid when a watch or a list
//     names it (kube-apiserver's answer, 500 or 400, to one that is not a
//     number, which only a broken server or proxy sends, in the last
//     event of a watch) is left behind: the Reflector lists the server's
//     latest state and watches on from there. client-go asks from it
//     again for ever.
//   - A watch answered 404 (the resource no longer served: its CRD
//     deleted, or its version) is followed by a list after the backoff, as
//     in client-go; the cache keeps what it held until a list succeeds.
//   - An event the Store refuses is reported and skipped; the watch goes on.
//     So is one the Watcher skips (an object of another kind), except among
//     a streaming list's initial events: there it fails the list, which is
//     tried again after the backoff (with LIST, in Auto mode), as a LIST
//     page that holds one is (a list without it would have the cache
//     delete the object). A DELETED of another kind, or whose object has
//     no name or resourceVersion, is not skipped either (the object it
//     meant would stay cached for good): the watch ends, and a relist
//     after the backoff takes the object out.
//   - A watch answered 403 Forbidden (a role that grants list but not
//     watch) or 405 Method Not Allowed (a resource that can be listed but
//     not watched, as an aggregated API's may be) is followed by a list
//     after the backoff, again and again, so the cache follows the server
//     at the backoff's pace, as client-go's does.
//   - A LIST answered without a resourceVersion (kube-apiserver's
//     componentstatuses, which it does not watch either) is stored, with
//     its items, which have none either, and is not watched: a watch from
//     no resourceVersion starts at the server's newest state and would
//     miss what was deleted in between. The resource is listed again with
//     LIST (in Auto mode too) every 30 s instead (the backoff's cap, or
//     WithRelistInterval's interval; at least a second), without an error;
//     client-go's informer lists it after each watch fails, at its
//     backoff's pace. In a list with a resourceVersion, an item without one is rejected and
//     reported, as in a watch, and a KeepingStore keeps what it held for
//     it, as for an object the transform fails on.
//   - In Auto mode, a streaming list that fails is followed by a LIST, as
//     client-go falls back: streaming lists are served by the watch cache
//     alone, which refuses them while it lags ("too large resource
//     version") where a LIST is served, and a proxy may break watches
//     only. Without it the cache would stay unsynced while LIST mode
//     syncs. After one that was forbidden (a watch) or ended before its
//     end bookmark, the LIST comes at once, and LISTs follow until one
//     succeeds; after one that failed otherwise, the LIST comes after the
//     backoff, and if it fails too, the next refill streams again. A
//     server that does not serve streaming lists (it refuses the request,
//     or sends what a streaming list does not; see Auto) is listed with
//     LIST then WATCH from then on.
//   - A page after the first of a paged list that fails with 429, 500,
//     502, 503, 504 or a lost connection is asked for again with the same continue
//     token, after the backoff (or Retry-After), up to five times, so that
//     a busy server does not make the list start over; a continue token
//     that expired between pages (410) makes it list again in one answer
//     without pages, once, as client-go's pager does. A relist at the
//     Store's resourceVersion is one answer from the start (unless
//     WithPageSize), which kube-apiserver serves from its watch cache;
//     once such an answer runs out of the list timeout, relists are paged.
//   - A list that would never end fails and is tried again after the
//     backoff: one with a page that gives back the continue token it was
//     asked with, or one that begins with the object an earlier page of the
//     list began with (a server that ignores continue tokens). Pages of no
//     items with a continue token are allowed (kube-apiserver may filter
//     out all a page read), but after 100 in a row each next one waits
//     the backoff, and the wait is reported: a server that sends them for
//     ever, each with a new token, is not asked as fast as the client
//     can. A streaming list whose end bookmark has no resourceVersion is
//     not usable: Auto mode lists with LIST instead. One that has not sent that bookmark 30 s
//     after the timeoutSeconds it asked for (a server that ignores both) is
//     cut as one that ended early (client-go waits for the server); the
//     initial events it holds meanwhile are at most one per object, and one
//     more for an object the transform fails on or that has no
//     resourceVersion (a server that sends an object again takes no more
//     memory).
//
// With streaming lists (Auto mode, the default, or WatchList) the initial
// state arrives as ADDED events on a watch that ends its initial part with
// a BOOKMARK annotated "k8s.io/initial-events-end"; the Reflector buffers
// those events and swaps them into the Store in one Replace at that
// bookmark, so a consumer never sees a partial state as synced.
//
// The Reflector talks to the server through the ListerWatcher interface.
// NewListerWatcher returns the HTTP implementation, which decodes list pages
// and watch events as they stream in, in one typed pass per object, as JSON or
// protobuf.
//
// The Reflector's loop is one goroutine: Run. Every error it meets is passed
// to the error handler (WithErrorHandler) before it recovers, so a caller can
// report why a cache is not syncing; in Auto mode, a server refusing the
// streaming list is logged instead.
package reflector
