package state

import (
	"github.com/atmostonce/toolexec/internal/mpwrite"
	"github.com/atmostonce/toolexec/saga"
)

// The record's msgpack, written field by field instead of by reflection
// (after the events, the records were the member's largest
// reflective encode, an eighth of its CPU). The bytes are the reflective
// encoder's own (FuzzRecordEncodeMatchesReflection): the stored format
// does not change (decoder.go reads it back). The order and the names
// are saga.Record's and saga.Compensation's.

func writeRecord(w *mpwrite.Writer, r *saga.Record) {
	w.MapLen(11 + mpwrite.Count(len(r.Args) > 0, r.OriginAnswered, r.PrevStatus != 0, r.CompletedAt != 0, r.ExpiresAt != 0,
		len(r.Result) > 0, r.Err != nil, r.ResolvedBy != "", len(r.Waiters) > 0, r.Comp != nil, r.DownstreamKey != ""))
	w.Str("tenant", r.Tenant)
	w.Str("key", r.Key)
	w.Str("tool", r.Tool)
	w.BytesField("args_hash", r.ArgsHash) // not omitempty
	w.OptBytes("args", r.Args)
	w.Uint8("status", uint8(r.Status))
	w.Name("origin")
	w.Waiter(&r.Origin)
	if r.OriginAnswered {
		w.True("origin_answered")
	}
	w.Int("attempt", r.Attempt)
	if r.PrevStatus != 0 {
		w.Uint8("prev_status", uint8(r.PrevStatus))
	}
	w.Int64("called_at", r.CalledAt)
	w.Int64("pending_until", r.PendingUntil)
	w.Int64("retention_ms", r.RetentionMs)
	w.OptInt64("completed_at", r.CompletedAt)
	w.OptInt64("expires_at", r.ExpiresAt)
	w.OptBytes("result", r.Result)
	if r.Err != nil {
		w.Name("err")
		w.Error(r.Err)
	}
	w.OptStr("resolved_by", r.ResolvedBy)
	if len(r.Waiters) > 0 {
		w.Name("waiters")
		w.ArrayLen(len(r.Waiters))
		for i := range r.Waiters {
			w.Waiter(&r.Waiters[i])
		}
	}
	if r.Comp != nil {
		w.Name("comp")
		writeCompensation(w, r.Comp)
	}
	w.OptStr("dk", r.DownstreamKey)
	w.Int64("last_event_at", r.LastEventAt)
}

func writeCompensation(w *mpwrite.Writer, c *saga.Compensation) {
	w.MapLen(4 + mpwrite.Count(c.CompletedAt != 0, c.PendingUntil != 0, c.DownstreamKey != "", len(c.Result) > 0, c.Err != nil))
	w.Str("tool", c.Tool)
	w.Name("origin")
	w.Waiter(&c.Origin)
	w.Int64("started_at", c.StartedAt)
	w.OptInt64("completed_at", c.CompletedAt)
	w.Uint8("prev_status", uint8(c.PrevStatus))
	w.OptInt64("pending_until", c.PendingUntil)
	w.OptStr("dk", c.DownstreamKey)
	w.OptBytes("result", c.Result)
	if c.Err != nil {
		w.Name("err")
		w.Error(c.Err)
	}
}
