// Command executor runs LLM-agent tool calls at most once per idempotency
// key. With no --brokers it starts an embedded Kafka-compatible broker
// (kfake) with its data under --data-dir, so a first run needs nothing.
//
//	executor [flags]                      run the executor
//	executor send --tool T --key K ...    send one intent and print its answer
//	executor history --key K ...          print a key's audit trail
package main

import (
	"fmt"
	"os"
)

func main() {
	var err error
	args := os.Args[1:]
	switch {
	case len(args) > 0 && args[0] == "send":
		err = sendMain(args[1:])
	case len(args) > 0 && args[0] == "history":
		err = historyMain(args[1:])
	default:
		err = runMain(args)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "executor:", err)
		os.Exit(1)
	}
}
