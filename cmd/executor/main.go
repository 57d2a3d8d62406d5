// Command executor runs LLM-agent tool calls at most once per idempotency
// key. With no --brokers it starts an embedded Kafka-compatible broker
// (kfake) with its data under --data-dir, so a first run needs nothing.
//
//	executor [flags]                      run the executor
//	executor send --tool T --key K ...    send one intent and print its answer
//	executor history --key K ...          print a key's audit trail
//	executor topics [--kafka-config F]     create and check the topics, then exit
package main

import "github.com/atmostonce/toolexec/internal/cli"

func main() {
	cli.Main("executor", runMain, map[string]func([]string) error{"send": sendMain, "history": historyMain, "topics": topicsMain})
}
