// Command executor runs LLM-agent tool calls at most once per idempotency
// key. With no --brokers it starts an embedded Kafka-compatible broker
// (kfake) with its data under --data-dir, so a first run needs nothing.
// Its subcommands and flags: executor --help (usage below).
package main

import "github.com/atmostonce/toolexec/cli"

// usage is what executor --help prints above the flags, and what a refused
// argument points to.
const usage = `Usage:
  executor [flags]                                 run the executor (no --brokers: an embedded broker,
                                                   the demo tools, the gateway and the reconciler)
  executor send --tool T --key K [--args JSON]     send one intent and print its answer (send --help:
                                                   its exit status per answer)
  executor history --key K                         print a key's audit trail
  executor topics [--kafka-config F]               create and check the topics, then exit
  executor --version                               print the build

Keys in doubt are listed and settled with the reconciler: reconciler pending, reconciler resolve.`

func main() {
	cli.Main("executor", runMain, map[string]func([]string) error{"send": sendMain, "history": historyMain, "topics": topicsMain})
}
