package state

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/internal/msgpack/mpread"
	"github.com/atmostonce/toolexec/saga"
)

// checkRecordDecode: where the hand-written decoder reads b, the
// reflective decoder reads it too, to an equal record. It reports whether
// the hand-written one read it.
func checkRecordDecode(t testing.TB, b []byte) bool {
	t.Helper()
	var got saga.Record
	if !readRecord(b, &got) {
		return false
	}
	var want saga.Record
	if err := msgpack.Unmarshal(b, &want); err != nil {
		t.Fatalf("%x: hand-written decoder read %+v, reflective failed: %v", b, got, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%x:\n hand-written %+v\n reflective   %+v", b, got, want)
	}
	return true
}

func fullRecord() *saga.Record {
	return &saga.Record{Tenant: "t", Key: "k", Tool: "x", ArgsHash: []byte{1}, Args: []byte{2}, Status: saga.StatusCompensating,
		Origin: saga.Waiter{IntentID: "o", ReplyTo: "r", Traceparent: "tp", Type: "call", At: 3}, OriginAnswered: true, Attempt: 300,
		PrevStatus: saga.StatusNotExecuted, CalledAt: 4, PendingUntil: 5, RetentionMs: 6, CompletedAt: 7, ExpiresAt: 8, Result: []byte{9},
		Err: &saga.Error{Code: "c", Message: "m"}, ResolvedBy: "ops", Waiters: []saga.Waiter{{IntentID: "a"}, {IntentID: "b", At: -1}},
		Comp: &saga.Compensation{Tool: "undo", Origin: saga.Waiter{IntentID: "u"}, StartedAt: 10, CompletedAt: 11, PrevStatus: saga.StatusSucceeded,
			PendingUntil: 12, DownstreamKey: "d", Result: []byte{13}, Err: &saga.Error{Code: "e"}}, DownstreamKey: "dk", LastEventAt: 1 << 62,
		Approval: &saga.Approval{RequestedAt: 14, Until: 15, Approvers: "a, group:b", Decision: saga.ApprovalDenied, DecidedAt: 16, By: "op", Reason: "no", CommandID: "c"}}
}

// TestRecordDecodeMatchesReflectionForEveryField: records as
// writeRecord writes them (every field set, bare, empty slices, widths)
// and as reflection writes them are read by hand to the reflective
// decoder's values, and round-trip.
func TestRecordDecodeMatchesReflectionForEveryField(t *testing.T) {
	for _, r := range []*saga.Record{
		fullRecord(), {}, {Tenant: "t", Key: "k", Tool: "x", ArgsHash: []byte{}},
		{Waiters: []saga.Waiter{}, Comp: &saga.Compensation{}, Attempt: -5, Result: bytes.Repeat([]byte{1}, 70_000)},
	} {
		b, err := marshalRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		if !checkRecordDecode(t, b) {
			t.Fatalf("%+v: left to reflection", r)
		}
		var back saga.Record
		if err := unmarshalRecord(b, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fuzzNormRecord(back), fuzzNormRecord(*r)) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", back, *r)
		}
	}
	// Forms a record's writer never writes, read as reflection reads them.
	for _, m := range []map[string]any{
		{"tenant": nil, "args": nil, "err": nil, "comp": nil, "waiters": nil, "status": nil, "attempt": nil, "unknown": []any{1}},
		{"waiters": []any{}, "args": "str", "status": 3, "attempt": uint64(1 << 63), "comp": map[string]any{"x": 1}, "err": map[string]any{}},
	} {
		b, err := msgpack.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if !checkRecordDecode(t, b) {
			t.Fatalf("%v: left to reflection", m)
		}
	}
}

// TestRecordDecodeLeavesOddFormsToReflection: a repeated field, a status
// that would wrap, a struct given as an array and an ext are decoded
// reflectively, with the reflective result or error.
func TestRecordDecodeLeavesOddFormsToReflection(t *testing.T) {
	for name, b := range map[string][]byte{
		"repeated field":  {0x82, 0xa3, 'k', 'e', 'y', 0xa1, 'a', 0xa3, 'k', 'e', 'y', 0xa1, 'b'},
		"wide status":     {0x81, 0xa6, 's', 't', 'a', 't', 'u', 's', 0xcd, 0x01, 0x00},
		"origin as array": {0x81, 0xa6, 'o', 'r', 'i', 'g', 'i', 'n', 0x95, 0xa1, 'i', 0xc0, 0xc0, 0xc0, 0x00},
		"ext":             {0x81, 0xa3, 'k', 'e', 'y', 0xd4, 0x01, 0x00},
		"array":           {0x91, 0xc0},
	} {
		if checkRecordDecode(t, b) {
			t.Errorf("%s: read by hand", name)
		}
		var fast, slow saga.Record
		ferr := unmarshalRecord(b, &fast)
		serr := msgpack.Unmarshal(b, &slow)
		if (ferr == nil) != (serr == nil) || !reflect.DeepEqual(fast, slow) {
			t.Errorf("%s: unmarshalRecord %+v, %v; reflection %+v, %v", name, fast, ferr, slow, serr)
		}
	}
}

// FuzzRecordDecodeMatchesReflection: for any bytes, the hand-written
// decoder either leaves them to reflection or reads the reflective
// decoder's record; a record it encodes itself is always read by hand.
func FuzzRecordDecodeMatchesReflection(f *testing.F) {
	b, err := marshalRecord(fullRecord())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b, "t", uint8(1))
	f.Add([]byte{0x81, 0xa3, 'k', 'e', 'y', 0xa1, 'a'}, "", uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, s string, flags uint8) {
		r := mpread.New(b)
		if r.Skip() { // declared lengths fit: reflection would not preallocate past the input
			checkRecordDecode(t, b)
		}
		rec := fullRecord()
		rec.Tenant, rec.Origin.Type, rec.Result = s, s, b
		if flags&1 != 0 {
			rec.Comp, rec.Err = nil, nil
		}
		if flags&2 != 0 {
			rec.Waiters = append(rec.Waiters, saga.Waiter{IntentID: s, At: int64(flags)})
		}
		rec.Status = saga.Status(flags)
		enc, err := marshalRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		if !checkRecordDecode(t, enc) {
			t.Fatalf("%+v: its own encoding left to reflection", rec)
		}
	})
}
