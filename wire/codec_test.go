package wire_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

// codecBase is a valid call intent as a generic map, the way an agent in
// another language would build it.
func codecBase() map[string]any {
	return map[string]any{
		"v":        1,
		"type":     "call",
		"id":       "intent-1",
		"tenant":   "acme",
		"key":      "k-1",
		"tool":     "pay",
		"args":     map[string]any{"amount": 120, "currency": "EUR"},
		"reply_to": "acme.replies",
	}
}

// codecWith returns codecBase with changes applied; a nil value deletes
// the field.
func codecWith(changes map[string]any) map[string]any {
	m := codecBase()
	for k, v := range changes {
		if v == nil {
			delete(m, k)
			continue
		}
		m[k] = v
	}
	return m
}

func codecMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return b
}

// codecBigMessage is a valid intent padded with an unknown field to n bytes
// or a little more.
func codecBigMessage(t testing.TB, n int) []byte {
	return codecMarshal(t, codecWith(map[string]any{"padding": strings.Repeat("x", n)}))
}

type decodeCase struct {
	name  string
	value []byte
	rk    []byte // Kafka key; noKey for a record without one
	src   wire.Source

	reason     string // "" when the intent must be accepted
	detail     string // substring the detail must contain (names the field)
	answerable bool
	salvage    *wire.Reject // fields that must be salvaged (ID, ReplyTo, Tenant, Key)
}

var noKey = []byte(nil)

func TestDecodeIntentTable(t *testing.T) {
	rk := []byte("acme/k-1")
	long := strings.Repeat("k", wire.MaxKeyBytes+1)
	max := strings.Repeat("k", wire.MaxKeyBytes)
	cases := []decodeCase{
		{name: "valid call", value: codecMarshal(t, codecBase()), rk: rk},
		{name: "valid compensate without tool", value: codecMarshal(t, codecWith(map[string]any{"type": "compensate", "tool": nil})), rk: rk},
		{name: "key of exactly 256 bytes", value: codecMarshal(t, codecWith(map[string]any{"key": max})), rk: []byte("acme/" + max)},
		{name: "key containing slashes", value: codecMarshal(t, codecWith(map[string]any{"key": "a/b/c"})), rk: []byte("acme/a/b/c")},
		{name: "unknown fields ignored", value: codecMarshal(t, codecWith(map[string]any{
			"future": map[string]any{"x": []any{1, "two", 3.5}}, "priority": 7, "headers": []any{nil}})), rk: rk},
		{name: "resolve accepted on control", src: wire.FromControl, rk: rk,
			value: codecMarshal(t, codecWith(map[string]any{"type": "resolve", "tool": nil, "args": nil, "outcome": "succeeded", "result": map[string]any{"id": "ch_1"}, "by": "ops"}))},

		{name: "garbage bytes", value: []byte{0xc1, 0xff, 0x00, 0x13}, rk: rk,
			reason: codes.ReasonUndecodable, detail: "msgpack"},
		{name: "empty value", value: []byte{}, rk: rk, reason: codes.ReasonUndecodable, detail: "msgpack"},
		{name: "truncated map", value: codecMarshal(t, codecBase())[:10], rk: rk, reason: codes.ReasonUndecodable, detail: "msgpack"},
		{name: "msgpack string", value: codecMarshal(t, "call me"), rk: rk, reason: codes.ReasonUndecodable, detail: "map"},
		{name: "msgpack short array", value: codecMarshal(t, []any{1, "call"}), rk: rk, reason: codes.ReasonUndecodable, detail: "msgpack"},
		{name: "msgpack integer", value: codecMarshal(t, 42), rk: rk, reason: codes.ReasonUndecodable, detail: "map"},

		{name: "v is a string", value: codecMarshal(t, codecWith(map[string]any{"v": "1"})), rk: rk,
			reason: codes.ReasonInvalidField, detail: "msgpack", answerable: true,
			salvage: &wire.Reject{ID: "intent-1", ReplyTo: "acme.replies", Tenant: "acme", Key: "k-1"}},
		{name: "tool is a number", value: codecMarshal(t, codecWith(map[string]any{"tool": 5})), rk: rk,
			reason: codes.ReasonInvalidField, detail: "msgpack", answerable: true,
			salvage: &wire.Reject{ID: "intent-1", ReplyTo: "acme.replies", Tenant: "acme", Key: "k-1"}},
		{name: "args is an array", value: codecMarshal(t, codecWith(map[string]any{"args": []any{1, 2}})), rk: rk,
			reason: codes.ReasonInvalidField, detail: "msgpack", answerable: true,
			salvage: &wire.Reject{ID: "intent-1", ReplyTo: "acme.replies", Tenant: "acme", Key: "k-1"}},
		{name: "scope is a string, tenant absent", value: codecMarshal(t, codecWith(map[string]any{"scope": "run-1", "tenant": nil})), rk: rk,
			reason: codes.ReasonInvalidField, detail: "msgpack", answerable: true,
			salvage: &wire.Reject{ID: "intent-1", ReplyTo: "acme.replies", Tenant: "default", Key: "k-1"}},
		{name: "deadline is a float", value: codecMarshal(t, codecWith(map[string]any{"deadline_ms": 1.5})), rk: rk,
			reason: codes.ReasonInvalidField, detail: "msgpack", answerable: true,
			salvage: &wire.Reject{ID: "intent-1", ReplyTo: "acme.replies", Tenant: "acme", Key: "k-1"}},
		{name: "force is a string", value: codecMarshal(t, codecWith(map[string]any{"force": "yes"})), rk: rk,
			reason: codes.ReasonInvalidField, detail: "field force has the wrong type", answerable: true,
			salvage: &wire.Reject{ID: "intent-1", ReplyTo: "acme.replies", Tenant: "acme", Key: "k-1"}},
		{name: "wrong type and id is a number", value: codecMarshal(t, codecWith(map[string]any{"id": 7})), rk: rk,
			reason: codes.ReasonInvalidField, detail: "msgpack", answerable: false},

		{name: "missing v", value: codecMarshal(t, codecWith(map[string]any{"v": nil})), rk: rk,
			reason: codes.ReasonMissingField, detail: "field v", answerable: true},
		{name: "v=0", value: codecMarshal(t, codecWith(map[string]any{"v": 0})), rk: rk,
			reason: codes.ReasonMissingField, detail: "field v", answerable: true},
		{name: "missing type", value: codecMarshal(t, codecWith(map[string]any{"type": nil})), rk: rk,
			reason: codes.ReasonMissingField, detail: "field type", answerable: true},
		{name: "missing id", value: codecMarshal(t, codecWith(map[string]any{"id": nil})), rk: rk,
			reason: codes.ReasonMissingField, detail: "field id", answerable: false},
		{name: "missing key", value: codecMarshal(t, codecWith(map[string]any{"key": nil})), rk: []byte("acme/"),
			reason: codes.ReasonMissingField, detail: "field key", answerable: true},
		{name: "missing tool", value: codecMarshal(t, codecWith(map[string]any{"tool": nil})), rk: rk,
			reason: codes.ReasonMissingField, detail: "field tool", answerable: true},
		{name: "v=2", value: codecMarshal(t, codecWith(map[string]any{"v": 2})), rk: rk,
			reason: codes.ReasonUnsupportedVersion, detail: "v=2", answerable: true},
		{name: "unknown type", value: codecMarshal(t, codecWith(map[string]any{"type": "delete"})), rk: rk,
			reason: codes.ReasonInvalidField, detail: "field type", answerable: true},
		{name: "resolve on intents", value: codecMarshal(t, codecWith(map[string]any{"type": "resolve", "outcome": "succeeded"})), rk: rk,
			src: wire.FromIntents, reason: codes.ReasonResolveOnIntents, detail: "resolve", answerable: true},
		{name: "resolve without outcome", value: codecMarshal(t, codecWith(map[string]any{"type": "resolve"})), rk: rk,
			src: wire.FromControl, reason: codes.ReasonMissingField, detail: "field outcome", answerable: true},
		{name: "resolve with a bad outcome", value: codecMarshal(t, codecWith(map[string]any{"type": "resolve", "outcome": "maybe"})), rk: rk,
			src: wire.FromControl, reason: codes.ReasonInvalidField, detail: "field outcome", answerable: true},
		{name: "upper-case tenant", value: codecMarshal(t, codecWith(map[string]any{"tenant": "ACME"})), rk: []byte("ACME/k-1"),
			reason: codes.ReasonInvalidField, detail: "field tenant", answerable: true},
		{name: "tenant with a slash", value: codecMarshal(t, codecWith(map[string]any{"tenant": "a/b"})), rk: []byte("a/b/k-1"),
			reason: codes.ReasonInvalidField, detail: "field tenant", answerable: true},
		{name: "tenant of 65 bytes", value: codecMarshal(t, codecWith(map[string]any{"tenant": strings.Repeat("a", 65)})), rk: rk,
			reason: codes.ReasonInvalidField, detail: "field tenant", answerable: true},
		{name: "key of 257 bytes", value: codecMarshal(t, codecWith(map[string]any{"key": long})), rk: []byte("acme/" + long),
			reason: codes.ReasonOversized, detail: "field key", answerable: true},
		{name: "key not UTF-8", value: codecMarshal(t, codecWith(map[string]any{"key": "k\xff"})), rk: []byte("acme/k\xff"),
			reason: codes.ReasonInvalidField, detail: "field key", answerable: true},
		{name: "id too long", value: codecMarshal(t, codecWith(map[string]any{"id": strings.Repeat("i", wire.MaxIDBytes+1)})), rk: rk,
			reason: codes.ReasonInvalidField, detail: "field id", answerable: false},
		{name: "reply_to too long", value: codecMarshal(t, codecWith(map[string]any{"reply_to": strings.Repeat("r", wire.MaxReplyToBytes+1)})), rk: rk,
			reason: codes.ReasonBadReplyTo, detail: "field reply_to", answerable: true},
		{name: "tool too long", value: codecMarshal(t, codecWith(map[string]any{"tool": strings.Repeat("t", wire.MaxToolBytes+1)})), rk: rk,
			reason: codes.ReasonInvalidField, detail: "field tool", answerable: true},
		// every intent whose id can be read gets an answer, even
		// one too large to decode.
		{name: "message over 1 MiB", value: codecBigMessage(t, wire.MaxMessageBytes), rk: rk,
			reason: codes.ReasonOversized, detail: "message", answerable: true,
			salvage: &wire.Reject{ID: "intent-1", ReplyTo: "acme.replies", Tenant: "acme", Key: "k-1"}},
		{name: "message over 1 MiB with no readable id", value: codecMarshal(t, map[string]any{"padding": strings.Repeat("x", wire.MaxMessageBytes)}), rk: rk,
			reason: codes.ReasonOversized, detail: "message", answerable: false},
		{name: "message over 1 MiB whose id is not a string", value: codecMarshal(t, codecWith(map[string]any{"id": 7, "padding": strings.Repeat("x", wire.MaxMessageBytes)})), rk: rk,
			reason: codes.ReasonOversized, detail: "message", answerable: false},
		{name: "scope.run_id over its bound", value: codecMarshal(t, codecWith(map[string]any{"scope": map[string]any{"run_id": strings.Repeat("r", wire.MaxScopeFieldBytes+1)}})), rk: rk,
			reason: codes.ReasonOversized, detail: "scope.run_id", answerable: true},
		{name: "scope.thread_id over its bound", value: codecMarshal(t, codecWith(map[string]any{"scope": map[string]any{"thread_id": strings.Repeat("r", wire.MaxScopeFieldBytes+1)}})), rk: rk,
			reason: codes.ReasonOversized, detail: "scope.thread_id", answerable: true},
		{name: "scope at its bounds", value: codecMarshal(t, codecWith(map[string]any{"scope": map[string]any{"run_id": strings.Repeat("r", wire.MaxScopeFieldBytes), "thread_id": strings.Repeat("t", wire.MaxScopeFieldBytes)}})), rk: rk},
		{name: "by over its bound", value: codecMarshal(t, codecWith(map[string]any{"by": strings.Repeat("b", wire.MaxByBytes+1)})), rk: rk,
			reason: codes.ReasonOversized, detail: "field by", answerable: true},
		{name: "reason over its bound", value: codecMarshal(t, codecWith(map[string]any{"reason": strings.Repeat("b", wire.MaxReasonBytes+1)})), rk: rk,
			reason: codes.ReasonOversized, detail: "field reason", answerable: true},
		{name: "force on the intents topic", value: codecMarshal(t, codecWith(map[string]any{"type": "compensate", "force": true})), rk: rk,
			reason: codes.ReasonResolveOnIntents, detail: "force", answerable: true},

		{name: "no Kafka key", value: codecMarshal(t, codecBase()), rk: noKey,
			reason: codes.ReasonMissingField, detail: "Kafka key", answerable: true},
		{name: "Kafka key names another tenant", value: codecMarshal(t, codecBase()), rk: []byte("evil/k-1"),
			reason: codes.ReasonWrongTenant, detail: "tenant", answerable: true},
		{name: "Kafka key names another key", value: codecMarshal(t, codecBase()), rk: []byte("acme/k-2"),
			reason: codes.ReasonKeyMismatch, detail: "key", answerable: true},
		{name: "Kafka key without separator", value: codecMarshal(t, codecBase()), rk: []byte("acme"),
			reason: codes.ReasonKeyMismatch, detail: "Kafka key", answerable: true},
		{name: "empty Kafka key", value: codecMarshal(t, codecBase()), rk: []byte{},
			reason: codes.ReasonKeyMismatch, detail: "Kafka key", answerable: true},
		{name: "tenant absent but Kafka key names acme", value: codecMarshal(t, codecWith(map[string]any{"tenant": nil})), rk: rk,
			reason: codes.ReasonWrongTenant, detail: "tenant", answerable: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := c.src
			if src == 0 {
				src = wire.FromIntents
			}
			in, rej := wire.DecodeIntent(c.value, c.rk, src)
			if c.reason == "" {
				if rej != nil {
					t.Fatalf("rejected: %v", rej)
				}
				if in == nil {
					t.Fatal("nil intent without a rejection")
				}
				return
			}
			if rej == nil {
				t.Fatalf("accepted %+v, want reason %s", in, c.reason)
			}
			if in != nil {
				t.Errorf("rejection with a non-nil intent %+v", in)
			}
			if rej.Reason != c.reason {
				t.Errorf("reason %q, want %q (detail %q)", rej.Reason, c.reason, rej.Detail)
			}
			if !strings.Contains(rej.Detail, c.detail) {
				t.Errorf("detail %q does not mention %q", rej.Detail, c.detail)
			}
			if !strings.Contains(rej.Error(), c.reason) {
				t.Errorf("Error() %q does not carry the reason", rej.Error())
			}
			if rej.Answerable() != c.answerable {
				t.Errorf("answerable=%v, want %v (id %q)", rej.Answerable(), c.answerable, rej.ID)
			}
			if len(rej.ID) > wire.MaxIDBytes || len(rej.ReplyTo) > wire.MaxReplyToBytes {
				t.Errorf("salvaged fields exceed their bounds: id %d bytes, reply_to %d bytes", len(rej.ID), len(rej.ReplyTo))
			}
			if s := c.salvage; s != nil {
				if rej.ID != s.ID || rej.ReplyTo != s.ReplyTo || rej.Tenant != s.Tenant || rej.Key != s.Key {
					t.Errorf("salvaged id=%q reply_to=%q tenant=%q key=%q, want id=%q reply_to=%q tenant=%q key=%q",
						rej.ID, rej.ReplyTo, rej.Tenant, rej.Key, s.ID, s.ReplyTo, s.Tenant, s.Key)
				}
			}
		})
	}
}

func TestDecodeIntentValidFields(t *testing.T) {
	m := codecWith(map[string]any{
		"deadline_ms": int64(1_700_000_000_000),
		"scope":       map[string]any{"run_id": "run-1", "thread_id": "th-1"},
	})
	in, rej := wire.DecodeIntent(codecMarshal(t, m), []byte("acme/k-1"), wire.FromIntents)
	if rej != nil {
		t.Fatal(rej)
	}
	want := &wire.Intent{V: 1, Type: "call", ID: "intent-1", Tenant: "acme", Key: "k-1", Tool: "pay",
		ReplyTo: "acme.replies", DeadlineMs: 1_700_000_000_000, Scope: &wire.Scope{RunID: "run-1", ThreadID: "th-1"}}
	gotArgs := in.Args
	in.Args = nil
	if !reflect.DeepEqual(in, want) {
		t.Errorf("got %+v\nwant %+v", in, want)
	}
	if gotArgs["currency"] != "EUR" || len(gotArgs) != 2 {
		t.Errorf("args %#v", gotArgs)
	}
	if in.RoutingKey() != "acme/k-1" {
		t.Errorf("routing key %q", in.RoutingKey())
	}
}

func TestDecodeIntentDefaultTenant(t *testing.T) {
	for _, tenant := range []any{nil, ""} {
		m := codecWith(map[string]any{"tenant": nil})
		if tenant != nil {
			m["tenant"] = tenant
		}
		in, rej := wire.DecodeIntent(codecMarshal(t, m), []byte("default/k-1"), wire.FromIntents)
		if rej != nil {
			t.Fatalf("tenant %#v: %v", tenant, rej)
		}
		if in.Tenant != "default" {
			t.Errorf("tenant %#v: got %q, want default", tenant, in.Tenant)
		}
	}
}

// TestDecodeApprovalCommands: approve and deny come only on the control
// topic, name who decides and why, and carry a digest only in the form
// ArgsHash prints.
func TestDecodeApprovalCommands(t *testing.T) {
	digest := strings.Repeat("ab", 32)
	for _, typ := range []string{wire.TypeApprove, wire.TypeDeny} {
		ok := map[string]any{"type": typ, "tool": nil, "args": nil, "by": "alice", "reason": "checked", "call_id": "intent-0", "args_digest": digest}
		in, rej := wire.DecodeIntent(codecMarshal(t, codecWith(ok)), []byte("acme/k-1"), wire.FromControl)
		if rej != nil || in.Type != typ || in.ArgsDigest != digest || in.CallID != "intent-0" {
			t.Fatalf("%s on control: %+v %v", typ, in, rej)
		}
		for _, c := range []struct {
			name   string
			with   map[string]any
			src    wire.Source
			reason string
		}{
			{"on intents", nil, wire.FromIntents, codes.ReasonResolveOnIntents},
			{"without by", map[string]any{"by": nil}, wire.FromControl, codes.ReasonMissingField},
			{"without reason", map[string]any{"reason": nil}, wire.FromControl, codes.ReasonMissingField},
			{"a short digest", map[string]any{"args_digest": "abcd"}, wire.FromControl, codes.ReasonInvalidField},
			{"an upper-case digest", map[string]any{"args_digest": strings.ToUpper(digest)}, wire.FromControl, codes.ReasonInvalidField},
		} {
			m := codecWith(ok)
			for k, v := range c.with {
				m[k] = v
			}
			_, rej := wire.DecodeIntent(codecMarshal(t, codecWith(m)), []byte("acme/k-1"), c.src)
			if rej == nil || rej.Reason != c.reason || !rej.Answerable() {
				t.Errorf("%s %s: %+v, want %s", typ, c.name, rej, c.reason)
			}
		}
	}
}

func TestDecodeIntentResolveOutcomes(t *testing.T) {
	for _, o := range []string{codes.StatusSucceeded, codes.StatusFailed, codes.StatusNotExecuted, codes.StatusCompensated, codes.StatusCompensationFailed} {
		m := codecWith(map[string]any{"type": "resolve", "outcome": o, "tool": nil})
		in, rej := wire.DecodeIntent(codecMarshal(t, m), []byte("acme/k-1"), wire.FromControl)
		if rej != nil {
			t.Errorf("outcome %s: %v", o, rej)
			continue
		}
		if in.Outcome != o || in.Type != wire.TypeResolve {
			t.Errorf("outcome %s: got %+v", o, in)
		}
		// The same command on the intents topic is never accepted.
		if _, rej := wire.DecodeIntent(codecMarshal(t, m), []byte("acme/k-1"), wire.FromIntents); rej == nil || rej.Reason != codes.ReasonResolveOnIntents {
			t.Errorf("outcome %s on intents: %v", o, rej)
		}
	}
}

// An intent just under the message limit is accepted: the bound is on
// the message, not a smaller hidden one.
func TestDecodeIntentMessageLimitBoundary(t *testing.T) {
	b := codecBigMessage(t, 0)
	pad := wire.MaxMessageBytes - len(b) - 8
	b = codecBigMessage(t, pad)
	if len(b) > wire.MaxMessageBytes {
		t.Fatalf("test message is %d bytes", len(b))
	}
	if _, rej := wire.DecodeIntent(b, []byte("acme/k-1"), wire.FromIntents); rej != nil {
		t.Fatalf("message of %d bytes rejected: %v", len(b), rej)
	}
}

// The wire contract says a wrong field type is a reject "with a reason",
// and the detail should name the field so an agent author can fix it.
func TestDecodeIntentWrongTypeDetailNamesField(t *testing.T) {
	for field, bad := range map[string]any{"v": "1", "tool": 5, "args": []any{1}, "scope": "x", "deadline_ms": 1.5, "tenant": 3} {
		_, rej := wire.DecodeIntent(codecMarshal(t, codecWith(map[string]any{field: bad})), []byte("acme/k-1"), wire.FromIntents)
		if rej == nil || rej.Reason != codes.ReasonInvalidField {
			t.Errorf("%s: %v", field, rej)
			continue
		}
		if !strings.Contains(rej.Detail, "field "+field) {
			t.Errorf("%s: detail %q does not name the field", field, rej.Detail)
		}
	}
}

// Messages are msgpack maps with string keys (wire contract v1). A msgpack
// array is not a map, yet vmihailenco/msgpack decodes an array of the
// struct's field count positionally into the struct.
func TestDecodeIntentRejectsArrayEncodedStruct(t *testing.T) {
	arr := []any{1, "call", "intent-1", "acme", "k-1", "pay", map[string]any{"a": 1}, "", 0, nil, "", nil, nil, "", ""}
	in, rej := wire.DecodeIntent(codecMarshal(t, arr), []byte("acme/k-1"), wire.FromIntents)
	if rej == nil {
		t.Fatalf("array accepted as intent %+v", in)
	}
	if rej.Reason != codes.ReasonUndecodable {
		t.Errorf("reason %q, want undecodable", rej.Reason)
	}
}

// Deep nesting costs the decoder (recursive, unbounded) about 500 bytes
// of goroutine stack per level: a 1 MiB message of nested arrays grows one
// goroutine's stack to 512 MiB before CanonicalArgs' depth limit of 32 is
// ever checked. DecodeIntent should refuse the nesting while decoding.
func TestDecodeIntentBoundsNesting(t *testing.T) {
	var b bytes.Buffer
	head := codecMarshal(t, codecWith(map[string]any{"args": nil, "result": nil}))
	// Rewrite the fixmap header to add one field: "args": {"a": [[[...]]]}.
	b.WriteByte(head[0] + 1)
	b.Write(head[1:])
	b.Write(codecMarshal(t, "args"))
	b.Write([]byte{0x81, 0xa1, 'a'})
	b.Write(bytes.Repeat([]byte{0x91}, 100_000))
	b.WriteByte(0xc0)
	in, rej := wire.DecodeIntent(b.Bytes(), []byte("acme/k-1"), wire.FromIntents)
	if rej == nil {
		t.Fatalf("intent with args nested 100000 deep accepted (%d args)", len(in.Args))
	}
}

func TestIntentRoundTrip(t *testing.T) {
	cases := []*wire.Intent{
		{Type: wire.TypeCall, ID: "i-1", Tenant: "acme", Key: "order/42", Tool: "pay",
			Args:    map[string]any{"amount": int64(120), "note": "x", "items": []any{"a", int64(2)}, "meta": map[string]any{"z": true, "a": nil}},
			ReplyTo: "acme.answers", DeadlineMs: 1_700_000_000_123, Scope: &wire.Scope{RunID: "r", ThreadID: "t"}},
		{Type: wire.TypeCompensate, ID: "i-2", Tenant: "default", Key: "k"},
		{Type: wire.TypeResolve, ID: "i-3", Tenant: "t_1-x", Key: "k", Outcome: codes.StatusFailed,
			Error: &wire.ErrorInfo{Code: "declined", Message: "card declined"}, By: "reconciler", Reason: "probe said so",
			Result: map[string]any{"charge": "ch_1"}},
	}
	for _, in := range cases {
		b, err := wire.EncodeIntent(in)
		if err != nil {
			t.Fatal(err)
		}
		if in.V != wire.Version {
			t.Errorf("EncodeIntent did not set v: %d", in.V)
		}
		got, rej := wire.DecodeIntent(b, []byte(in.RoutingKey()), wire.FromControl)
		if rej != nil {
			t.Fatalf("%s: %v", in.ID, rej)
		}
		if !reflect.DeepEqual(got, in) {
			t.Errorf("round trip of %s:\n got %#v\nwant %#v", in.ID, got, in)
		}
	}
}

func TestResultRoundTrip(t *testing.T) {
	cases := []*wire.Result{
		{IntentID: "i-1", Type: "call", Tenant: "acme", Key: "k", Tool: "pay", Status: codes.StatusSucceeded,
			Result: map[string]any{"id": "ch_1", "amount": int64(120)}, WasReplay: true, OriginalIntentID: "i-0",
			OriginalCalledAt: 1_700_000_000_000, CompletedAt: 1_700_000_000_500, PreviousStatus: codes.StatusNotExecuted, Attempt: 2},
		{IntentID: "i-2", Tenant: "acme", Key: "k", Status: codes.StatusRejected,
			Error: &wire.ErrorInfo{Code: codes.ReasonInvalidField, Message: "field tool is required"}},
		{IntentID: "i-3", Tenant: "default", Key: "k", Status: codes.StatusPending},
		{IntentID: "i-4", Tenant: "acme", Key: "k", Tool: "transfer", Status: codes.StatusPending, OriginalIntentID: "i-4", Attempt: 1,
			Error: &wire.ErrorInfo{Code: codes.ErrAwaitingApproval, Message: "waits"}, ApprovalUntil: 1_700_000_600_000},
	}
	for _, r := range cases {
		b, err := wire.EncodeResult(r)
		if err != nil {
			t.Fatal(err)
		}
		if r.V != wire.Version {
			t.Errorf("EncodeResult did not set v")
		}
		got, err := wire.DecodeResult(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Errorf("round trip:\n got %#v\nwant %#v", got, r)
		}
		if got.AwaitingApproval() != (r.ApprovalUntil > 0) {
			t.Errorf("%s: AwaitingApproval %v", r.IntentID, got.AwaitingApproval())
		}
	}
	// Unknown fields are ignored, and the v1 field names are the contract.
	b := codecMarshal(t, map[string]any{"v": 1, "intent_id": "i", "tenant": "a", "key": "k", "status": "failed",
		"error": map[string]any{"code": "c", "message": "m"}, "was_replay": true, "original_called_at": 5, "completed_at": 6, "new_field": []any{1}})
	got, err := wire.DecodeResult(b)
	if err != nil {
		t.Fatal(err)
	}
	want := &wire.Result{V: 1, IntentID: "i", Tenant: "a", Key: "k", Status: "failed", Error: &wire.ErrorInfo{Code: "c", Message: "m"},
		WasReplay: true, OriginalCalledAt: 5, CompletedAt: 6}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decode by field names:\n got %#v\nwant %#v", got, want)
	}
	if _, err := wire.DecodeResult([]byte{0xc1}); err == nil {
		t.Error("DecodeResult accepted garbage")
	}
}

func TestDeadLetterRoundTrip(t *testing.T) {
	d := &wire.DeadLetter{Reason: codes.ReasonUndecodable, Detail: "x", Topic: "tool.intents", Partition: 3, Offset: 99,
		IntentID: "i", Tenant: "acme", Key: "k", Headers: map[string]string{"traceparent": "00-ab"}, Value: []byte{0xc1}, At: 7}
	b, err := wire.EncodeDeadLetter(d)
	if err != nil {
		t.Fatal(err)
	}
	got, err := wire.DecodeDeadLetter(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, d) {
		t.Errorf("got %#v\nwant %#v", got, d)
	}
}

func TestTerminal(t *testing.T) {
	for _, s := range []string{codes.StatusPending, codes.StatusCompensationPending} {
		if codes.Terminal(s) {
			t.Errorf("%s is terminal", s)
		}
	}
	for _, s := range []string{codes.StatusSucceeded, codes.StatusFailed, codes.StatusConflict, codes.StatusRejected, codes.StatusCompensated, codes.StatusNotExecuted} {
		if !codes.Terminal(s) {
			t.Errorf("%s is not terminal", s)
		}
	}
}

// vmihailenco/msgpack v5.4.1 preallocates a map[string]any of the length a
// map header declares, with no limit (Decoder.DecodeMap, used for every
// map inside an interface value and by salvage), and a []any of up to 1e6
// elements per array header. So a 45-byte intent whose args hold
// {"a": <map32 header of 2^32-1 entries>} kills the executor with a fatal
// "out of memory" (not a recoverable panic), and it does so again on every
// restart when the record is consumed again: a poison pill. DecodeIntent
// must refuse a container that declares more elements than bytes remain.
func TestDecodeIntentHugeContainerHeader(t *testing.T) {
	hostile := map[string][]byte{
		"map32 in args":          {0xdf, 0xff, 0xff, 0xff, 0xff},
		"nested array32 in args": bytes.Repeat([]byte{0xdd, 0x00, 0x0f, 0xff, 0xff}, 300),
	}
	for name, raw := range hostile {
		m := codecWith(map[string]any{"args": map[string]any{"a": msgpack.RawMessage(raw)}})
		_, rej := wire.DecodeIntent(codecMarshal(t, m), []byte("acme/k-1"), wire.FromIntents)
		if rej == nil || rej.Reason != codes.ReasonUndecodable {
			t.Errorf("%s: %v, want undecodable", name, rej)
		}
	}
	// The salvage path decodes the whole message into map[string]any.
	_, rej := wire.DecodeIntent([]byte{0xdf, 0xee, 0x42, 0x03, 0x99}, []byte("0"), wire.FromIntents)
	if rej == nil || rej.Reason != codes.ReasonUndecodable {
		t.Errorf("bare map32 header: %v", rej)
	}
	// A result carries an arbitrary value too.
	if _, err := wire.DecodeResult(codecMarshal(t, map[string]any{"v": 1, "result": msgpack.RawMessage{0xdf, 0xff, 0xff, 0xff, 0xff}})); err == nil {
		t.Error("DecodeResult accepted a map32 header of 2^32-1 entries with no entries")
	}
}

// TestAnExtensionWhereAMapIsDecodedIsRefused: msgpack decodes a map-typed
// field from an extension by reading its payload as the map's header, so
// an intent whose args (or a dead letter whose headers) are a 9-byte extension
// declaring 2^31 entries was a fatal out of memory in every member that
// consumed it. It is refused as undecodable instead.
func TestAnExtensionWhereAMapIsDecodedIsRefused(t *testing.T) {
	intent := []byte("\x85\xa1v\x01\xa4type\xa4call\xa2id\xa1i\xa3key\xa1k\xa4args\xc7\x05\x30\xdf\x7f\xff\xff\xff")
	if _, rej := wire.DecodeIntent(intent, []byte("default/k"), 0); rej == nil || rej.Reason != codes.ReasonUndecodable {
		t.Fatalf("intent: %v, want undecodable", rej)
	}
	dead := []byte("\x82\xa1v\x01\xa7headers\xd6\x30\xdf\x7f\xff\xff")
	if _, err := wire.DecodeDeadLetter(dead); err == nil {
		t.Fatal("dead letter with ext headers decoded, want an error")
	}
	if _, err := wire.DecodeCanonicalArgs([]byte("\xd6\xff\xdf\x7f\xff\xff")); err == nil {
		t.Fatal("ext args decoded, want an error")
	}
}
