package state

import (
	"bytes"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/internal/msgpack/mpwrite"
	"github.com/atmostonce/toolexec/saga"
)

// marshalRecord encodes r as a copy of its own, as the tests want it
// (Batch.Put hands pebble the writer's bytes without the copy).
func marshalRecord(r *saga.Record) ([]byte, error) {
	w := mpwrite.Get()
	defer mpwrite.Put(w)
	if err := writeRecord(w, r); err != nil {
		return nil, err
	}
	return w.Bytes()
}

func checkRecordEncodings(t testing.TB, r *saga.Record) {
	t.Helper()
	got, err := marshalRecord(r)
	if err != nil {
		t.Fatal(err)
	}
	want, err := msgpack.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("record %+v:\n hand-written %x\n reflective   %x", *r, got, want)
	}
}

// TestRecordEncodeMatchesReflectionForEveryField: a bare record, one with
// every field set, and the forms where msgpack changes width, encode to
// the reflective codec's bytes.
func TestRecordEncodeMatchesReflectionForEveryField(t *testing.T) {
	full := &saga.Record{Tenant: "t", Key: "k", Tool: "x", ArgsHash: []byte{1}, Args: []byte{2}, Status: saga.StatusCompensating,
		Origin: saga.Waiter{IntentID: "o", ReplyTo: "r", Traceparent: "tp", Type: "call", At: 3}, OriginAnswered: true, Attempt: 300,
		PrevStatus: saga.StatusNotExecuted, CalledAt: 4, PendingUntil: 5, RetentionMs: 6, CompletedAt: 7, ExpiresAt: 8, Result: []byte{9},
		Err: &saga.Error{Code: "c", Message: "m"}, ResolvedBy: "ops", Waiters: []saga.Waiter{{IntentID: "a"}, {IntentID: "b", At: -1}},
		Comp: &saga.Compensation{Tool: "undo", Origin: saga.Waiter{IntentID: "u"}, StartedAt: 10, CompletedAt: 11, PrevStatus: saga.StatusSucceeded,
			PendingUntil: 12, DownstreamKey: "d", Result: []byte{13}, Err: &saga.Error{Code: "e"}}, DownstreamKey: "dk", LastEventAt: 1 << 62,
		Approval: &saga.Approval{RequestedAt: 14, Until: 15, Approvers: "a, group:b", Decision: saga.ApprovalDenied, DecidedAt: 16, By: "op", Reason: "no", CommandID: "c"}}
	for _, r := range []*saga.Record{
		{}, {Tenant: "t", Key: "k", Tool: "x", ArgsHash: []byte{}}, full,
		{Waiters: []saga.Waiter{}, Comp: &saga.Compensation{}, Attempt: -5, Result: bytes.Repeat([]byte{1}, 70_000)},
	} {
		checkRecordEncodings(t, r)
	}
}

// FuzzRecordEncodeMatchesReflection: for any record, the hand-written
// encoding is the reflective codec's, byte for byte.
func FuzzRecordEncodeMatchesReflection(f *testing.F) {
	f.Add("t", "k", []byte{1}, []byte{2}, uint8(3), "o", int64(4), 5, []byte{6}, "c", uint8(7), 2, "w")
	f.Add("", "", []byte(nil), []byte(nil), uint8(0), "", int64(0), 0, []byte(nil), "", uint8(0), 0, "")
	f.Fuzz(func(t *testing.T, tenant, key string, hash, args []byte, status uint8, origin string, at int64, attempt int,
		result []byte, code string, flags uint8, waiters int, s string) {
		r := &saga.Record{Tenant: tenant, Key: key, Tool: s, ArgsHash: hash, Args: args, Status: saga.Status(status),
			Origin: saga.Waiter{IntentID: origin, ReplyTo: s, At: at}, OriginAnswered: flags&1 != 0, Attempt: attempt,
			PrevStatus: saga.Status(status / 2), CalledAt: at, PendingUntil: at / 2, RetentionMs: -at, CompletedAt: at / 3,
			ExpiresAt: at / 5, Result: result, ResolvedBy: code, DownstreamKey: s, LastEventAt: at}
		if flags&2 != 0 {
			r.Err = &saga.Error{Code: code, Message: s}
		}
		if flags&4 != 0 {
			r.Comp = &saga.Compensation{Tool: s, Origin: saga.Waiter{IntentID: code, Type: s}, StartedAt: at, PrevStatus: saga.Status(status),
				PendingUntil: at / 7, DownstreamKey: code, Result: result}
			if flags&8 != 0 {
				r.Comp.Err = &saga.Error{Code: s}
			}
		}
		for i := range waiters % 8 {
			r.Waiters = append(r.Waiters, saga.Waiter{IntentID: s, Traceparent: code, At: at + int64(i)})
		}
		checkRecordEncodings(t, r)
	})
}
