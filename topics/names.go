package topics

import "strings"

// DefaultPrefix is the topic prefix used when none is configured.
const DefaultPrefix = "tool."

// Names are the five topics of one deployment. Intents, Control and Events
// are co-partitioned: partition p of each belongs to one owner.
type Names struct {
	Intents    string // what agents send: call and compensate intents
	Control    string // resolve and compensate commands from operators and the reconciler
	Events     string // the event log, the source of truth that state is restored from
	Results    string // answers, unless an intent names its own reply_to
	DeadLetter string // undecodable or invalid input, with the reason
	// Meta (compacted, one partition) records the partition count keys
	// are routed by (layout.go). Not in All: it is not co-partitioned,
	// and no answer or event is ever written to it.
	Meta string
}

// NamesWithPrefix returns the topic names under prefix ("tool." by default).
func NamesWithPrefix(prefix string) Names {
	return Names{
		Intents:    prefix + "intents",
		Control:    prefix + "control",
		Events:     prefix + "events",
		Results:    prefix + "results",
		DeadLetter: prefix + "deadletter",
		Meta:       prefix + "meta",
	}
}

// Internal reports whether topic is one the executor owns for its own
// purposes and that therefore must never be the target of an agent's
// reply_to: writing answers into the event log or the control topic would
// let an agent forge state or commands.
func (n Names) Internal(topic string) bool {
	switch strings.TrimSpace(topic) {
	case n.Intents, n.Control, n.Events, n.DeadLetter, n.Meta:
		return true
	}
	return strings.HasPrefix(topic, "__")
}

// CoPartitioned lists the topics that must share one partition count.
func (n Names) CoPartitioned() []string {
	return []string{n.Intents, n.Control, n.Events}
}

// All lists every topic of the deployment.
func (n Names) All() []string {
	return []string{n.Intents, n.Control, n.Events, n.Results, n.DeadLetter}
}
