// Command gateway is the front door for agents that speak HTTP or MCP: it
// binds each bearer token to one tenant, validates arguments against the
// tool's schema, produces the intent and waits for its answer
// (docs/gateway.md). It keeps no state; run as many as you like behind a
// load balancer. Its subcommands and flags: gateway --help (usage below).
package main

import "github.com/atmostonce/toolexec/cli"

// usage is what gateway --help prints above the flags, and what a refused
// argument points to.
const usage = `Usage:
  gateway --tools F --tenants F [flags]            run the gateway
  gateway hash-token TOKEN                         print the tenants-file form of a token
  gateway --version                                print the build

The executor runs a gateway of its own by default (executor --gateway).`

func main() {
	cli.Main("gateway", runMain, map[string]func([]string) error{"hash-token": hashTokenMain})
}
