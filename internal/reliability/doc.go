// Package reliability holds the fault matrix and the chaos test of the
// list-watch flow: tests only, run with go test against the apiserver
// simulator (internal/apisim) over real HTTP, through the public reflector
// and informer API.
//
// Every test drives the server into one misbehaviour, lets an informer
// recover, and then checks four properties with a shared oracle:
//
//   - (C) the cache and every handler's view equal the server's state,
//     within a stated bound;
//   - (O) each handler saw each object's resourceVersions in increasing
//     order, an Update always starting from the state it last saw;
//   - (D) every object that vanished was delivered as a delete (with its
//     final state known or not);
//   - (R) the number of LIST and WATCH requests stayed bounded: no relist
//     storm, no tight retry loop.
//
// The chaos test (TestChaos) drives random writes and faults from a seed;
// LISTWATCH_CHAOS_SEEDS=N runs seeds 1 to N instead of the few that go
// test runs by default, LISTWATCH_CHAOS_SEEDS=A-B seeds A to B, and
// LISTWATCH_CHAOS_SEED=S replays one seed.
package reliability
