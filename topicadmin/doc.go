// Package topicadmin is the Kafka side of the topics: it creates the
// topics of a deployment with the settings the protocol needs, refuses
// existing ones that break an assumption (Ensure), and records the
// partition count keys are routed by (RoutingPartitions).
//
// It is apart from packages topics and wire so that the names and what
// crosses the wire (messages, routing) need no Kafka client: the pure state
// machines import their vocabulary, never this package.
//
// A service has these duties at start, in order:
//
//  1. Call Ensure with an admin client, the names and the settings; stop
//     on an error (ErrIncompatible names the broken assumption).
//  2. Call RoutingPartitions with the Layout's partition count, and route
//     by the count it returns; refuse to decide when the two differ.
package topicadmin
