package main

import (
	"testing"
	"time"

	"github.com/atmostonce/toolexec/wire"
)

func TestPhaseMaxGapFindsTheLongestWindowWithoutAnAnswer(t *testing.T) {
	ph := newPhase("g", time.Second, 4*time.Second) // window [1s, 5s)
	ok := &wire.Result{Status: "succeeded"}
	for i, at := range []time.Duration{500 * time.Millisecond, 1500 * time.Millisecond, 2 * time.Second, 3200 * time.Millisecond} {
		ph.sent(i, 0)
		ph.answer(i, ph.base.Add(at), ok)
	}
	if g := ph.result().MaxGap; g != 1800*time.Millisecond {
		t.Fatalf("max gap %v, want 1.8s (3.2s to the window's end at 5s)", g)
	}
	ph.sent(4, 0)
	ph.answer(4, ph.base.Add(4900*time.Millisecond), ok)
	if g := ph.result().MaxGap; g != 1700*time.Millisecond {
		t.Fatalf("max gap %v, want 1.7s (3.2s to 4.9s)", g)
	}
}
