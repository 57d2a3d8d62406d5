package eventlog

import (
	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/internal/mpwrite"
	"github.com/atmostonce/toolexec/saga"
)

// The event's msgpack, written field by field instead of by reflection
// (the reflective encoder, with its per-encode list of the
// omitempty fields, was an eighth of the member's CPU). The bytes are the
// reflective encoder's own, field for field and integer width for
// integer width (FuzzEncodeMatchesReflection): the log's format does not
// change, and either encoder can write an event the other's reader takes.
//
// The order and the names below are saga.Event's and envelope's, which
// the reflective encoder follows (internal/mpwrite). A snapshot event,
// which restates a whole record (rounds only), goes through reflection.

// encodeEvent writes the envelope of ev (version v) as msgpack.
func encodeEvent(v int, ev *saga.Event) ([]byte, error) {
	if ev.Snapshot != nil {
		return msgpack.Marshal(&envelope{V: v, Event: *ev})
	}
	w := mpwrite.Get()
	defer mpwrite.Put(w)
	writeEvent(w, v, ev)
	return w.Bytes()
}

// writeEvent writes the envelope: "v", then saga.Event's fields in order.
func writeEvent(w *mpwrite.Writer, v int, ev *saga.Event) {
	w.MapLen(5 + mpwrite.Count(ev.IntentID != "", ev.Tool != "", len(ev.ArgsHash) > 0, len(ev.Args) > 0, ev.PendingTTL != 0,
		ev.RetentionMs != 0, ev.Attempt != 0, ev.RunID != "", ev.ThreadID != "", ev.DownstreamKey != "", ev.CallID != "",
		ev.Status != 0, len(ev.Result) > 0, ev.Err != nil, ev.By != "", ev.Reason != "", ev.Forced, ev.Waiter != nil,
		ev.RoundFrom != 0))
	w.Int("v", v)
	w.Uint8("kind", uint8(ev.Kind))
	w.Str("tenant", ev.Tenant)
	w.Str("key", ev.Key)
	w.Int64("at", ev.At)
	w.OptStr("intent_id", ev.IntentID)
	w.OptStr("tool", ev.Tool)
	w.OptBytes("args_hash", ev.ArgsHash)
	w.OptBytes("args", ev.Args)
	w.OptInt64("pending_ttl_ms", ev.PendingTTL)
	w.OptInt64("retention_ms", ev.RetentionMs)
	if ev.Attempt != 0 {
		w.Int("attempt", ev.Attempt)
	}
	w.OptStr("run_id", ev.RunID)
	w.OptStr("thread_id", ev.ThreadID)
	w.OptStr("dk", ev.DownstreamKey)
	w.OptStr("call_id", ev.CallID)
	if ev.Status != 0 {
		w.Uint8("status", uint8(ev.Status))
	}
	w.OptBytes("result", ev.Result)
	if ev.Err != nil {
		w.Name("err")
		w.Error(ev.Err)
	}
	w.OptStr("by", ev.By)
	w.OptStr("reason", ev.Reason)
	if ev.Forced {
		w.True("forced")
	}
	if ev.Waiter != nil {
		w.Name("waiter")
		w.Waiter(ev.Waiter)
	}
	w.OptInt64("round_from", ev.RoundFrom)
}
