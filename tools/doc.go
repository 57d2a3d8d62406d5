// Package tools invokes the tools an LLM agent asks for, so that a tool call
// runs at most once per (tenant, idempotency key).
//
// The package holds the tool configuration (Parse, Load, Config, Spec), the
// HTTP adapter for tools
// reached over the network (HTTP), the adapter for in-process tools (Func),
// and the name-to-tool map the executor works from (Registry, FromConfig).
//
// # What the package does
//
// An invocation yields an Outcome whose Status feeds the saga:
//
//   - Succeeded: the tool answered 2xx; Result holds the decoded body.
//   - Failed: the tool answered and refused (4xx other than 408/429). Definite.
//   - Unknown: the request may have reached the tool and no definite answer
//     came (timeout after sending, 5xx, reset, 408, panic in an in-process
//     tool). The tool may or may not have acted.
//   - NotExecuted: known never to have reached the tool (refused, DNS, dial
//     timeout, TLS failure, 429, cancelled before a connection existed).
//
// The HTTP adapter retries only where a retry cannot cause a second
// execution: attempts that never reached the tool, for every class, and
// ambiguous outcomes for class NativeKey only, because that downstream
// dedupes on the Idempotency-Key, which is the same on every attempt. All
// retries are bounded by Spec.Retries and by Spec.PendingTTL: Invoke never
// starts an attempt that could still be running PendingTTL after
// Request.Decided (the pending record's start; when Invoke began if zero),
// and sends nothing at all when that budget is already spent.
//
// # The caller's duties
//
//  1. Decide each intent and write a pending dedup record for it before
//     calling Invoke (not needed for class ReadOnly). The record must live at
//     least Spec.PendingTTL; set Request.Decided to the record's start, so a
//     call that waited (in a queue, in a paused process) never outlives its
//     record.
//  2. Set Request.DownstreamKey to the call's own key, the one its started
//     event carries (a new one per call: package saga derives it), and use
//     that same value for every attempt and every later investigation
//     (HTTP.Probe). Invoke refuses an empty key.
//  3. Do not wrap Invoke in a retry loop of your own: it already retried
//     whatever was safe to retry. NotExecuted may be run again later; Unknown
//     must be resolved by class: Probe asks the tool's status endpoint,
//     Compensatable runs Spec.CompensateWith, Irreversible goes to an
//     operator, NativeKey may be invoked again with the same key.
//  4. Register tools during setup, before the Registry is shared.
//  5. Keep Spec.Retention at least as long as the downstream remembers keys:
//     the event log keeps at least the largest retention plus pending_ttl
//     of one tool (executor topics).
//
// A probe endpoint must answer 404 only for keys it has never seen: Probe
// reports a 404 as NotExecuted, which allows the call to run again. A probe
// URL that 404s for every request (a typo in the path) would therefore
// allow a second execution.
package tools
