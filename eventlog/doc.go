// Package eventlog owns the bytes and the Kafka side of the event log: the
// msgpack encoding of saga events, the records that carry them, and the
// restore that folds a partition of the log into the Pebble view.
//
// The log is the source of truth. Events are appended only inside the
// executor's fenced transaction (package runtime); this package never
// produces by itself.
//
// A caller restoring a partition has these duties, in order:
//
//  1. Read the partition's checkpoint from the store.
//  2. Call Restore with that offset. It waits until no transaction that
//     was open on the partition when it began is still undecided, then
//     reads every committed event up to that point.
//  3. Fold each event into the view (RestoreInto does steps 1 to 3 with a
//     state.Store) and commit the view with the new checkpoint.
package eventlog
