package executor

import (
	"context"
	"slices"
	"testing"

	"github.com/atmostonce/toolexec/topics"
)

// Every group callback tells Hooks.Ownership what it learned, after the
// change is queued for the loop, with the partitions of our topics only.
func TestCallbacksTellTheOwnershipHook(t *testing.T) {
	type told struct {
		assigned bool
		ps       []int32
	}
	var got []told
	names := topics.NamesWithPrefix("t.")
	c := &ownershipChanges{names: names, hooks: Hooks{Ownership: func(assigned bool, ps []int32) {
		got = append(got, told{assigned, slices.Sorted(slices.Values(ps))})
	}}}
	parts := map[string][]int32{names.Intents: {0, 2}, names.Control: {0, 2}, "other": {5}}
	c.onAssigned(context.Background(), nil, parts)
	c.onRevoked(context.Background(), nil, map[string][]int32{names.Intents: {2}, names.Control: {2}})
	c.onLost(context.Background(), nil, map[string][]int32{names.Intents: {0}})
	c.onRevoked(context.Background(), nil, map[string][]int32{"other": {5}}) // nothing of ours: not told
	want := []told{{true, []int32{0, 2}}, {false, []int32{2}}, {false, []int32{0}}}
	if len(got) != len(want) {
		t.Fatalf("told %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].assigned != want[i].assigned || !slices.Equal(got[i].ps, want[i].ps) {
			t.Fatalf("told %+v, want %+v", got, want)
		}
	}
	if n := len(c.take()); n != 4 {
		t.Fatalf("%d changes queued for the loop, want 4 (the hook does not replace the queue)", n)
	}
}
