// Package demo is the plumbing the examples share, so that each example's
// main.go holds only the listwatch code a reader came for:
//
//   - Flags: the flags every example takes (-kubeconfig, -context, -sim,
//     -duration, -sync-timeout, and the simulator's size and churn);
//   - Connect: a real cluster when a kubeconfig is found (checked to be
//     reachable, and only ever read from), otherwise the in-process apiserver
//     simulator (internal/apisim) filled with a synthetic workload — from a
//     few hundred to a few thousand objects across namespaces — and kept busy by a steady churn of
//     creates, updates and deletes;
//   - Main: a context that ends on Ctrl-C (SIGINT) or SIGTERM, and the exit
//     status.
//
// An example is a function run(ctx, args, stdout) error; its main is
// demo.Main(run), and its test calls run against the simulator.
//
// It sits outside the list-watch flow: it only decides which apiserver the
// flow (README.md, "How an object flows") talks to.
package demo
