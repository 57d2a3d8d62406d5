// Package console is the operator console: server-rendered pages, served
// by the reconciler's HTTP server (the executor's embedded one too), for
// the keys that need a person. It lists the escalated keys and the keys in
// doubt past their pending_ttl (/console), shows one key's timeline from
// the event log with the actions its state allows (/console/key), and the
// tools with their settings and last errors (/console/tools). The pages
// work without JavaScript and load nothing from elsewhere.
//
// Who may use it is the operators file (--operators), in the tenants
// file's format; without one the console is off. A caller's duties, in
// order:
//
//  1. Load the operators file (LoadOperators) into an OperatorStore, and
//     reload it on SIGHUP (OperatorStore.ReloadOnSignal): a token removed
//     from the file ends its sessions at their next request.
//  2. Give New a Backend (ReconcilerBackend: the running reconciler, its
//     tools, and the Kafka settings for the event log and the control
//     topic) and Mount the console on the reconciler's mux.
//  3. Serve it over TLS, or behind a proxy that terminates TLS and sets
//     X-Forwarded-Proto, where it is reachable from outside the host: a
//     session cookie is an operator's credential.
//
// Every action is a command on the control topic signed with the
// operator's name (recorded in the event log, as `reconciler resolve --by`
// is); the executor decides it like any other command.
package console
