// Package state is the executor's Pebble view: one record per (tenant,
// key), the log offset each events partition has been applied up to, and
// indexes of keys by expiry and of keys in doubt.
//
// The view is a rebuildable fold of the event log (package eventlog); it is
// never the source of truth. A caller has these duties:
//
//  1. Open the store once per process with Open; Close it last.
//  2. Read with Get; a missing key is (nil, nil).
//  3. Write a loop tick's records and the new checkpoint in one Batch,
//     committed with Commit(Sync) only after the Kafka transaction that
//     holds the same events committed. Because the checkpoint rides in the
//     same batch as the records, the view is never ahead of, nor torn
//     against, its own checkpoint: a crash leaves it behind, and a restore
//     from the checkpoint catches up.
//
// Store is safe for concurrent use; a Batch is not.
package state
