package reconciler

import (
	"context"
	"fmt"
	"testing"

	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/tools"
)

// TestReconcilerScanListsKeysAwaitingApproval: the fold keeps the keys
// awaiting approval in the view's approval index; a scan counts them per
// tool with the oldest's age, lists them with their arguments as the
// tool will receive them, and forgets a key once its request is decided.
func TestReconcilerScanListsKeysAwaitingApproval(t *testing.T) {
	reg := tools.NewRegistry()
	r := scanReconciler(t, reg, 10)
	request := func(key string, at int64) saga.Event {
		w := &saga.Waiter{IntentID: "i-" + key, Type: "call", At: at}
		return saga.Event{Kind: saga.EvAwaitingApproval, Tenant: "acme", Key: key, At: at, IntentID: w.IntentID, Tool: "pay",
			ArgsHash: []byte{0xab}, Args: []byte{0x81, 0xa1, 'n', 0x07}, RetentionMs: 1 << 30, Attempt: 1, Waiter: w,
			ApprovalUntil: at + 1<<30, Approvers: "group:payments"}
	}
	off := r.owned[0].next
	viewFold(t, r, viewRecord(t, off, request("k1", 400_000)), viewRecord(t, off+1, request("k2", 900_000)))
	if err := r.scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows := r.Approvals()
	if len(rows) != 2 || rows[0].Key != "k1" || rows[0].CallID != "i-k1" || rows[0].ArgsDigest != "ab" ||
		fmt.Sprint(rows[0].Args) != "map[n:7]" || rows[0].Approvers != "group:payments" || rows[1].Key != "k2" {
		t.Fatalf("rows %+v", rows)
	}
	if n, age := gaugeValue(t, r.m.approvals.waiting.WithLabelValues("pay")), gaugeValue(t, r.m.approvals.oldest.WithLabelValues("pay")); n != 2 || age != 600 {
		t.Fatalf("gauges: %v waiting, oldest %v s; want 2 and 600 (now 1,000,000 ms, the oldest asked at 400,000)", n, age)
	}
	denied := saga.Event{Kind: saga.EvDenied, Tenant: "acme", Key: "k1", At: 950_000, IntentID: "op-1", CallID: "i-k1", ArgsHash: []byte{0xab}, By: "bob", Reason: "no"}
	viewFold(t, r, viewRecord(t, off+2, denied))
	if err := r.scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rows := r.Approvals(); len(rows) != 1 || rows[0].Key != "k2" {
		t.Fatalf("after k1's deny: %+v", rows)
	}
	if age := gaugeValue(t, r.m.approvals.oldest.WithLabelValues("pay")); age != 100 {
		t.Fatalf("oldest %v s after k1's deny, want 100", age)
	}
}
