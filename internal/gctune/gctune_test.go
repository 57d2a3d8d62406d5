package gctune

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestApplyKeepsTheOperatorsGOGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)

	t.Setenv("GOGC", "150")
	if got := Apply(); got != 150 {
		t.Errorf("GOGC=150: Apply reports %d", got)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=150 in the environment, yet Apply changed the target to %d", got)
	}
}

func TestApplySetsPercentWithoutGOGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	t.Setenv("GOGC", "")
	// t.Setenv cannot unset; an empty GOGC is still "set". Test the unset
	// path by clearing it for the call.
	unsetGOGC(t)
	if got := Apply(); got != Percent {
		t.Errorf("without GOGC: Apply reports %d, want %d", got, Percent)
	}
	if got := debug.SetGCPercent(100); got != Percent {
		t.Errorf("without GOGC: the runtime's target is %d, want %d", got, Percent)
	}
}

func unsetGOGC(t *testing.T) {
	t.Helper()
	if err := os.Unsetenv("GOGC"); err != nil {
		t.Fatal(err)
	}
}
