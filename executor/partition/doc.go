// Package partition is the executor's per-partition state machine: the
// rules one level above the saga (which decides one key) that a member
// applies to every partition it owns. It is pure in the manner of etcd
// raft's RawNode: no Kafka client, no Pebble, no goroutine, no clock.
// Time comes in as an argument, records are read through the View it is
// given (the member's Pebble view, or a map in tests), and everything it
// decides comes out as a Decisions value for the caller to carry out.
//
// It owns, per partition: the ownership epoch, whether the view is caught
// up with the log, a gap in the log (eventlog/gap.go), keys and reads in
// flight (inflight.go, their single owner), finished calls whose outcome
// is not committed yet, the reads a previous owner left (read
// obligations), the sweep of expired keys, snapshot rounds, the walk of
// orphaned calls after a restore (orphans.go), the origins of records
// that could not be produced (poison.go), and the count of keys in doubt;
// and, over all partitions, the places calls hold per tool and per member
// with each tenant's share of them (admission.go: a call with no place is
// refused at once, Decisions.Refused).
//
// A caller (the executor's loop) has these duties, in order, every tick:
//
//  1. Apply ownership changes: Assign and Revoke. A revoked partition's
//     calls in flight are forgotten (their outcomes will be stale: the
//     caller keeps a definite one as a fact for the key's owner, from
//     Decisions.Lost).
//  2. Hand over finished calls with Finished, and decode the polled
//     records into a Poll (decoding, canonicalisation and routing are
//     the caller's: they are per record and need no state).
//  3. Call Step. When the Decisions name partitions to Restore, restore each
//     (eventlog.RestoreInto), report it with Restored (or Gapped), and
//     call Step again; nothing else in such a Decisions value is set, and nothing
//     changed.
//  4. Encode the Decisions' events, answers, dead letters and forwards into
//     records and produce them in one transaction with the polled
//     offsets.
//  5. If it committed: write Decisions.Overlay with the checkpoints of the
//     events produced (the view never leads the log), then call
//     Committed, then dispatch Decisions.Calls. If it did not: report the
//     records that could not be produced (Poisoned), then call Aborted.
//     If nothing was produced and nothing polled, call Skipped.
//
// Between ticks: IdleRestore and GapRetry name the partitions to restore
// without a record (bounded, never failing the tick); Restored returns
// the reads a previous owner left, to be dispatched at once (their
// read_started events are committed already).
//
// docs/DESIGN.md walks one intent through these steps.
package partition
