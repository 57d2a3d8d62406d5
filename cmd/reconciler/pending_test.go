package main

import (
	"strings"
	"testing"
	"time"

	"github.com/atmostonce/toolexec/reconciler"
)

// The reason says what an operator must do: the table prints it whole.
func TestPendingTablePrintsTheWholeReason(t *testing.T) {
	reason := `tool "demo.lost_reply" is irreversible and cannot be asked: an operator must find out whether the call happened and settle the key (reconciler resolve)`
	var b strings.Builder
	printRows(&b, []reconciler.Row{{Tool: "demo.lost_reply", Reason: reason}}, time.Now())
	if !strings.Contains(b.String(), reason) {
		t.Fatalf("the reason was cut:\n%s", b.String())
	}
}
