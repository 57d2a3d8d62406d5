// Command reconciler will settle keys left in doubt past their tool's
// pending TTL (see ../shared/brief/ARCHITECTURE.md, "Reconciler").
//
// STUB: this is not built yet; it is the subject of its own issue. Until it
// lands, keys in doubt are listed by the executor's keys_in_doubt metric and
// settled by hand with a resolve command on the control topic.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "reconciler: not implemented yet (stub); keys in doubt must be resolved by hand for now")
	os.Exit(2)
}
