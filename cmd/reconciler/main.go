// Command reconciler settles keys left in doubt past their tool's
// pending_ttl, by the tool's class: a retry with the same downstream key,
// a probe, a compensation, or an escalation to an operator. It never
// writes state: it sends resolve and compensate commands on the control
// topic. See package reconciler and docs/DESIGN.md. Its subcommands and
// flags: reconciler --help (usage below).
package main

import "github.com/atmostonce/toolexec/cli"

// usage is what reconciler --help prints above the flags, and what a
// refused argument points to.
const usage = `Usage:
  reconciler --tools F [flags]                     run the reconciler
  reconciler pending [--json]                      list the keys in doubt
  reconciler resolve --key K --outcome O [flags]   settle a key by hand
  reconciler approve --key K --reason TEXT [flags] approve a call awaiting approval
  reconciler deny --key K --reason TEXT [flags]    deny it
  reconciler --version                             print the build

The executor runs a reconciler of its own by default (executor --reconciler).`

func main() {
	cli.Main("reconciler", runMain, map[string]func([]string) error{"pending": pendingMain, "resolve": resolveMain,
		"approve": approveMain, "deny": denyMain})
}
