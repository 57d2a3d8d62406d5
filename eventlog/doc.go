// Package eventlog owns the bytes and the Kafka side of the event log: the
// msgpack encoding of saga events (with the pair assertion Check), the
// records that carry them, the pending reads the view keeps, and the
// restore that folds a partition of the log into the Pebble view.
//
// The log is the source of truth. Events are appended only inside the
// executor's fenced transaction (package executor); this package never
// produces by itself.
//
// A caller restoring a partition has these duties, in order:
//
//  1. Call Target for the offset the restore must reach: it waits until
//     no transaction that was open on the partition when it began is
//     still undecided.
//  2. Read every committed event from the view's checkpoint to that
//     target (Read), starting at a complete snapshot round instead when
//     the log no longer reaches back to the checkpoint, or refusing with
//     a *GapError (gap.go).
//  3. Fold each event into an overlay.Overlay and write it with the new
//     checkpoint, in one batch (Writer).
//
// RestoreInto does all three with a state.Store.
package eventlog
