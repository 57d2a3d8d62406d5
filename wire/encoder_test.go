package wire

import (
	"bytes"
	"testing"

	"github.com/atmostonce/toolexec/codes"
	"github.com/vmihailenco/msgpack/v5"
)

// checkResultEncoding: EncodeResult's bytes are msgpack.Marshal's.
func checkResultEncoding(t testing.TB, r *Result) {
	t.Helper()
	if r.V == 0 {
		r.V = Version
	}
	got, err := EncodeResult(r)
	if err != nil {
		t.Fatal(err)
	}
	want, err := msgpack.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("result %+v:\n hand-written %x\n reflective   %x", *r, got, want)
	}
}

// TestResultEncodeMatchesReflectionForEveryField: a bare answer, one with
// every field set, and the forms where msgpack changes width or leaves a
// field out, encode to the reflective codec's bytes.
func TestResultEncodeMatchesReflectionForEveryField(t *testing.T) {
	full := &Result{V: 1, IntentID: "i", Type: "call", Tenant: "t", Key: "k", Tool: "x", Status: codes.StatusSucceeded,
		Result: msgpack.RawMessage{0x81, 0xa1, 'a', 0x01}, Error: &ErrorInfo{Code: "c", Message: "m"}, WasReplay: true,
		OriginalIntentID: "o", OriginalCalledAt: 5, CompletedAt: -6, PreviousStatus: codes.StatusNotExecuted, Attempt: 300, ReplyToError: "gone"}
	for _, r := range []*Result{
		{}, full, {Error: &ErrorInfo{}, Attempt: -1, Result: msgpack.RawMessage{}}, {Result: msgpack.RawMessage(nil), Attempt: 1 << 40},
		{IntentID: string(make([]byte, 300)), Result: msgpack.RawMessage(append([]byte{0xc5, 0x01, 0x00}, make([]byte, 256)...))},
		// Left to reflection: omitempty looks through the interface.
		{Result: ""}, {Result: 0}, {Result: map[string]any{}}, {Result: map[string]any{"a": []any{1, "b"}}}, {Result: []byte{1}},
	} {
		checkResultEncoding(t, r)
	}
}

// FuzzResultEncodeMatchesReflection: for any answer, the hand-written
// encoding is the reflective codec's, byte for byte.
func FuzzResultEncodeMatchesReflection(f *testing.F) {
	f.Add("i", "t", "k", "succeeded", []byte{0x01}, "c", int64(5), 2, uint8(7))
	f.Add("", "", "", "", []byte(nil), "", int64(0), 0, uint8(0))
	f.Fuzz(func(t *testing.T, id, tenant, key, status string, result []byte, code string, at int64, attempt int, flags uint8) {
		r := &Result{V: int(flags >> 6), IntentID: id, Tenant: tenant, Key: key, Status: status, WasReplay: flags&1 != 0,
			OriginalCalledAt: at, CompletedAt: at / 2, Attempt: attempt}
		if flags&2 != 0 {
			r.Type, r.Tool, r.OriginalIntentID, r.PreviousStatus, r.ReplyToError = code, status, id, code, key
		}
		if flags&4 != 0 {
			r.Error = &ErrorInfo{Code: code, Message: status}
		}
		if flags&8 != 0 && len(result) > 0 {
			// A stored result is one msgpack value; wrap the bytes as a bin
			// so that the raw form stays well-formed.
			n := len(result)
			r.Result = msgpack.RawMessage(append([]byte{0xc6, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, result...))
		}
		if flags&16 != 0 {
			r.Result = code // left to reflection
		}
		checkResultEncoding(t, r)
	})
}
