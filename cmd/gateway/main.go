// Command gateway is the front door for agents that speak HTTP or MCP: it
// binds each bearer token to one tenant, validates arguments against the
// tool's schema, produces the intent and waits for its answer
// (docs/gateway.md). It keeps no state; run as many as you like behind a
// load balancer.
//
//	gateway --tools tools.yaml --tenants tenants.yaml [flags]
//	gateway hash-token TOKEN     print the tenants-file form of a token
package main

import "github.com/atmostonce/toolexec/internal/cli"

func main() {
	cli.Main("gateway", runMain, map[string]func([]string) error{"hash-token": hashTokenMain})
}
