// Package gateway is the front door for agents that speak HTTP or MCP
// instead of producing to Kafka (docs/gateway.md). It binds each bearer
// token to exactly one tenant, validates arguments against the tool's
// input schema, produces an intent to the executor and waits for its
// answer on a reply topic of its own. It keeps no state: any number of
// instances serve the same tenants.
//
// # How a process runs it
//
//  1. Load the tenants (LoadTenants, or SingleTenant) into a TenantStore,
//     and the executor's tool specs (tools.Load).
//  2. New(ctx, Config{...}): it creates this instance's reply topic
//     (<prefix>gateway.<InstanceID>) when missing and connects. The
//     executor's topics must exist.
//  3. Serve Handler() (the API under /v1/ and MCP at /mcp) on an
//     http.Server whose write timeout, if any, exceeds MaxWait.
//  4. On SIGHUP call ReloadTenants (or use ReloadOnSignal): a file with an
//     error is refused whole and the tenants in force stay.
//  5. Close on shutdown, after the server stopped taking requests.
//     Requests still waiting get no answer; their clients retry with the
//     same key, which never runs a tool twice.
//
// Every Kafka client the gateway makes takes the same options (see
// Config.KafkaOpts): TLS and SASL settings apply to all of them.
package gateway
