package gctune

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
)

// MemoryLimitEnv names the environment variable that carries the
// container's memory limit in bytes (on Kubernetes, a resourceFieldRef to
// limits.memory, as deploy/k8s sets it).
const MemoryLimitEnv = "TOOLEXEC_MEMORY_LIMIT"

// MemoryLimitShare is the part of the container's limit given to the Go
// runtime as its soft memory limit.
//
// Why not all of it: the soft limit counts the Go runtime's memory only;
// goroutine stacks beyond it, the kernel's accounting of the page cache
// the process dirties (Pebble's and the embedded broker's writes) and
// the runtime's own overshoot while it reacts all fall on the same
// cgroup limit. A soft limit equal to the hard one makes the collector
// work hardest exactly when the OOM killer is one allocation away; a
// tenth below leaves that margin.
const MemoryLimitShare = 0.9

// ApplyMemoryLimit sets the Go runtime's soft memory limit to
// MemoryLimitShare of the limit in MemoryLimitEnv, unless GOMEMLIMIT is
// set (an operator's choice wins) or MemoryLimitEnv is not. It returns
// the limit it set (0: none), and an error when MemoryLimitEnv is not a
// positive number of bytes.
func ApplyMemoryLimit() (int64, error) {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return 0, nil
	}
	v, ok := os.LookupEnv(MemoryLimitEnv)
	if !ok || v == "" {
		return 0, nil
	}
	limit, err := strconv.ParseInt(v, 10, 64)
	if err != nil || limit <= 0 {
		return 0, fmt.Errorf("%s=%q: want the container's memory limit in bytes", MemoryLimitEnv, v)
	}
	soft := int64(float64(limit) * MemoryLimitShare)
	debug.SetMemoryLimit(soft)
	return soft, nil
}
