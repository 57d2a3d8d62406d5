package msgpmeasure

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/tinylib/msgp/msgp"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/wire"
)

// The samples are the ones of the hand-written codecs' benchmarks:
// eventlog's allFields, state's benchRecord, wire's benchIntent and
// benchResult.

// event is sagaEvent as the copy holds it: decoded reflectively from
// eventlog's bytes.
func event() *Envelope {
	b, err := eventlog.Encode(sagaEvent())
	if err != nil {
		panic(err)
	}
	var env Envelope
	if err := msgpack.Unmarshal(b, &env); err != nil {
		panic(err)
	}
	return &env
}

func sagaEvent() *saga.Event {
	return &saga.Event{Kind: saga.EvOutcome, Tenant: "t", Key: "k", At: 1, IntentID: "i", Tool: "tool",
		ArgsHash: []byte{1}, Args: []byte{2, 3}, PendingTTL: 5, RetentionMs: 6, Attempt: 7, RunID: "r",
		ThreadID: "th", DownstreamKey: "dk", CallID: "c", Status: saga.StatusFailed, Result: []byte{9},
		Err: &saga.Error{Code: "x", Message: "m"}, By: "b", Reason: "why", Forced: true,
		Waiter: &saga.Waiter{IntentID: "w", ReplyTo: "rt", Traceparent: "tp", Type: "call", At: 4}, RoundFrom: 8}
}

func record() *Record {
	return &Record{Tenant: "bench", Key: "k-123456", Tool: "bench.noop", ArgsHash: make([]byte, 32), Status: 2,
		Origin: Waiter{IntentID: "u-123456", ReplyTo: "results", At: 1764660000000}, OriginAnswered: true, Attempt: 1,
		CalledAt: 1764660000000, PendingUntil: 1764660030000, RetentionMs: 86400000, CompletedAt: 1764660000001,
		ExpiresAt: 1764746400001, Result: []byte{0x81, 0xa2, 'o', 'k', 0xc3}, LastEventAt: 1764660000001}
}

func intent() *Intent {
	return &Intent{V: 1, Type: "call", ID: "u-123456", Tenant: "bench", Key: "k-123456", Tool: "bench.noop", Args: map[string]any{"n": 123456}}
}

func result() *Result {
	return &Result{V: 1, IntentID: "u-123456", Type: "call", Tenant: "bench", Key: "k-123456", Tool: "bench.noop",
		Status: "succeeded", Result: msgp.Raw{0x81, 0xa2, 'o', 'k', 0xc3}, WasReplay: true,
		OriginalIntentID: "u-123455", OriginalCalledAt: 1764660000000, CompletedAt: 1764660000001, Attempt: 1}
}

// reflective is what the reflective codec writes for v; for the result,
// with its raw field as wire.Result holds it (a msgpack.RawMessage in an
// any).
func reflective(t testing.TB, v any) []byte {
	t.Helper()
	if r, ok := v.(*Result); ok {
		w := wire.Result{V: r.V, IntentID: r.IntentID, Type: r.Type, Tenant: r.Tenant, Key: r.Key, Tool: r.Tool, Status: r.Status,
			Result: msgpack.RawMessage(r.Result), WasReplay: r.WasReplay, OriginalIntentID: r.OriginalIntentID,
			OriginalCalledAt: r.OriginalCalledAt, CompletedAt: r.CompletedAt, Attempt: r.Attempt}
		v = &w
	}
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCopiesAreFaithful: the copies encode reflectively as the product's
// own types do, so what is measured on them holds for those.
func TestCopiesAreFaithful(t *testing.T) {
	ours, err := eventlog.Encode(sagaEvent())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ours, reflective(t, event())) {
		t.Fatal("the event copy does not encode as eventlog does")
	}
	in := &wire.Intent{V: 1, Type: "call", ID: "u-123456", Tenant: "bench", Key: "k-123456", Tool: "bench.noop", Args: map[string]any{"n": 123456}}
	wb, err := wire.EncodeIntent(in)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(wb, reflective(t, intent())) {
		t.Fatal("the intent copy does not encode as wire does")
	}
}

// TestMsgpBytes reports, for each struct, whether msgp's bytes are the
// reflective codec's (the form the log, the store and the wire hold).
func TestMsgpBytes(t *testing.T) {
	for _, c := range []struct {
		name string
		v    msgp.Marshaler
	}{{"event", event()}, {"record", record()}, {"intent", intent()}, {"result", result()}} {
		got, err := c.v.MarshalMsg(nil)
		if err != nil {
			t.Fatal(err)
		}
		want := reflective(t, c.v)
		t.Logf("%s: msgp %d bytes, reflection %d bytes, identical %v%s", c.name, len(got), len(want), bytes.Equal(got, want), firstDiff(got, want))
	}
}

func firstDiff(a, b []byte) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf(" (first difference at byte %d: % x against % x)", i, a[i:min(i+9, len(a))], b[i:min(i+9, len(b))])
		}
	}
	return ""
}

// TestMsgpValues reports, for each struct, whether msgp decodes the
// reflective codec's bytes to the value the reflective decoder gives.
func TestMsgpValues(t *testing.T) {
	for _, c := range []struct {
		name     string
		src      any
		msgp, rf func() msgp.Unmarshaler
	}{
		{"event", event(), func() msgp.Unmarshaler { return &Envelope{} }, nil},
		{"record", record(), func() msgp.Unmarshaler { return &Record{} }, nil},
		{"intent", intent(), func() msgp.Unmarshaler { return &Intent{} }, nil},
		{"intent with a resolve's result", &Intent{V: 1, Type: "resolve", ID: "i", Key: "k", Result: map[string]any{"n": 1, "s": "x"}},
			func() msgp.Unmarshaler { return &Intent{} }, nil},
	} {
		b := reflective(t, c.src)
		got := c.msgp()
		if _, err := got.UnmarshalMsg(b); err != nil {
			t.Logf("%s: msgp refuses the reflective bytes: %v", c.name, err)
			continue
		}
		want := reflect.New(reflect.TypeOf(got).Elem()).Interface()
		if err := msgpack.Unmarshal(b, want); err != nil {
			t.Fatal(err)
		}
		same := reflect.DeepEqual(got, want)
		t.Logf("%s: values identical %v", c.name, same)
		if !same {
			t.Logf("  msgp:       %s", types(got))
			t.Logf("  reflection: %s", types(want))
		}
	}
}

func BenchmarkMsgpEncodeEvent(b *testing.B) {
	v := event()
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		out, err := v.MarshalMsg(buf[:0])
		if err != nil {
			b.Fatal(err)
		}
		_ = bytes.Clone(out) // the hand-written encoder returns its own copy too
	}
}

func BenchmarkMsgpDecodeEvent(b *testing.B) {
	enc := reflective(b, event())
	b.ReportAllocs()
	for b.Loop() {
		var v Envelope
		if _, err := v.UnmarshalMsg(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMsgpEncodeRecord(b *testing.B) {
	v := record()
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		out, err := v.MarshalMsg(buf[:0])
		if err != nil {
			b.Fatal(err)
		}
		_ = bytes.Clone(out)
	}
}

func BenchmarkMsgpDecodeRecord(b *testing.B) {
	enc := reflective(b, record())
	b.ReportAllocs()
	for b.Loop() {
		var v Record
		if _, err := v.UnmarshalMsg(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMsgpDecodeIntent(b *testing.B) {
	enc := reflective(b, intent())
	b.ReportAllocs()
	for b.Loop() {
		var v Intent
		if _, err := v.UnmarshalMsg(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMsgpEncodeResult(b *testing.B) {
	v := result()
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		out, err := v.MarshalMsg(buf[:0])
		if err != nil {
			b.Fatal(err)
		}
		_ = bytes.Clone(out)
	}
}

// types shows the dynamic types inside an intent's args and result, where
// the two decoders differ.
func types(v any) string {
	in := v.(*Intent)
	return fmt.Sprintf("args %#v (%s), result %#v (%s)", in.Args, dyn(in.Args), in.Result, dyn(in.Result))
}

func dyn(v any) string {
	switch v := v.(type) {
	case map[string]any:
		s := ""
		for k, e := range v {
			s += fmt.Sprintf("%s: %T ", k, e)
		}
		return s
	}
	return fmt.Sprintf("%T", v)
}
