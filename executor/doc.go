// Package executor is the partition runtime: one consumer-group member
// that owns partitions of the intents and control topics, decides every
// input with package saga, commits the decisions in one Kafka transaction
// per loop tick (fenced by the group generation, KIP-447), confirms that
// commit on the events partitions, then hands the tick's calls to the
// tools and materialises the tick into Pebble (tick.go: a crash between
// the two is safe, since the log, not Pebble, is the record of a call).
//
// An embedding service has these duties, in order:
//
//  1. Build a tools.Registry (HTTP tools from a file, in-process Go tools,
//     or both) and a Config; Config.Validate names any bad field.
//  2. Ensure the topics exist (topicadmin.Ensure; New does it for you).
//  3. Call New, then Run in one goroutine. Run blocks until its context is
//     cancelled, then drains the calls in flight (bounded by
//     Config.DrainTimeout), records their outcomes and leaves the group.
//  4. Call Close after Run returned.
//
// See docs/DESIGN.md for the protocol walk-through and goroutine ownership.
package executor
