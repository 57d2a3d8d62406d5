//go:build !faults

package main

import (
	"log/slog"

	"github.com/atmostonce/toolexec/executor"
)

// hooksFromEnv is empty in normal builds: fault injection is compiled in
// only with -tags faults (tests and the chaos harness).
func hooksFromEnv(*slog.Logger) executor.Hooks { return executor.Hooks{} }
