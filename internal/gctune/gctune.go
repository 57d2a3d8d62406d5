// Package gctune sets the pace of the Go collector for the processes that
// decide intents (the executor, and the bench's members, which measure it
// as shipped), and every process's soft memory limit from its
// container's (ApplyMemoryLimit, memlimit.go).
//
// Why: the executor's heap is mostly short-lived per-tick garbage (decoded
// intents, events, answers, records), and its live heap is small (the
// records are in Pebble, whose block cache is outside the Go heap). With
// the default GOGC of 100 the collector ran often over that small live
// heap: marking and allocation assists were about a fifth of the
// executor's CPU under saturation. Doubling the heap target halves the
// collections for some tens of MB of RSS (docs/PERFORMANCE.md).
package gctune

import (
	"os"
	"runtime/debug"
	"strconv"
)

// Percent is the GOGC the executor runs with when the environment does not
// set one: a heap target of three times the live heap instead of two.
const Percent = 200

// Apply sets the collector's target to Percent unless GOGC is set in the
// environment (an operator's choice wins), and returns the GOGC in effect
// (-1: off).
func Apply() int {
	if v, ok := os.LookupEnv("GOGC"); ok {
		if v == "off" {
			return -1
		}
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
		return 100 // the runtime ignores a value it cannot parse
	}
	debug.SetGCPercent(Percent)
	return Percent
}
