package executor

import (
	"fmt"
	"strings"
	"testing"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/topics"
	"github.com/atmostonce/toolexec/wire"
)

// TestLargestRecordFitsOneSnapshot: a key's record at every bound at once
// (arguments at the largest max_args_bytes, a result and a compensation
// result at the stored-result bound, the most waiters, every copied field
// at its bound, a decided request for approval) still fits one snapshot event the broker accepts. If a
// bound grows, this fails before a round silently skips such keys.
func TestLargestRecordFitsOneSnapshot(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	w := saga.Waiter{IntentID: long(wire.MaxIDBytes), ReplyTo: long(wire.MaxReplyToBytes),
		Traceparent: long(wire.MaxTraceparentBytes), Type: "compensate", At: 1 << 62}
	rec := &saga.Record{Tenant: long(64), Key: long(wire.MaxKeyBytes), Tool: long(wire.MaxToolBytes),
		ArgsHash: make([]byte, 32), Args: make([]byte, wire.MaxArgsLimit), Status: saga.StatusCompensated,
		Origin: w, Attempt: 1 << 30, CalledAt: 1 << 62, PendingUntil: 1 << 62, RetentionMs: 1 << 62, CompletedAt: 1 << 62,
		ExpiresAt: 1 << 62, Result: make([]byte, wire.MaxResultBytes), Err: &saga.Error{Code: long(64), Message: long(wire.MaxByBytes + wire.MaxReasonBytes + 32)},
		ResolvedBy: long(wire.MaxByBytes), DownstreamKey: long(44), LastEventAt: 1 << 62,
		Approval: &saga.Approval{RequestedAt: 1 << 62, Until: 1 << 62, Approvers: long(wire.MaxApproversBytes), Decision: saga.ApprovalDenied,
			DecidedAt: 1 << 62, By: long(wire.MaxByBytes), Reason: long(wire.MaxReasonBytes), CommandID: long(wire.MaxIDBytes)},
		Comp: &saga.Compensation{Tool: long(wire.MaxToolBytes), Origin: w, StartedAt: 1 << 62, CompletedAt: 1 << 62,
			PendingUntil: 1 << 62, DownstreamKey: long(44), Result: make([]byte, wire.MaxResultBytes), Err: &saga.Error{Code: long(64), Message: long(1024)}}}
	for i := 0; i < wire.MaxWaitersLimit; i++ {
		rec.Waiters = append(rec.Waiters, w)
	}
	ev := saga.Snapshot(rec, 1<<62)
	b, err := eventlog.Encode(&ev)
	if err != nil {
		t.Fatal(err)
	}
	r := eventlog.EncodeRecord(topics.NamesWithPrefix("tool."), 0, b, rec.Tenant, rec.Key, "")
	if n := recordSize(r); n > maxRecordBytes {
		t.Fatalf("the largest record's snapshot is %d bytes, over the %d a record may have", n, maxRecordBytes)
	}
	// The record above holds arguments of wire.MaxArgsLimit bytes: the
	// tools' configuration must refuse any larger max_args_bytes.
	for _, c := range []struct {
		bytes int
		ok    bool
	}{{wire.MaxArgsLimit, true}, {wire.MaxArgsLimit + 1, false}} {
		_, err := tools.Parse(fmt.Appendf(nil, "tools:\n  - name: a\n    class: read_only\n    max_args_bytes: %d\n", c.bytes))
		if (err == nil) != c.ok {
			t.Fatalf("tools accept max_args_bytes %d: %v, want %v (the largest record fits one snapshot only up to wire.MaxArgsLimit, %d): %v",
				c.bytes, err == nil, c.ok, wire.MaxArgsLimit, err)
		}
	}
}
