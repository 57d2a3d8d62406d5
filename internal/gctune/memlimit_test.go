package gctune

import (
	"math"
	"os"
	"runtime/debug"
	"testing"
)

// The soft limit is nine tenths of the container's, set from the
// variable the manifests fill from limits.memory.
func TestApplyMemoryLimitTakesNineTenths(t *testing.T) {
	prev := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(prev)
	unsetGOMEMLIMIT(t)
	t.Setenv(MemoryLimitEnv, "2147483648") // 2Gi, as a resourceFieldRef writes it
	got, err := ApplyMemoryLimit()
	if err != nil || got != 1932735283 {
		t.Fatalf("ApplyMemoryLimit() = %d, %v; want 1932735283 (90%% of 2Gi)", got, err)
	}
	if now := debug.SetMemoryLimit(-1); now != got {
		t.Errorf("the runtime's soft limit is %d, want %d", now, got)
	}
}

// GOMEMLIMIT set by the operator wins; without either variable nothing
// changes; a limit that is not a number is an error, not a silent default.
func TestApplyMemoryLimitLeavesTheOperatorsChoice(t *testing.T) {
	prev := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(prev)
	t.Setenv("GOMEMLIMIT", "100MiB")
	t.Setenv(MemoryLimitEnv, "2147483648")
	if got, err := ApplyMemoryLimit(); got != 0 || err != nil || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set: %d, %v; the runtime's limit must stay the operator's", got, err)
	}
	unsetGOMEMLIMIT(t)
	t.Setenv(MemoryLimitEnv, "")
	if got, err := ApplyMemoryLimit(); got != 0 || err != nil {
		t.Errorf("without a limit: %d, %v", got, err)
	}
	t.Setenv(MemoryLimitEnv, "2Gi")
	if _, err := ApplyMemoryLimit(); err == nil {
		t.Error("2Gi (not bytes) was accepted")
	}
}

func unsetGOMEMLIMIT(t *testing.T) {
	t.Helper()
	t.Setenv("GOMEMLIMIT", "") // restores it after the test
	if err := os.Unsetenv("GOMEMLIMIT"); err != nil {
		t.Fatal(err)
	}
}
