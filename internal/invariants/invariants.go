// Package invariants makes impossible states panic in tests and CI, and
// costs nothing in a production build, in the manner of Pebble's
// internal/invariants.
//
// Build with -tags invariants (CI's go test does; -race turns the checks
// on too) to enable them. Checks guard states the code is built never to
// reach: a negative count, a call started twice for one key, an event the
// fold ignores in the overlay that emitted it. Without the tag such a
// state is logged or clamped where the code must go on; with it the test
// stops at the first one, with the message.
package invariants

import "fmt"

// Check panics with the formatted message when cond is false and the
// checks are enabled. Keep the condition cheap, or guard an expensive
// one with Enabled.
func Check(cond bool, format string, args ...any) {
	if Enabled && !cond {
		panic("invariant violated: " + fmt.Sprintf(format, args...))
	}
}
