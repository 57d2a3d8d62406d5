package executor

import (
	"io"
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/topics"
)

func layoutMember(t *testing.T, partitions int32) *layoutGuard {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &layoutGuard{names: topics.NamesWithPrefix("tool."), log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		mismatch: newMetrics(nil).LayoutMismatch, partitions: partitions, pauser: cl}
}

// TestLayoutRefusalFollowsTheAssignment: an assignment that breaks the
// routing rule stops the member deciding, and the next assignment that
// keeps it lets it decide again: a member given intents partitions and no
// control partition right after a broker restart must not refuse for
// good, or its intents are never decided.
func TestLayoutRefusalFollowsTheAssignment(t *testing.T) {
	e := layoutMember(t, 4)
	n := e.names
	steps := []struct {
		parts   map[string][]int32
		refused bool
	}{
		{map[string][]int32{n.Intents: {0, 1}, n.Control: {1, 0}}, false},
		{map[string][]int32{n.Intents: {0, 1, 2, 3}}, true}, // control's metadata not loaded yet
		{map[string][]int32{n.Intents: {0, 1}, n.Control: {0, 1}}, false},
		{map[string][]int32{n.Intents: {2, 4}, n.Control: {2, 4}}, true}, // partitions were added
		{map[string][]int32{n.Intents: {2, 3}, n.Control: {2, 3}}, false},
	}
	for i, s := range steps {
		e.checkAssignment(s.parts)
		if got := e.layoutRefused.Load(); got != s.refused {
			t.Fatalf("step %d (%v): refused %v, want %v", i, s.parts, got, s.refused)
		}
		if paused := e.holdIfLayoutRefused(); paused != s.refused {
			t.Fatalf("step %d: held %v", i, paused)
		}
		if got := len(e.pauser.PauseFetchTopics()) > 0; got != s.refused {
			t.Fatalf("step %d: fetches paused %v, want %v", i, got, s.refused)
		}
	}
	// Topics refused at start stay refused, whatever the group assigns.
	e.layoutAtStart = "tool.intents has 6 partitions but keys are routed by the 4 recorded in tool.meta"
	e.checkAssignment(map[string][]int32{n.Intents: {0}, n.Control: {0}})
	if !e.layoutRefused.Load() {
		t.Fatal("a layout refused at start was accepted on an assignment")
	}
}
