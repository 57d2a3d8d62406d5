// Package txn is the executor's transaction session: one member's Kafka
// producer, end to end. It begins each tick's transaction, produces its
// records, ends it with the polled offsets and the fence (fence.go),
// confirms a reported commit on the events partitions before any call is
// made (confirm.go), recovers from an end whose outcome is unknown
// (commit.go, offsets.go), keeps the transactions this member treated as
// aborted (owntxns.go) and closes hanging transactions (hanging.go).
// franz-go keeps its GroupTransactSession apart from the consumer in the
// same way; Session wraps one and adds what at most once needs of it.
//
// The caller (the executor's loop) has these duties, in order:
//
//  1. Build a Config: the group session's options (its consumer, with the
//     group callbacks), the confirmation client's, the topic names, the
//     bounds, the store that keeps the member's own aborts, and Owned.
//  2. Call New. The consumer side is the caller's: it polls Client() and
//     calls AllowRebalance on it, pauses and resumes its fetches.
//  3. Per tick, fill a Transaction (its records, the events partitions it
//     touches, the polled records, the partitions to confirm) and call
//     Commit. Act on the tick only when Commit reports Committed; any
//     other outcome means its inputs are polled again (the session rewound
//     them) and, for Unknown and Unconfirmed, that what it touched may have
//     committed and must be read back from the log.
//  4. After a tick that produced nothing and must be polled again, or
//     after a group callback ran, call Reset.
//  5. Call CheckHanging once per tick (it rate-limits itself), and when a
//     read of an events partition does not settle.
//  6. Call Interrupt from the group's OnPartitionsCallbackBlocked, Close
//     after the loop returned.
//
// # Blocking, cancelling, goroutines
//
// Commit, Reset and CheckHanging run on the caller's goroutine, one at a
// time (not safe for concurrent use with each other or with a poll of
// Client()). Commit blocks for up to the transaction timeout to end the
// transaction and as long again to confirm it, and while the broker cannot
// be reached it waits (begin, abort, offset fetch) for up to BrokerOutage
// before it gives up with ErrFatal. Its ctx bounds the produce calls only:
// the end, the flush and the confirmation outlive a cancelled ctx (a
// transaction cut short would leave records buffered or a commit
// unconfirmed), and Interrupt is what cuts them short. Interrupt is safe
// for concurrent use: it cancels a transaction end or a confirmation in
// progress, which then reports Unknown or Unconfirmed.
//
// The confirmation reads the partitions it waits on from goroutines of
// its own, one per partition, all joined before Commit returns; no
// goroutine of the session outlives the call that started it.
package txn
