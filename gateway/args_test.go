package gateway

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/wire"
	"github.com/atmostonce/toolexec/wire/jsonview"
)

// 120 and 120.0 become one number, as on the wire, so the canonical
// arguments (and duplicates) do not depend on the client's JSON.
func TestWireArgsNumbers(t *testing.T) {
	a, err := parseArgs([]byte(`{"a":120,"b":120.0,"c":1.5,"d":18446744073709551615,"e":[1,{"f":2.0}],"g":"x","h":null,"i":true}`))
	if err != nil {
		t.Fatal(err)
	}
	w, err := wireArgs(a)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": int64(120), "b": int64(120), "c": 1.5, "d": uint64(18446744073709551615),
		"e": []any{int64(1), map[string]any{"f": int64(2)}}, "g": "x", "h": nil, "i": true}
	if !reflect.DeepEqual(w, want) {
		t.Fatalf("got %#v", w)
	}
	if _, err := wireArgs(map[string]any{"x": mustNumber(t, `1e400`)}); err == nil {
		t.Fatal("an infinite number was accepted")
	}
}

// Numbers are exact: two numbers that differ are never one value on the
// wire (2^64+1 is refused, not taken as 2^64), one number written two ways
// is one value (9007199254740993 and 9007199254740993.0), and the schema
// checks the value the tool receives.
func TestWireArgsNumbersAreExact(t *testing.T) {
	canon := func(body string) (string, error) {
		a, err := parseArgs([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		w, err := wireArgs(a)
		if err != nil {
			return "", err
		}
		_, enc, err := wire.CanonicalArgs(w)
		return string(enc), err
	}
	if _, err := canon(`{"n":18446744073709551617}`); err == nil {
		t.Error("2^64+1 accepted: it would be replayed as 2^64")
	}
	if _, err := canon(`{"n":36893488147419103232}`); err == nil {
		t.Error("2^65 written as an integer accepted: the tool would receive 36893488147419103000")
	}
	if b, err := json.Marshal(jsonview.Value(map[string]any{"n": 0x1p65})); err != nil || string(b) != `{"n":3.6893488147419103232e+19}` {
		t.Errorf("a float of 2^65 in an answer: %s %v", b, err)
	}
	a, errA := canon(`{"n":9007199254740993}`)
	b, errB := canon(`{"n":9007199254740993.0}`)
	if errA != nil || errB != nil || a != b {
		t.Errorf("9007199254740993 and 9007199254740993.0 differ: %x %x %v %v", a, b, errA, errB)
	}
	w, err := wireArgs(mustArgs(t, `{"n":9007199254740993.0}`))
	if err != nil || w["n"] != int64(9007199254740993) {
		t.Errorf("the tool would receive %v (%T), %v", w["n"], w["n"], err)
	}
	tl := schemaTool(t, `{"type":"object","properties":{"n":{"type":"integer","maximum":9007199254740992}}}`)
	if errs := tl.validate(w); len(errs) == 0 {
		t.Error("the schema passed 9007199254740993 against a maximum of 9007199254740992")
	}
}

func mustArgs(t *testing.T, body string) map[string]any {
	t.Helper()
	a, err := parseArgs([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustNumber(t *testing.T, s string) any {
	a, err := parseArgs([]byte(`{"n":` + s + `}`))
	if err != nil {
		t.Fatal(err)
	}
	return a["n"]
}

func TestParseArgs(t *testing.T) {
	for _, ok := range []string{``, `  `, `{}`, `{"a":1}`, " {\"a\":1}\n"} {
		if _, err := parseArgs([]byte(ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{`[]`, `1`, `"x"`, `null`, `{"a":1}{}`, `{"a":`, `{"a":1} x`} {
		if _, err := parseArgs([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := decodeArgs(strings.NewReader(`{"x":"` + strings.Repeat("y", maxBodyBytes) + `"}`)); err != errBodyTooLong {
		t.Fatalf("large body: %v", err)
	}
}

func TestPreferWait(t *testing.T) {
	tests := map[string]time.Duration{"wait=5": 5 * time.Second, "respond-async, wait=7": 7 * time.Second, "WAIT = 3": 3 * time.Second,
		`wait="2"`: 2 * time.Second, "wait=0": 0, "wait=99999": time.Hour}
	for in, want := range tests {
		if got, ok := preferWait([]string{in}); !ok || got != want {
			t.Errorf("%q: %s %v, want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "wait=-1", "wait=soon", "handling=strict", "waiting=5"} {
		if got, ok := preferWait([]string{in}); ok {
			t.Errorf("%q: %s", in, got)
		}
	}
}

func TestBearer(t *testing.T) {
	for in, want := range map[string]string{"Bearer abc": "abc", "bearer abc": "abc", "BEARER  abc ": "abc"} {
		if got, ok := bearer(in); !ok || got != want {
			t.Errorf("%q: %q %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "Bearer", "Bearer ", "Basic abc", "abc"} {
		if got, ok := bearer(in); ok {
			t.Errorf("%q: %q", in, got)
		}
	}
}

// tools/list adds a required idempotency_key to every tool that keeps a
// record, and leaves the validator's schema as it was.
func TestMCPSchema(t *testing.T) {
	spec := tools.Spec{Name: "t", Class: tools.NativeKey, InputSchema: []byte(`{"type":"object","required":["a"],"properties":{"a":{"type":"string"}},"additionalProperties":false}`)}
	tl, err := newTool(spec)
	if err != nil {
		t.Fatal(err)
	}
	s := mcpSchema(tl)
	props := s["properties"].(map[string]any)
	if props[tools.ReservedArg] == nil || !reflect.DeepEqual(s["required"], []any{"a", tools.ReservedArg}) {
		t.Fatalf("schema %v", s)
	}
	if _, leaked := tl.schemaJSON["properties"].(map[string]any)[tools.ReservedArg]; leaked {
		t.Fatal("the listing changed the validator's schema")
	}
	// The key is removed before validation, so additionalProperties:false holds.
	args := map[string]any{"a": "x", tools.ReservedArg: "k"}
	key, msg := mcpKey(args, nil, tl)
	delete(args, tools.ReservedArg)
	if key != "k" || msg != "" || tl.validate(args) != nil {
		t.Fatalf("key %q msg %q errs %v", key, msg, tl.validate(args))
	}
	ro, _ := newTool(tools.Spec{Name: "r", Class: tools.ReadOnly})
	if _, ok := mcpSchema(ro)["properties"]; ok {
		t.Fatal("a read-only tool got an idempotency_key")
	}
	if k, msg := mcpKey(map[string]any{}, map[string]any{metaKey: "from-meta"}, tl); k != "from-meta" || msg != "" {
		t.Fatalf("meta key: %q %q", k, msg)
	}
	if _, msg := mcpKey(map[string]any{}, nil, tl); !strings.Contains(msg, "idempotency_key is required") {
		t.Fatalf("missing key: %q", msg)
	}
}

func schemaTool(t *testing.T, schema string) *tool {
	t.Helper()
	return mustTool(schema)
}

func mustTool(schema string) *tool {
	tl, err := newTool(tools.Spec{Name: "s", Class: tools.NativeKey, InputSchema: []byte(schema), MaxArgsBytes: tools.DefaultMaxArgsBytes})
	if err != nil {
		panic(err)
	}
	return tl
}

// _meta["io.toolexec/wait"] is capped at MaxWait however large: 1e10
// seconds overflowed a Duration to a negative wait.
func TestMCPWaitCapped(t *testing.T) {
	g := &Gateway{cfg: Config{DefaultWait: DefaultWait, MaxWait: MaxWait}}
	for _, n := range []float64{1e10, 9.3e9, 1e300, MaxWait.Seconds()} {
		if got := g.mcpWait(map[string]any{metaWait: n}); got != MaxWait {
			t.Errorf("wait %g: %s, want %s", n, got, MaxWait)
		}
	}
	if got := g.mcpWait(map[string]any{metaWait: 2.5}); got != 2500*time.Millisecond {
		t.Errorf("wait 2.5: %s", got)
	}
}

// MCP keys follow the wire's grammar, as HTTP and Kafka keys do.
func TestMCPKeyGrammar(t *testing.T) {
	tl := mustTool(`{"type":"object"}`)
	for _, k := range []string{"a\x00b", "a\u202eb", "trailing ", ".."} {
		if _, msg := mcpKey(map[string]any{tools.ReservedArg: k}, nil, tl); msg == "" {
			t.Errorf("key %q accepted", k)
		}
	}
	if k, msg := mcpKey(map[string]any{tools.ReservedArg: "caf\u00e9 1"}, nil, tl); k != "caf\u00e9 1" || msg != "" {
		t.Errorf("%q %q", k, msg)
	}
}

// Bodies that encoding/json would read as something else than they say
// are refused, so that different bytes are never one call: bytes that are
// not UTF-8, lone surrogates (all four would read as U+FFFD), and a
// member named twice at any depth (the last would win). A surrogate pair,
// a name escaped another way in another object, and the same name in two
// objects are fine.
func TestParseArgsRefusesInexactJSON(t *testing.T) {
	for name, body := range map[string]string{
		"byte 0xFF":         "{\"a\":\"x\xffy\"}",
		"byte 0xFE":         "{\"a\":\"\xfe\"}",
		"high surrogate":    `{"a":"\ud800"}`,
		"low surrogate":     `{"a":"\udfff"}`,
		"reversed pair":     `{"a":"\udc00\ud800"}`,
		"high then letter":  `{"a":"\ud800x"}`,
		"in a name":         `{"\ud800":1}`,
		"duplicate":         `{"a":1,"a":2}`,
		"duplicate escaped": `{"a":1,"\u0061":2}`,
		"nested duplicate":  `{"o":{"b":[1,{"c":1,"c":1}]}}`,
		"after an array":    `{"a":[1,2],"a":3}`,
	} {
		if _, err := parseArgs([]byte(body)); !errors.Is(err, errJSONText) {
			t.Errorf("%s: %q read without complaint (%v)", name, body, err)
		}
	}
	for name, body := range map[string]string{
		"a pair":              `{"a":"\ud83d\ude00"}`,
		"one name, 2 objects": `{"x":{"a":1},"y":{"a":1},"a":[{"a":1},{"a":2}]}`,
		"escaped quote":       `{"a":"\"\\u\"","b":"\\ud800"}`,
		"utf-8":               `{"café":"ключ 😀"}`,
	} {
		if _, err := parseArgs([]byte(body)); err != nil {
			t.Errorf("%s: %q refused: %v", name, body, err)
		}
	}
}
