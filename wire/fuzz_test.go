package wire_test

import (
	"bytes"
	"errors"
	"math"
	"testing"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/internal/msgpack/mpread"
	"github.com/atmostonce/toolexec/wire"
)

// fuzzReasons is the closed set of reject reasons (they label a metric).
var fuzzReasons = map[string]bool{
	codes.ReasonUndecodable: true, codes.ReasonUnsupportedVersion: true, codes.ReasonMissingField: true,
	codes.ReasonInvalidField: true, codes.ReasonOversized: true, codes.ReasonWrongTenant: true,
	codes.ReasonKeyMismatch: true, codes.ReasonUnknownTool: true, codes.ReasonResolveOnIntents: true,
	codes.ReasonBadReplyTo: true, codes.ReasonInvalidArgs: true, codes.ReasonDeadlineExceeded: true,
	codes.ReasonInvalidCommand: true,
}

// fuzzStable encodes v deterministically (sorted map keys), so two
// values can be compared byte for byte, NaN included.
func fuzzStable(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	e.SetSortMapKeys(true)
	if err := e.Encode(v); err != nil {
		t.Fatalf("stable encode of %#v: %v", v, err)
	}
	return buf.Bytes()
}

// fuzzHostile reports whether b is a msgpack value that mpread.CheckShape
// refuses: a container or a str/bin longer than the bytes that remain
// (msgpack allocates a bin's declared length before it reads it), or maps
// and arrays nested deeper than 64 levels. vmihailenco/msgpack v5.4.1 preallocates a
// map[string]any of the declared length with no limit (Decoder.DecodeMap)
// and a []any of up to 1e6 elements per level, so such a value of a few
// bytes is a fatal out-of-memory (see TestDecodeIntentHugeContainerHeader).
// DecodeIntent and DecodeResult refuse such values themselves (mpread.CheckShape,
// shape.go), so their targets feed them everything; only a target whose
// harness decodes with msgpack.Unmarshal first (FuzzCanonicalArgs) skips
// them, to protect the harness, not the code under test.
//
// Where the target is a map, the decoder (DecodeMapLen) skips an ext
// header and reads the map from the ext's payload, so a leading ext header
// is also tried as transparent.
func fuzzHostile(b []byte) bool {
	if mpread.CheckShape(b, 64) != nil {
		return true
	}
	for len(b) > 0 {
		var hdr int
		switch c := b[0]; {
		case c >= 0xd4 && c <= 0xd8:
			hdr = 2
		case c == 0xc7:
			hdr = 3
		case c == 0xc8:
			hdr = 4
		case c == 0xc9:
			hdr = 6
		default:
			return false
		}
		if len(b) < hdr {
			return false
		}
		b = b[hdr:]
		if mpread.CheckShape(b, 64) != nil {
			return true
		}
	}
	return false
}

func fuzzIntentSeeds(f *testing.F) {
	add := func(m any, rk string, control bool) {
		b, err := msgpack.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, []byte(rk), control)
	}
	add(codecBase(), "acme/k-1", false)
	add(codecWith(map[string]any{"tenant": nil, "scope": map[string]any{"run_id": "r"}, "deadline_ms": 5}), "default/k-1", false)
	add(codecWith(map[string]any{"type": "resolve", "outcome": "failed", "error": map[string]any{"code": "x"}, "result": []any{1.5}}), "acme/k-1", true)
	add(codecWith(map[string]any{"type": "compensate", "tool": nil}), "acme/k-1", false)
	add(codecWith(map[string]any{"v": "1"}), "acme/k-1", false)
	add(codecWith(map[string]any{"args": map[string]any{"n": math.NaN(), "b": []byte{1}, "nested": map[string]any{"a": []any{nil, true}}}}), "acme/k-1", false)
	add(codecWith(map[string]any{"key": "a/b"}), "acme/a/b", false)
	add([]any{1, "call", "intent-1", "acme", "k-1", "pay", map[string]any{"a": 1}, "", 0, nil, "", nil, nil, "", ""}, "acme/k-1", false)
	f.Add([]byte{0xc1}, []byte("acme/k-1"), false)
	f.Add([]byte{}, []byte(nil), false)
	f.Add([]byte{0x81, 0xa1, 'v', 0x01}, []byte("x/y"), true)
}

func FuzzDecodeIntent(f *testing.F) {
	fuzzIntentSeeds(f)
	f.Fuzz(func(t *testing.T, value, rk []byte, control bool) {
		src := wire.FromIntents
		if control {
			src = wire.FromControl
		}
		in, rej := wire.DecodeIntent(value, rk, src)
		if rej != nil {
			if in != nil {
				t.Fatalf("both an intent and a rejection: %+v %v", in, rej)
			}
			if !fuzzReasons[rej.Reason] {
				t.Fatalf("reason %q is not in the closed set", rej.Reason)
			}
			if rej.Detail == "" {
				t.Fatal("empty detail")
			}
			if len(rej.ID) > wire.MaxIDBytes || len(rej.ReplyTo) > wire.MaxReplyToBytes {
				t.Fatalf("salvaged id or reply_to out of bounds: %d, %d", len(rej.ID), len(rej.ReplyTo))
			}
			if rej.Answerable() != (rej.ID != "") {
				t.Fatal("Answerable disagrees with the salvaged id")
			}
			return
		}
		if in == nil {
			t.Fatal("neither an intent nor a rejection")
		}
		switch {
		case in.V != wire.Version:
			t.Fatalf("accepted v=%d", in.V)
		case !wire.ValidTenant(in.Tenant):
			t.Fatalf("accepted tenant %q", in.Tenant)
		case in.Key == "" || len(in.Key) > wire.MaxKeyBytes || !utf8.ValidString(in.Key):
			t.Fatalf("accepted key of %d bytes", len(in.Key))
		case in.ID == "" || len(in.ID) > wire.MaxIDBytes:
			t.Fatalf("accepted id of %d bytes", len(in.ID))
		case len(in.ReplyTo) > wire.MaxReplyToBytes:
			t.Fatalf("accepted reply_to of %d bytes", len(in.ReplyTo))
		case in.Type != wire.TypeCall && in.Type != wire.TypeCompensate && in.Type != wire.TypeResolve:
			t.Fatalf("accepted type %q", in.Type)
		case in.Type == wire.TypeResolve && src == wire.FromIntents:
			t.Fatal("accepted resolve from the intents topic")
		case in.Type == wire.TypeResolve && in.Outcome == "":
			t.Fatal("accepted resolve without outcome")
		case in.Type == wire.TypeCall && (in.Tool == "" || len(in.Tool) > wire.MaxToolBytes):
			t.Fatalf("accepted call with tool of %d bytes", len(in.Tool))
		case in.RoutingKey() != string(rk):
			t.Fatalf("accepted Kafka key %q for %q", rk, in.RoutingKey())
		case len(value) > wire.MaxMessageBytes:
			t.Fatalf("accepted %d bytes", len(value))
		}
		// Re-encoding gives an intent that decodes to an equal intent.
		want := fuzzStable(t, in)
		b, err := wire.EncodeIntent(in)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		again, rej := wire.DecodeIntent(b, rk, src)
		if rej != nil {
			t.Fatalf("re-encoded intent rejected: %v", rej)
		}
		if got := fuzzStable(t, again); !bytes.Equal(got, want) {
			t.Fatalf("round trip changed the intent:\n got %x\nwant %x", got, want)
		}
	})
}

func fuzzArgsSeeds(f *testing.F) {
	for _, m := range []map[string]any{
		{},
		{"amount": 120, "currency": "EUR"},
		{"amount": 120.0, "n": float32(3), "u": uint64(math.MaxUint64), "i": int64(math.MinInt64)},
		{"f": 120.5, "neg": -0.0, "nested": map[string]any{"b": []any{1, "x", nil, true, []byte{0}}}},
		{"big": 9.21e18, "small": -9.3e18},
		{"nan": math.NaN()},
	} {
		b, err := msgpack.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0x81, 0xa1, 'a', 0xcb, 0x43, 0xe0, 0, 0, 0, 0, 0, 0}) // {"a": 2^63 as float64}
	f.Add([]byte{0x81, 0xa1, 'a', 0xca, 0x42, 0xf0, 0, 0})             // {"a": float32 120}
}

func FuzzCanonicalArgs(f *testing.F) {
	fuzzArgsSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if fuzzHostile(data) {
			return // the harness's own msgpack.Unmarshal would run out of memory
		}
		var m map[string]any
		if msgpack.Unmarshal(data, &m) != nil {
			return
		}
		norm, enc, err := wire.CanonicalArgs(m)
		if err != nil {
			if !errors.Is(err, wire.ErrArgs) {
				t.Fatalf("error does not wrap ErrArgs: %v", err)
			}
			return
		}
		// Idempotence: canonicalising the canonical bytes changes nothing.
		var m2 map[string]any
		if err := msgpack.Unmarshal(enc, &m2); err != nil {
			t.Fatalf("canonical bytes do not decode: %v", err)
		}
		_, enc2, err := wire.CanonicalArgs(m2)
		if err != nil {
			t.Fatalf("canonical value rejected: %v", err)
		}
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("not idempotent:\n%x\n%x", enc, enc2)
		}
		// The normalised value encodes to the same canonical bytes.
		_, enc3, err := wire.CanonicalArgs(norm)
		if err != nil || !bytes.Equal(enc3, enc) {
			t.Fatalf("normalised value re-canonicalises differently: %v", err)
		}
		// Encoder independence: another client's encoder (full-width ints,
		// integral floats written as ints, unsorted keys) gives the same hash.
		var buf bytes.Buffer
		e := msgpack.NewEncoder(&buf)
		e.UseCompactInts(false)
		e.UseCompactFloats(true)
		if err := e.Encode(m); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		var m3 map[string]any
		if err := msgpack.Unmarshal(buf.Bytes(), &m3); err != nil {
			t.Fatalf("re-encoded args do not decode: %v", err)
		}
		_, enc4, err := wire.CanonicalArgs(m3)
		if err != nil {
			t.Fatalf("re-encoded args rejected: %v", err)
		}
		if !bytes.Equal(wire.ArgsHash(enc4), wire.ArgsHash(enc)) {
			t.Fatalf("hash depends on the encoder:\n%x\n%x", enc, enc4)
		}
	})
}

func FuzzDecodeResult(f *testing.F) {
	for _, r := range []*wire.Result{
		{IntentID: "i", Tenant: "a", Key: "k", Status: "succeeded", Result: map[string]any{"x": 1}, WasReplay: true, CompletedAt: 9},
		{IntentID: "i", Tenant: "a", Key: "k", Status: "failed", Error: &wire.ErrorInfo{Code: "c"}},
	} {
		b, err := wire.EncodeResult(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0xc0})
	f.Add([]byte{0x80})
	f.Add([]byte{0x91, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := wire.DecodeResult(data)
		if err != nil {
			if r != nil {
				t.Fatal("a result and an error")
			}
			return
		}
		b, err := wire.EncodeResult(r)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		want := fuzzStable(t, r)
		again, err := wire.DecodeResult(b)
		if err != nil {
			t.Fatalf("re-encoded result does not decode: %v", err)
		}
		if got := fuzzStable(t, again); !bytes.Equal(got, want) {
			t.Fatalf("round trip changed the result:\n got %x\nwant %x", got, want)
		}
	})
}

func FuzzDecodeDeadLetter(f *testing.F) {
	b, err := wire.EncodeDeadLetter(&wire.DeadLetter{Reason: "undecodable", Detail: "d", Topic: "t", Value: []byte{1, 2}, Headers: map[string]string{"a": "b"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte{0x80})
	f.Add([]byte{0xdf, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := wire.DecodeDeadLetter(data)
		if err != nil {
			return
		}
		again, err := wire.EncodeDeadLetter(d)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if _, err := wire.DecodeDeadLetter(again); err != nil {
			t.Fatalf("a re-encoded dead letter does not decode: %v", err)
		}
	})
}

// A map that repeats a key whose field is an interface makes msgpack v5
// panic (the second value is decoded into the first one's unaddressable
// copy). Answers, dead letters and intents all
// come from the wire: each must be an error or a rejection, never a panic.
func TestRepeatedInterfaceKeyIsNotAPanic(t *testing.T) {
	twice := func(fields ...any) []byte {
		var buf bytes.Buffer
		enc := msgpack.NewEncoder(&buf)
		_ = enc.EncodeMapLen(len(fields) / 2)
		for _, f := range fields {
			_ = enc.Encode(f)
		}
		return buf.Bytes()
	}
	if _, err := wire.DecodeResult(twice("intent_id", "a", "result", 48, "result", 48)); err == nil {
		t.Error("result with \"result\" twice: no error")
	}
	in := twice("v", 1, "id", "a", "tenant", "t", "key", "k", "tool", "x", "type", "resolve", "result", 48, "result", 48)
	if _, rej := wire.DecodeIntent(in, []byte("t/k"), wire.FromControl); rej == nil {
		t.Error("intent with \"result\" twice: no rejection")
	}
}
