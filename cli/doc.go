// Package cli holds what the commands (cmd/executor, cmd/reconciler) share:
// subcommand dispatch, the process log and shutdown signal, the flags that
// name the cluster, and JSON output. Each command keeps its own flags and
// wiring; only what must read and behave the same in both lives here.
package cli
