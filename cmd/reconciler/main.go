// Command reconciler settles keys left in doubt past their tool's
// pending_ttl, by the tool's class: a retry with the same downstream key,
// a probe, a compensation, or an escalation to an operator. It never
// writes state: it sends resolve and compensate commands on the control
// topic. See package reconciler and docs/DESIGN.md.
//
//	reconciler [flags]                                 run the reconciler
//	reconciler pending [--json]                        list the keys in doubt
//	reconciler resolve --key K --outcome O [flags]     settle a key by hand
package main

import (
	"fmt"
	"os"
)

func main() {
	var err error
	args := os.Args[1:]
	switch {
	case len(args) > 0 && args[0] == "pending":
		err = pendingMain(args[1:])
	case len(args) > 0 && args[0] == "resolve":
		err = resolveMain(args[1:])
	default:
		err = runMain(args)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "reconciler:", err)
		os.Exit(1)
	}
}
