package partition

import (
	"fmt"
	"testing"
)

// TestPoisonedIsBounded: the origins remembered are bounded, the oldest
// forgotten first.
func TestPoisonedIsBounded(t *testing.T) {
	p := newPoisoned()
	for i := 0; i < MaxPoisoned+10; i++ {
		p.mark(CallOrigin("k", fmt.Sprint(i))).isolate++
	}
	if len(p.m) != MaxPoisoned || len(p.order) != MaxPoisoned {
		t.Fatalf("remembered %d (%d in order), want %d", len(p.m), len(p.order), MaxPoisoned)
	}
	if p.isolated(CallOrigin("k", "0")) != 0 || p.isolated(CallOrigin("k", fmt.Sprint(MaxPoisoned+9))) != 1 {
		t.Fatal("not the oldest forgotten first")
	}
}
