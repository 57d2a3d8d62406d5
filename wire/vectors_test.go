package wire_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/wire"
)

// The vectors shared with clients in other languages (clients/python reads
// the same file): owner partitions and canonical argument bytes, computed
// here by the executor's own code. TestClientVectors fails when the file
// and the code disagree, so a client that passes its vector test routes and
// canonicalises exactly as the executor does. Regenerate after a deliberate
// change with: go test ./wire -run TestClientVectors -update-vectors
var updateVectors = flag.Bool("update-vectors", false, "rewrite testdata/client-vectors.json from the code")

const vectorsFile = "testdata/client-vectors.json"

type clientVectors struct {
	Comment   string            `json:"comment"`
	Partition []partitionVector `json:"partition"`
	Canonical []canonicalVector `json:"canonical"`
	Numbers   []numberVector    `json:"numbers"`
	Keys      []keyVector       `json:"keys"`
}

// numberVector: a JSON number as a client writes it in a body to the
// gateway, and the canonical bytes of {"n": <it>} (wire.ParseNumber, then
// CanonicalArgs), or Error when the gateway refuses it. ArgsMsgpack,
// when set, is the value a client holds (a Python int or float) whose
// JSON it is: the client's canonical bytes of it must be the same, so
// that its journal and the executor agree over HTTP.
type numberVector struct {
	JSON         string `json:"json"`
	ArgsMsgpack  string `json:"args_msgpack_hex,omitempty"`
	CanonicalHex string `json:"canonical_hex,omitempty"`
	Error        bool   `json:"error,omitempty"`
}

// keyVector: an idempotency key (hex of its bytes), whether the wire's
// grammar takes it (wire.CheckKey), and, when it does, the Idempotency-Key
// header a client sends for it: an RFC 8941 string for printable ASCII, an
// RFC 9651 display string otherwise.
type keyVector struct {
	KeyHex string `json:"key_hex"`
	Valid  bool   `json:"valid"`
	Header string `json:"header,omitempty"`
}

// partitionVector: the routing key as hex (any bytes), the partition count
// and wire.Partition's answer.
type partitionVector struct {
	KeyHex     string `json:"key_hex"`
	Partitions int32  `json:"partitions"`
	Partition  int32  `json:"partition"`
}

// canonicalVector: the args map as one msgpack value, encoded loosely
// (floats for integers, keys unsorted, wide ints); the canonical bytes and
// SHA-256 the executor computes after decoding it as an intent's args, or
// Error when it refuses them (invalid_args).
type canonicalVector struct {
	Name         string `json:"name"`
	ArgsMsgpack  string `json:"args_msgpack_hex"`
	CanonicalHex string `json:"canonical_hex,omitempty"`
	SHA256Hex    string `json:"sha256_hex,omitempty"`
	Error        bool   `json:"error,omitempty"`
}

func TestClientVectors(t *testing.T) {
	if *updateVectors {
		writeVectors(t, generateVectors(t))
	}
	raw, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatal(err)
	}
	var v clientVectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", vectorsFile, err)
	}
	if len(v.Partition) < 100 || len(v.Canonical) < 20 || len(v.Numbers) < 20 || len(v.Keys) < 20 {
		t.Fatalf("%s holds too few vectors: %d partition, %d canonical, %d numbers, %d keys", vectorsFile, len(v.Partition), len(v.Canonical), len(v.Numbers), len(v.Keys))
	}
	checkNumberVectors(t, v.Numbers)
	for _, kv := range v.Keys {
		key, err := hex.DecodeString(kv.KeyHex)
		if err != nil {
			t.Fatal(err)
		}
		if got := wire.CheckKey(string(key)) == nil; got != kv.Valid {
			t.Errorf("CheckKey(%q) valid=%v, the file says %v", key, got, kv.Valid)
		}
	}
	for _, pv := range v.Partition {
		key, err := hex.DecodeString(pv.KeyHex)
		if err != nil {
			t.Fatal(err)
		}
		if got := wire.Partition(string(key), pv.Partitions); got != pv.Partition {
			t.Errorf("Partition(%x, %d) = %d, the file says %d", key, pv.Partitions, got, pv.Partition)
		}
	}
	for _, cv := range v.Canonical {
		enc, err := canonicalOfWire(t, cv.ArgsMsgpack)
		switch {
		case cv.Error && err == nil:
			t.Errorf("%s: accepted, the file says invalid_args", cv.Name)
		case !cv.Error && err != nil:
			t.Errorf("%s: %v", cv.Name, err)
		case !cv.Error && hex.EncodeToString(enc) != cv.CanonicalHex:
			t.Errorf("%s: canonical %x, the file says %s", cv.Name, enc, cv.CanonicalHex)
		case !cv.Error && hex.EncodeToString(wire.ArgsHash(enc)) != cv.SHA256Hex:
			t.Errorf("%s: hash differs from the file", cv.Name)
		}
	}
}

// canonicalOfWire decodes args the way the executor does (as the args of
// an intent read from Kafka) and canonicalises them.
func canonicalOfWire(t *testing.T, argsHex string) ([]byte, error) {
	t.Helper()
	args, err := hex.DecodeString(argsHex)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	buf.WriteByte(0x86) // a map of 6 fields, args last and raw
	for _, kv := range [][2]string{{"v", ""}, {"type", "call"}, {"id", "vec"}, {"key", "k"}, {"tool", "t"}} {
		mustEncode(t, &buf, kv[0])
		if kv[0] == "v" {
			mustEncode(t, &buf, 1)
		} else {
			mustEncode(t, &buf, kv[1])
		}
	}
	mustEncode(t, &buf, "args")
	buf.Write(args)
	in, rej := wire.DecodeIntent(buf.Bytes(), []byte("default/k"), wire.FromIntents)
	if rej != nil {
		return nil, fmt.Errorf("decode: %s: %s", rej.Reason, rej.Detail)
	}
	_, enc, err := wire.CanonicalArgs(in.Args)
	return enc, err
}

func mustEncode(t *testing.T, buf *bytes.Buffer, v any) {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	buf.Write(b)
}

func writeVectors(t *testing.T, v clientVectors) {
	t.Helper()
	out, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.FromSlash(vectorsFile), append(out, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

func generateVectors(t *testing.T) clientVectors {
	return clientVectors{
		Comment: "Generated by wire/vectors_test.go from wire.Partition and wire.CanonicalArgs; " +
			"read by clients/python/tests. Regenerate: go test ./wire -run TestClientVectors -update-vectors",
		Partition: partitionVectors(),
		Canonical: canonicalVectors(t),
		Numbers:   numberVectors(t),
		Keys:      keyVectors(),
	}
}

func partitionVectors() []partitionVector {
	keys := [][]byte{
		[]byte(""), []byte("a"), []byte("ab"), []byte("abc"), []byte("abcd"), []byte("21"),
		[]byte("default/order-1"), []byte("acme/refund-7"), []byte("acme/a/b/c"),
		[]byte("t_1-x/ключ/é"), []byte("default/ck1_0123456789abcdef0123456789abcdef"),
	}
	rng := rand.New(rand.NewPCG(15, 2026))
	for i := range 120 {
		k := make([]byte, i%41)
		for j := range k {
			k[j] = byte(rng.UintN(256))
		}
		keys = append(keys, k)
	}
	counts := []int32{1, 2, 3, 7, 12, 64, 1000, math.MaxInt32}
	var out []partitionVector
	for i, k := range keys {
		n := counts[i%len(counts)]
		out = append(out, partitionVector{KeyHex: hex.EncodeToString(k), Partitions: n, Partition: wire.Partition(string(k), n)})
		if i < 11 { // the named keys under every count
			for _, n := range counts {
				out = append(out, partitionVector{KeyHex: hex.EncodeToString(k), Partitions: n, Partition: wire.Partition(string(k), n)})
			}
		}
	}
	return out
}

// looseMap is a msgpack map written in the given key order, values encoded
// as they are (float64 stays float64): the way a careless client encodes.
type looseMap [][2]any

func (m looseMap) EncodeMsgpack(e *msgpack.Encoder) error {
	if err := e.EncodeMapLen(len(m)); err != nil {
		return err
	}
	for _, kv := range m {
		if err := e.Encode(kv[0]); err != nil {
			return err
		}
		if err := e.Encode(kv[1]); err != nil {
			return err
		}
	}
	return nil
}

func nested(depth int) any {
	var v any = "leaf"
	for range depth {
		v = looseMap{{"d", v}}
	}
	return v
}

func canonicalVectors(t *testing.T) []canonicalVector {
	cases := []struct {
		name string
		args looseMap
	}{
		{"empty", looseMap{}},
		{"doc example, 120.0 and unsorted", looseMap{{"currency", "EUR"}, {"amount", 120.0}}},
		{"doc example, 120", looseMap{{"amount", 120}, {"currency", "EUR"}}},
		{"wide int types", looseMap{{"i8", int8(-5)}, {"u16", uint16(65535)}, {"i64", int64(1)}, {"u64", uint64(7)}}},
		{"negative zero", looseMap{{"z", math.Copysign(0, -1)}}},
		{"float32", looseMap{{"f", float32(1.5)}, {"g", float32(120)}}},
		{"fractions", looseMap{{"a", 0.1}, {"b", -2.5}, {"c", 1e-300}}},
		{"large integral floats", looseMap{{"a", 1e18}, {"b", -0x1p63}, {"c", 0x1p63}, {"d", 1.8e19}, {"e", 1e300}, {"f", -1e19}}},
		{"int64 limits", looseMap{{"min", int64(math.MinInt64)}, {"max", int64(math.MaxInt64)}, {"umax", uint64(math.MaxUint64)}, {"u63", uint64(1<<63 + 5)}}},
		{"small ints", looseMap{{"a", 0}, {"b", 127}, {"c", 128}, {"d", 255}, {"e", 256}, {"f", -1}, {"g", -32}, {"h", -33}, {"i", 65536}, {"j", -2147483649}}},
		{"nested and sorted", looseMap{{"b", 1}, {"a", looseMap{{"z", []any{1.0, 2.5, math.Copysign(0, -1)}}, {"y", nil}}}, {"c", true}}},
		{"unicode keys", looseMap{{"z", 1}, {"é", 2}, {"Z", 3}, {"", 4}, {"aa", 5}, {"a", 6}, {"ключ", 7}, {"\u00ff", 8}, {"\U0001F600", 9}}},
		{"strings", looseMap{{"s", ""}, {"long", string(bytes.Repeat([]byte("x"), 300))}, {"u", "ünïcödé"}}},
		{"binary", looseMap{{"b", []byte{0, 1, 2, 255}}, {"e", []byte{}}}},
		{"booleans and nil", looseMap{{"t", true}, {"f", false}, {"n", nil}}},
		{"arrays", looseMap{{"a", []any{}}, {"b", []any{"x", 1, 2.0, nil, []any{looseMap{{"y", 1}, {"x", 2}}}}}}},
		{"many keys", manyKeys(20)},
		{"depth 32 (deepest accepted)", looseMap{{"d", nested(31)}}},
		{"depth 33", looseMap{{"d", nested(32)}}},
		{"NaN", looseMap{{"x", math.NaN()}}},
		{"+Inf", looseMap{{"x", math.Inf(1)}}},
		{"-Inf nested", looseMap{{"a", []any{looseMap{{"x", math.Inf(-1)}}}}}},
	}
	var out []canonicalVector
	for _, c := range cases {
		b, err := msgpack.Marshal(c.args)
		if err != nil {
			t.Fatal(err)
		}
		v := canonicalVector{Name: c.name, ArgsMsgpack: hex.EncodeToString(b)}
		enc, err := canonicalOfWire(t, v.ArgsMsgpack)
		if err != nil {
			v.Error = true
		} else {
			v.CanonicalHex = hex.EncodeToString(enc)
			v.SHA256Hex = hex.EncodeToString(wire.ArgsHash(enc))
		}
		out = append(out, v)
	}
	return out
}

func manyKeys(n int) looseMap {
	m := looseMap{}
	for i := n - 1; i >= 0; i-- {
		m = append(m, [2]any{fmt.Sprintf("k%02d", i), float64(i) / 2})
	}
	return m
}

// jsonNumberCanonical is what the gateway makes of a JSON number: the
// canonical bytes of {"n": ParseNumber(text)}.
func jsonNumberCanonical(text string) ([]byte, error) {
	n, err := wire.ParseNumber(text)
	if err != nil {
		return nil, err
	}
	_, enc, err := wire.CanonicalArgs(map[string]any{"n": n})
	return enc, err
}

func checkNumberVectors(t *testing.T, vs []numberVector) {
	t.Helper()
	for _, nv := range vs {
		enc, err := jsonNumberCanonical(nv.JSON)
		switch {
		case nv.Error && err == nil:
			t.Errorf("%s: accepted, the file says refused", nv.JSON)
		case !nv.Error && (err != nil || hex.EncodeToString(enc) != nv.CanonicalHex):
			t.Errorf("%s: %x, %v; the file says %s", nv.JSON, enc, err, nv.CanonicalHex)
		case nv.ArgsMsgpack != "":
			// The value's canonical form by the executor (from msgpack) is
			// the JSON's by the gateway.
			if wenc, err := canonicalOfWire(t, nv.ArgsMsgpack); err != nil || !bytes.Equal(wenc, enc) {
				t.Errorf("%s: the value's canonical bytes %x (%v) differ from its JSON's %x", nv.JSON, wenc, err, enc)
			}
		}
	}
}

// numberVectors: numbers as JSON bodies carry them. The ones with a value
// are what a client writes for a value it holds after canonicalising it
// (Python's json.dumps of canonicalize's result: an integral float in the
// integer range is an int by then, other floats in repr's shortest form).
func numberVectors(t *testing.T) []numberVector {
	held := []struct {
		json string
		val  any
	}{
		{"0", 0}, {"120", 120}, {"-1", -1}, {"9007199254740993", int64(9007199254740993)},
		{"9223372036854775807", int64(math.MaxInt64)}, {"9223372036854775808", uint64(1 << 63)}, {"9223372036854775808", 0x1p63},
		{"120", 120.0}, {"-9223372036854775808", -0x1p63},
		{"-9223372036854775808", int64(math.MinInt64)}, {"18446744073709551615", uint64(math.MaxUint64)},
		{"0.1", 0.1}, {"-2.5", -2.5}, {"0.30000000000000004", 0.30000000000000004}, {"5e-324", 5e-324},
		{"1e+20", 1e20}, {"1.8446744073709552e+19", 0x1p64}, {"-1.8446744073709552e+19", -0x1p64}, {"1.5e+300", 1.5e300},
		{"1.7976931348623157e+308", math.MaxFloat64}, {"4503599627370495.5", 4503599627370495.5},
	}
	var out []numberVector
	for _, h := range held {
		b, err := msgpack.Marshal(looseMap{{"n", h.val}})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, numberVector{JSON: h.json, ArgsMsgpack: hex.EncodeToString(b)})
	}
	// What other clients write: one number in several spellings, and what
	// no float or integer of the wire holds.
	for _, s := range []string{"120.0", "1.2e2", "12000e-2", "-0", "-0.0", "9007199254740993.0", "9.007199254740993e15",
		"18446744073709551616", "1e20", "0.1000000000000000055511151231257827021181583404541015625",
		"18446744073709551617", "-9223372036854775809", "0.10000000000000001", "9007199254740993.5", "1e309", "-1e309",
		"1e999999", "1e-400", "1" + strings.Repeat("0", 900)} {
		out = append(out, numberVector{JSON: s})
	}
	for i := range out {
		if enc, err := jsonNumberCanonical(out[i].JSON); err != nil {
			out[i].Error = true
		} else {
			out[i].CanonicalHex = hex.EncodeToString(enc)
		}
	}
	return out
}

// keyVectors: keys the grammar takes and refuses, with the header that
// carries each valid one.
func keyVectors() []keyVector {
	keys := []string{"a", "order-42", "run-7/step-3", "a b", `say "hi" \ x`, "ck1_0123456789abcdef0123456789abcdef01234567",
		"caf\u00e9", "cafe\u0301", "\u043a\u043b\u044e\u0447", "\U0001F600", "a%b", "...", ".a", "x\u200dy", "a\u200bb", "a\u2028b",
		"a\u00a0b", "a\u00adb", "a\ufeffb", "a\ufe0fb", "a\U000e0041b", "a\u3000b", "a\u2029b", "a\u1680b", strings.Repeat("k", 256),
		strings.Repeat("\u00e9", 128), "", ".", "..", "a\x00b", "a\tb", "a\x7fb", "a\u0085b", "a\u202eb", "\u2066x", "x\u061c", " a",
		"a ", "a\u00a0", "\u3000a", "a\u2028", "\xff", strings.Repeat("k", 257), strings.Repeat("\u00e9", 129)}
	var out []keyVector
	for _, k := range keys {
		kv := keyVector{KeyHex: hex.EncodeToString([]byte(k)), Valid: wire.CheckKey(k) == nil}
		if kv.Valid {
			kv.Header = headerForm(k)
		}
		out = append(out, kv)
	}
	return out
}

// headerForm is the Idempotency-Key a client sends for k: an RFC 8941
// string when k is printable ASCII, else an RFC 9651 display string
// (every byte outside printable ASCII, and '%' and '"', as %xx in lower
// case).
func headerForm(k string) string {
	ascii := true
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			ascii = false
		}
	}
	var b strings.Builder
	if ascii {
		b.WriteByte('"')
		for i := 0; i < len(k); i++ {
			if k[i] == '"' || k[i] == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(k[i])
		}
		b.WriteByte('"')
		return b.String()
	}
	b.WriteString(`%"`)
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x20 || c > 0x7e || c == '%' || c == '"' {
			fmt.Fprintf(&b, "%%%02x", c)
		} else {
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
