package cli

import (
	"flag"
	"strings"

	"github.com/atmostonce/toolexec/topics"
)

// Kafka holds --brokers and --topic-prefix: where the cluster is and which
// topics are ours. Every command that only talks to a running cluster
// takes them with the same defaults, so one pair works for all of them.
type Kafka struct {
	Brokers string // comma-separated seed brokers, as given
	Prefix  string // prefix of the topic names
}

// KafkaFlags defines --brokers (default the local broker) and
// --topic-prefix on fs.
func KafkaFlags(fs *flag.FlagSet) *Kafka {
	k := &Kafka{}
	fs.StringVar(&k.Brokers, "brokers", "127.0.0.1:9092", "comma-separated Kafka seed brokers")
	fs.StringVar(&k.Prefix, "topic-prefix", topics.DefaultPrefix, "prefix of the topic names")
	return k
}

// Seeds splits --brokers into the seed list a client takes.
func (k *Kafka) Seeds() []string { return strings.Split(k.Brokers, ",") }

// Names are the topic names under --topic-prefix.
func (k *Kafka) Names() topics.Names { return topics.NamesWithPrefix(k.Prefix) }
