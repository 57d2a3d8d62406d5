package eventlog

import (
	"bytes"
	"math"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/saga"
)

// reflective is the encoding the hand-written one must equal: the
// reflective codec's, which decides the bytes of every event.
func reflective(t testing.TB, ev *saga.Event) []byte {
	t.Helper()
	b, err := msgpack.Marshal(&envelope{V: Version, Event: *ev})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func checkEncodings(t testing.TB, ev *saga.Event) {
	t.Helper()
	got, err := encodeEvent(Version, ev)
	if err != nil {
		t.Fatal(err)
	}
	if want := reflective(t, ev); !bytes.Equal(got, want) {
		t.Fatalf("event %+v:\n hand-written %x\n reflective   %x", *ev, got, want)
	}
}

// TestEncodeMatchesReflectionForEveryField: each field alone and all of
// them at once, at the widths where msgpack changes form, encode to the
// reflective codec's bytes.
func TestEncodeMatchesReflectionForEveryField(t *testing.T) {
	long := string(bytes.Repeat([]byte{'x'}, 300))
	big := bytes.Repeat([]byte{7}, 70_000)
	base := func() saga.Event { return saga.Event{Kind: saga.EvOutcome, Tenant: "t", Key: "k", At: 1} }
	all := base()
	all.IntentID, all.Tool, all.ArgsHash, all.Args = "i", "tool", []byte{1}, []byte{2, 3}
	all.PendingTTL, all.RetentionMs, all.Attempt, all.RunID, all.ThreadID, all.DownstreamKey = 5, 6, 7, "r", "th", "dk"
	all.CallID, all.Status, all.Result, all.Err, all.By, all.Reason, all.Forced = "c", saga.StatusFailed, []byte{9}, &saga.Error{Code: "x", Message: "m"}, "b", "why", true
	all.Waiter, all.RoundFrom = &saga.Waiter{IntentID: "w", ReplyTo: "rt", Traceparent: "tp", Type: "call", At: 4}, 8
	all.ApprovalUntil, all.Approvers = 10, "alice, group:ops"
	cases := []func(*saga.Event){
		func(*saga.Event) {},
		func(e *saga.Event) { *e = all },
		func(e *saga.Event) { e.Tenant, e.Key = long, long },
		func(e *saga.Event) { e.At = math.MaxInt64 },
		func(e *saga.Event) { e.At = -1 },
		func(e *saga.Event) { e.Attempt = -40 },
		func(e *saga.Event) { e.Attempt = 1 << 40 },
		func(e *saga.Event) { e.Attempt = 200 },
		func(e *saga.Event) { e.Result = big },
		func(e *saga.Event) { e.Args = []byte{} }, // empty: omitted, like nil
		func(e *saga.Event) { e.Err = &saga.Error{} },
		func(e *saga.Event) { e.Waiter = &saga.Waiter{} },
		func(e *saga.Event) { e.Status = 255 },
		func(e *saga.Event) { e.Kind = saga.EvRound; e.Tenant, e.Key, e.RoundFrom = "", "", 1<<33 },
		func(e *saga.Event) {
			e.Snapshot = &saga.Record{Tenant: "t", Key: "k", Tool: "x", Waiters: []saga.Waiter{{IntentID: "a"}}}
		},
	}
	for _, c := range cases {
		ev := base()
		c(&ev)
		checkEncodings(t, &ev)
	}
}

// FuzzEncodeMatchesReflection: for any event (no snapshot: that one is
// written by reflection), the hand-written encoding is the reflective
// codec's, byte for byte, and decodes to the event.
func FuzzEncodeMatchesReflection(f *testing.F) {
	f.Add(uint8(1), "t", "k", int64(1), "i", "tool", []byte{1}, []byte{2}, int64(3), int64(4), 5, "c", uint8(2), []byte{6}, "code", "msg", "by", uint8(7), "w", "rt", int64(8))
	f.Add(uint8(14), "", "", int64(0), "", "", []byte(nil), []byte(nil), int64(0), int64(0), 0, "", uint8(0), []byte(nil), "", "", "", uint8(0), "", "", int64(0))
	f.Fuzz(func(t *testing.T, kind uint8, tenant, key string, at int64, intent, tool string, argsHash, args []byte, ttl, retention int64,
		attempt int, callID string, status uint8, result []byte, code, msg, by string, flags uint8, waiterID, replyTo string, waiterAt int64) {
		ev := saga.Event{Kind: saga.EventKind(kind), Tenant: tenant, Key: key, At: at, IntentID: intent, Tool: tool, ArgsHash: argsHash,
			Args: args, PendingTTL: ttl, RetentionMs: retention, Attempt: attempt, RunID: by, ThreadID: msg, DownstreamKey: code,
			CallID: callID, Status: saga.Status(status), Result: result, By: by, Reason: msg, Forced: flags&1 != 0, RoundFrom: waiterAt}
		if flags&2 != 0 {
			ev.Err = &saga.Error{Code: code, Message: msg}
		}
		if flags&4 != 0 {
			ev.Waiter = &saga.Waiter{IntentID: waiterID, ReplyTo: replyTo, Traceparent: msg, Type: tool, At: waiterAt}
		}
		checkEncodings(t, &ev)
		var back envelope
		b, _ := encodeEvent(Version, &ev)
		if err := msgpack.Unmarshal(b, &back); err != nil || back.V != Version {
			t.Fatalf("decode: %v (version %d)", err, back.V)
		}
	})
}

// BenchmarkEncodeEvent: the hand-written encoder on an event with every
// field set, the CPU figure a change to it must not worsen.
func BenchmarkEncodeEvent(b *testing.B) {
	ev := allFields()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodeEvent(Version, &ev); err != nil {
			b.Fatal(err)
		}
	}
}
