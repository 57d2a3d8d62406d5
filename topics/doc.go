// Package topics holds what crosses the wire between agents and the executor:
// the topic names and their required settings, the msgpack messages of wire
// contract v1 (intents and results), argument canonicalisation, and routing
// of a (tenant, key) to its one owning partition.
//
// A caller that produces intents has these duties, in order:
//
//  1. Build an [Intent] with Type "call", a unique ID per emission, the
//     tenant, the idempotency key, the tool and its arguments.
//  2. Encode it with [EncodeIntent] (or any msgpack encoder: unknown fields
//     are ignored, see docs/wire-format.md).
//  3. Produce it to [Names.Intents] with the Kafka key [RoutingKey]; using
//     [Partition] for the partition saves one forwarding hop, but safety
//     does not depend on it.
//  4. Read the answer from [Names.Results] (or the intent's ReplyTo) by
//     matching [Result.IntentID].
//
// Nothing here performs I/O: creating and checking the topics on a cluster is
// package topicadmin's.
package topics
