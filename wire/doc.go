// Package wire is wire contract v1: the msgpack messages that cross
// Kafka between agents and the executor (intents, results, dead
// letters), their bounds and validation, argument canonicalisation, and
// the routing of a (tenant, key) to its one owning partition. The
// statuses and reasons the messages carry are package codes'; the topic
// names they travel on are package topics'.
//
// A caller that produces intents has these duties, in order:
//
//  1. Build an [Intent] with Type "call", a unique ID per emission, the
//     tenant, the idempotency key, the tool and its arguments.
//  2. Encode it with [EncodeIntent] (or any msgpack encoder: unknown fields
//     are ignored, see docs/wire-format.md).
//  3. Produce it to topics.Names.Intents with the Kafka key [RoutingKey];
//     using [Partition] for the partition saves one forwarding hop, but
//     safety does not depend on it.
//  4. Read the answer from topics.Names.Results (or the intent's ReplyTo)
//     by matching [Result.IntentID].
//
// Nothing here performs I/O.
package wire
