// Package saga is the pure per-key state machine of the executor: inputs
// and time go in, decisions and events come out. It performs no I/O, reads
// no clock and starts no goroutine, so every rule of the at-most-once
// promise can be tested as a table or a property without Kafka or Pebble.
//
// A caller (package executor/partition) has these duties, in order, for every
// input of a loop tick:
//
//  1. Load the key's current Record (nil when absent) from the view that
//     already includes this tick's earlier events.
//  2. Call Decide (an intent or command), Complete (a call returned) or
//     Expire (a sweep), passing the time and whether a call for the key is
//     in flight in this process.
//  3. Append the Decision's Events to the event log in the tick's
//     transaction and fold each one into the view with Apply.
//  4. Send the Decision's Answers in the same transaction.
//  5. Only after the transaction committed, dispatch the Decision's Call.
//
// The state of a key is the fold of its events (Apply); the Pebble view and
// a restore are both that fold.
package saga
