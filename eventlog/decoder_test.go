package eventlog

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/internal/msgpack/mpread"
	"github.com/atmostonce/toolexec/saga"
)

// sameAsReflection decodes b by hand and by reflection (the reference)
// and fails t unless the hand-written decoder either declines b or
// returns what reflection returns, nil and empty alike. It reports
// whether the hand-written decoder took b.
func sameAsReflection(t testing.TB, b []byte) bool {
	t.Helper()
	fast, ok := decodeEnvelope(b)
	ref, err := decodeByReflection(b)
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("%x: the hand-written decoder took what reflection refuses (%v): %+v", b, err, *fast)
	}
	if !reflect.DeepEqual(fast, ref) {
		t.Fatalf("%x:\n hand-written %#v\n reflective   %#v", b, *fast, *ref)
	}
	return true
}

// allFields is an event with every field set (a snapshot aside).
func allFields() saga.Event {
	return saga.Event{Kind: saga.EvOutcome, Tenant: "t", Key: "k", At: 1, IntentID: "i", Tool: "tool",
		ArgsHash: []byte{1}, Args: []byte{2, 3}, PendingTTL: 5, RetentionMs: 6, Attempt: 7, RunID: "r",
		ThreadID: "th", DownstreamKey: "dk", CallID: "c", Status: saga.StatusFailed, Result: []byte{9},
		Err: &saga.Error{Code: "x", Message: "m"}, By: "b", Reason: "why", Forced: true,
		Waiter: &saga.Waiter{IntentID: "w", ReplyTo: "rt", Traceparent: "tp", Type: "call", At: 4}, RoundFrom: 8,
		ApprovalUntil: 10, Approvers: "alice, group:ops"}
}

// TestDecodeMatchesReflectionForEveryField: the encoder's bytes of each
// field alone, all of them, and the widths where msgpack changes form,
// are taken by the hand-written decoder and decode to reflection's value.
func TestDecodeMatchesReflectionForEveryField(t *testing.T) {
	long := string(bytes.Repeat([]byte{'x'}, 70_000))
	all := allFields()
	cases := []saga.Event{{}, all, {Tenant: long, Key: long[:300], At: math.MaxInt64}, {At: math.MinInt64, Attempt: -40},
		{Attempt: 1 << 40, Status: 255, Kind: 255}, {Result: []byte(long)}, {Err: &saga.Error{}}, {Waiter: &saga.Waiter{}}}
	// Each field alone, taken from all.
	av := reflect.ValueOf(all)
	for i := range av.NumField() {
		if av.Type().Field(i).Name == "Snapshot" {
			continue
		}
		var ev saga.Event
		reflect.ValueOf(&ev).Elem().Field(i).Set(av.Field(i))
		cases = append(cases, ev)
	}
	for _, ev := range cases {
		for _, b := range [][]byte{reflective(t, &ev), mustEncode(t, &ev)} {
			if !sameAsReflection(t, b) {
				t.Fatalf("the hand-written decoder declined the encoding of %+v", ev)
			}
		}
	}
	if n := len(eventFields); n != av.NumField()+1 {
		t.Fatalf("the decoder knows %d fields, the envelope has %d", n, av.NumField()+1)
	}
}

// eventFields are the envelope's fields the planned codec knows.
var eventFields = envelopeCodec.Fields()

func mustEncode(t testing.TB, ev *saga.Event) []byte {
	t.Helper()
	b, err := encodeEvent(Version, ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mp writes a msgpack map from ordered name/value pairs, each value
// written by its function: the shapes our encoder never writes.
func mp(t testing.TB, pairs ...any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	if err := enc.EncodeMapLen(len(pairs) / 2); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(pairs); i += 2 {
		if err := enc.EncodeString(pairs[i].(string)); err != nil {
			t.Fatal(err)
		}
		if err := pairs[i+1].(func(*msgpack.Encoder) error)(enc); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func val(v any) func(*msgpack.Encoder) error {
	return func(e *msgpack.Encoder) error { return e.Encode(v) }
}

func bin(b []byte) func(*msgpack.Encoder) error {
	return func(e *msgpack.Encoder) error { return e.EncodeBytes(b) }
}

// TestDecodeMatchesReflectionOnOtherShapes: inputs our encoder does not
// write but reflection reads (fields in another order, other integer
// widths, bin for a string or a name, nil for a field, an empty []byte,
// trailing bytes, unknown fields inside a waiter or an error, which
// mpread's shared readers skip as reflection does) decode to reflection's
// value; and what the hand-written decoder declines (unknown or repeated
// fields of the envelope, structs as arrays, snapshots, a bin inside a
// waiter: the shared reader reads str only) still decodes through Decode
// exactly as reflection decodes it.
func TestDecodeMatchesReflectionOnOtherShapes(t *testing.T) {
	nilv := func(e *msgpack.Encoder) error { return e.EncodeNil() }
	taken := map[string][]byte{
		"reversed":           mp(t, "at", val(int64(5)), "key", val("k"), "tenant", val("t"), "kind", val(uint8(3)), "v", val(1)),
		"widths":             mp(t, "v", func(e *msgpack.Encoder) error { return e.EncodeUint64(1) }, "at", func(e *msgpack.Encoder) error { return e.EncodeInt8(-3) }, "attempt", func(e *msgpack.Encoder) error { return e.EncodeInt16(-300) }, "pending_ttl_ms", func(e *msgpack.Encoder) error { return e.EncodeUint32(1 << 31) }, "retention_ms", func(e *msgpack.Encoder) error { return e.EncodeInt32(-1 << 30) }, "round_from", func(e *msgpack.Encoder) error { return e.EncodeUint16(65535) }),
		"kind wraps":         mp(t, "kind", func(e *msgpack.Encoder) error { return e.EncodeInt64(-1) }, "status", func(e *msgpack.Encoder) error { return e.EncodeUint64(258) }),
		"negative fixint":    mp(t, "kind", val(int8(-2)), "at", val(int8(-32))),
		"bin strings":        mp(t, "tenant", bin([]byte("t")), "key", bin(nil), "tool", bin([]byte{})),
		"str bytes":          mp(t, "args", val("abc"), "result", val(""), "args_hash", nilv),
		"empty bytes":        mp(t, "args", bin([]byte{}), "result", bin([]byte{})),
		"nil everywhere":     mp(t, "v", nilv, "kind", nilv, "tenant", nilv, "at", nilv, "forced", nilv, "err", nilv, "waiter", nilv, "snapshot", nilv),
		"false":              mp(t, "forced", val(false)),
		"nested orders":      mp(t, "waiter", val(map[string]any{"at": 3, "id": "w"}), "err", val(map[string]any{"message": "m", "code": "c"})),
		"empty nested":       mp(t, "waiter", val(map[string]any{}), "err", val(map[string]any{})),
		"trailing":           append(mustEncode(t, &saga.Event{Kind: 1, Tenant: "t"}), 0xc1, 0xff),
		"map16":              append([]byte{0xde, 0, 1}, mp(t, "v", val(1))[1:]...),
		"map32 nested 16":    append([]byte{0xdf, 0, 0, 0, 1, 0xa6}, append([]byte("waiter\xde\x00\x01"), mp(t, "id", val("w"))[1:]...)...),
		"long name and text": mp(t, "tenant", val(string(bytes.Repeat([]byte{'t'}, 40000)))),
		"unknown nested":     mp(t, "waiter", val(map[string]any{"id": "w", "future": []any{1, "x"}}), "err", val(map[string]any{"code": "c", "future": 1})),
		"bin name":           append([]byte{0x81, 0xc4, 0x06}, mp(t, "tenant", val("t"))[2:]...),
	}
	for name, b := range taken {
		if !sameAsReflection(t, b) {
			t.Errorf("%s: declined", name)
		}
	}
	declined := map[string][]byte{
		"unknown field":     mp(t, "v", val(1), "future", val([]int{1, 2})),
		"repeated field":    mp(t, "tenant", val("a"), "tenant", val("b")),
		"repeated waiter":   mp(t, "waiter", val(map[string]any{"id": "a", "type": "t"}), "waiter", val(map[string]any{"id": "b"})),
		"waiter as array":   mp(t, "waiter", val([]any{"w", "", "", "", 1})),
		"bin in a waiter":   mp(t, "waiter", val(map[string]any{"id": []byte("w")})),
		"snapshot":          mp(t, "snapshot", val(&saga.Record{Tenant: "t", Key: "k", Tool: "x"})),
		"float":             mp(t, "at", val(1.5)),
		"string for an int": mp(t, "at", val("1")),
		"int for a string":  mp(t, "tenant", val(1)),
		"nil envelope":      {0xc0},
		"array envelope":    {0x91, 0x01},
		"empty":             {},
		"short string":      {0x81, 0xa1, 'v', 0xa5, 'a'},
		"short map":         {0x82, 0xa1, 'v', 0x01},
		"huge bin":          {0x81, 0xa4, 'a', 'r', 'g', 's', 0xc6, 0xff, 0xff, 0xff, 0xff},
	}
	for name, b := range declined {
		if sameAsReflection(t, b) {
			t.Errorf("%s: taken by the hand-written decoder, which leaves it to reflection", name)
		}
		sameDecode(t, b)
	}
}

// referenceDecode is Decode as it was before the hand-written decoder.
func referenceDecode(b []byte) (*saga.Event, error) {
	env, err := decodeByReflection(b)
	if err != nil {
		return nil, errors.Join(ErrBadEvent, err)
	}
	if env.V != Version {
		return nil, ErrBadEvent
	}
	if err := Check(&env.Event); err != nil {
		return nil, err
	}
	return &env.Event, nil
}

// sameDecode fails t unless Decode and the reference agree on b: the
// same event, or both an error.
func sameDecode(t testing.TB, b []byte) {
	t.Helper()
	got, gotErr := Decode(b)
	want, wantErr := referenceDecode(b)
	if (gotErr == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
		t.Fatalf("%x: Decode %+v, %v; reference %+v, %v", b, got, gotErr, want, wantErr)
	}
	if gotErr != nil && !errors.Is(gotErr, ErrBadEvent) {
		t.Fatalf("%x: error does not wrap ErrBadEvent: %v", b, gotErr)
	}
}

// FuzzDecodeMatchesReflection: for any input, the hand-written decoder
// either declines it or returns reflection's value, and Decode accepts
// and returns what the reflective Decode did.
func FuzzDecodeMatchesReflection(f *testing.F) {
	all := allFields()
	for _, ev := range []saga.Event{all, {Kind: saga.EvStarted, Tenant: "t", Key: "k", At: 1, Tool: "x", ArgsHash: []byte{1},
		Waiter: &saga.Waiter{IntentID: "i"}}, {Kind: saga.EvRound, At: 1, RoundFrom: 3}} {
		f.Add(mustEncode(f, &ev))
	}
	f.Add([]byte{})
	f.Add(mp(f, "waiter", val(map[string]any{"at": int8(-3), "id": "w"}), "args", bin([]byte{}), "kind", val(uint16(3))))
	f.Add(mp(f, "snapshot", val(&saga.Record{Tenant: "t", Key: "k", Tool: "x"}), "v", val(1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		sameAsReflection(t, b)
		sameDecode(t, b)
	})
}

// BenchmarkDecodeEnvelope: the hand-written decoder on an event with
// every field set, the CPU figure a change to it must not worsen.
func BenchmarkDecodeEnvelope(b *testing.B) {
	ev := allFields()
	enc := mustEncode(b, &ev)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := decodeEnvelope(enc); !ok {
			b.Fatal("declined")
		}
	}
}

// TestDecodeRefusesAHeaderLargerThanItsBytes: a snapshot whose waiters
// declare 2^31 elements in 5 bytes is a bad event, not a fatal out of
// memory in the reflective decoder (which preallocates what a header
// declares) on every member that restores the partition.
func TestDecodeRefusesAHeaderLargerThanItsBytes(t *testing.T) {
	for _, b := range [][]byte{
		[]byte("\x81\xa8snapshot\x81\xa7waiters\xdd\x7f\xff\xff\xff"),
		[]byte("\x82\xa1v\x01\xa8snapshot\x81\xa7waiters\xdd\x00\xff\xff\xff"),
	} {
		if _, err := Decode(b); !errors.Is(err, ErrBadEvent) || !errors.Is(err, mpread.ErrShape) {
			t.Fatalf("%x: %v, want ErrBadEvent wrapping the shape refusal", b, err)
		}
	}
}
