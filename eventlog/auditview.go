package eventlog

import (
	"encoding/hex"
	"time"

	"github.com/atmostonce/toolexec/internal/msgpack/mpread"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/wire/jsonview"
)

// AuditView is an event as people read it (`executor history`, the
// operator console's timeline): its kind, time (RFC 3339, UTC), the
// fields the kind uses, the result as JSON. Arguments are left out, and
// their hash too but in the events of a request for approval, which is
// bound to it (args_digest).
func AuditView(ev *saga.Event) map[string]any {
	m := map[string]any{"at": time.UnixMilli(ev.At).UTC().Format(time.RFC3339Nano), "event": ev.Kind.String(), "tenant": ev.Tenant, "key": ev.Key}
	put := func(k string, v any, ok bool) {
		if ok {
			m[k] = v
		}
	}
	put("intent_id", ev.IntentID, ev.IntentID != "")
	put("tool", ev.Tool, ev.Tool != "")
	put("call_id", ev.CallID, ev.CallID != "")
	put("status", ev.Status.String(), ev.Status != saga.StatusNone)
	put("attempt", ev.Attempt, ev.Attempt != 0)
	put("error", ev.Err, ev.Err != nil)
	put("downstream_key", ev.DownstreamKey, ev.DownstreamKey != "")
	put("by", ev.By, ev.By != "")
	put("forced", true, ev.Forced)
	put("reason", ev.Reason, ev.Reason != "")
	put("run_id", ev.RunID, ev.RunID != "")
	put("reply_to", waiterReply(ev), waiterReply(ev) != "")
	putApproval(ev, put)
	if len(ev.Result) > 0 {
		var v any
		if mpread.Unmarshal(ev.Result, &v) == nil {
			m["result"] = jsonview.Value(v)
		}
	}
	return m
}

// putApproval adds what a request for approval is for, who was asked and
// until when.
func putApproval(ev *saga.Event, put func(string, any, bool)) {
	switch ev.Kind {
	case saga.EvAwaitingApproval, saga.EvApproved, saga.EvDenied:
		put("args_digest", hex.EncodeToString(ev.ArgsHash), len(ev.ArgsHash) > 0)
	}
	put("approvers", ev.Approvers, ev.Approvers != "")
	put("approval_until", time.UnixMilli(ev.ApprovalUntil).UTC().Format(time.RFC3339), ev.ApprovalUntil > 0)
}

func waiterReply(ev *saga.Event) string {
	if ev.Waiter == nil {
		return ""
	}
	return ev.Waiter.ReplyTo
}
