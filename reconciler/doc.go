// Package reconciler settles keys left in doubt past their tool's
// pending_ttl: the window between an external effect and the executor's
// record of it (a crash, a lost answer), which no local protocol can close.
//
// A reconciler is a member of its own consumer group. It follows the
// executor's event log read-committed and folds it into a small Pebble view
// (package state, with saga.Apply: the same fold as the executor's), with
// the offset of every events partition in the same batch as the records it
// covers, and resumes from those offsets on assignment. Every key in doubt
// past its deadline is investigated by the class of the tool whose effect
// is in doubt (see Plan):
//
//   - native_key: invoke the tool again with the same downstream key; the
//     downstream answers with the first call's outcome instead of acting
//     twice.
//   - probe: ask the tool's probe by downstream key; 404 means the call
//     never reached the tool (not_executed).
//   - compensatable: ask the executor to compensate (compensate_with).
//   - irreversible, or anything undecidable: escalate to an operator
//     (metric, log, reconciler pending), and wait.
//
// The reconciler never writes the executor's state. It sends resolve and
// compensate commands on the control topic, keyed like the key's intents,
// each naming the call it is about (a precondition the executor checks),
// so the key's single owner applies them in order, or refuses them when
// the key moved on. What it learns and sends is remembered in its view
// (Investigation) before it acts, so a restart resumes an investigation
// and never sends a second command for it while the first may land.
//
// An embedding service has these duties, in order:
//
//  1. Give it the executor's tool configuration (Config.Tools): it calls
//     the same tools under the same downstream keys.
//  2. Start it after the executor created the topics; New refuses to
//     start without them (ErrTopics).
//  3. Call Run in one goroutine; it blocks until its context is cancelled.
//     Serve Handler for /metrics, /healthz, /readyz and /pending.
//  4. Call Close after Run returned.
//
// Operators use PendingFromLog (with Merge and FetchRows) and Resolve, the
// library behind `reconciler pending` and `reconciler resolve`.
package reconciler
