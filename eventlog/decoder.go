package eventlog

import (
	"encoding/binary"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"

	"github.com/atmostonce/toolexec/saga"
)

// The event's msgpack, read field by field instead of by reflection
// (issue 17: the reflective decoder was a quarter of a restore's CPU).
// It is the inverse of encoder.go, and it reads what the reflective
// decoder reads, value for value, including nil and empty: a field in any
// order, any integer width msgpack allows (narrowed as reflection narrows
// it), str or bin for strings and bytes, nil for any field (its zero).
//
// What it does not handle it leaves to reflection, which then decides, so
// that Decode accepts and rejects exactly what it did before, with the
// same errors: a field it does not know (reflection skips it), a field
// given twice (reflection merges a second map into the first), a struct
// written as an array, a snapshot (rounds only: a whole record), and any
// input that is short or malformed. FuzzDecodeMatchesReflection holds
// the two to the same results.

// decodeEnvelope decodes b without reflection. ok false means the input
// is not one this decoder handles: nothing is decided, the caller asks
// reflection.
func decodeEnvelope(b []byte) (env *envelope, ok bool) {
	r := &mpReader{b: b}
	n, ok := r.mapLen()
	if !ok {
		return nil, false
	}
	env = &envelope{}
	var seen uint32
	for range n {
		name, ok := r.name()
		if !ok {
			return nil, false
		}
		f, known := eventFields[string(name)]
		if !known || seen&f.bit != 0 {
			return nil, false // unknown, or given twice: reflection's
		}
		seen |= f.bit
		if f.read(r, env); !r.ok() {
			return nil, false
		}
	}
	return env, true
}

// eventField reads one field of the envelope; bit marks it as read.
type eventField struct {
	bit  uint32
	read func(r *mpReader, env *envelope)
}

// eventFields are the envelope's fields by name, as envelope and
// saga.Event's tags name them (TestDecodeMatchesReflectionForEveryField
// sets each one).
var eventFields = fieldTable(map[string]func(r *mpReader, env *envelope){
	"v":              func(r *mpReader, env *envelope) { env.V = int(r.int64()) },
	"kind":           func(r *mpReader, env *envelope) { env.Kind = saga.EventKind(r.uint64()) },
	"tenant":         func(r *mpReader, env *envelope) { env.Tenant = r.str() },
	"key":            func(r *mpReader, env *envelope) { env.Key = r.str() },
	"at":             func(r *mpReader, env *envelope) { env.At = r.int64() },
	"intent_id":      func(r *mpReader, env *envelope) { env.IntentID = r.str() },
	"tool":           func(r *mpReader, env *envelope) { env.Tool = r.str() },
	"args_hash":      func(r *mpReader, env *envelope) { env.ArgsHash = r.bytes() },
	"args":           func(r *mpReader, env *envelope) { env.Args = r.bytes() },
	"pending_ttl_ms": func(r *mpReader, env *envelope) { env.PendingTTL = r.int64() },
	"retention_ms":   func(r *mpReader, env *envelope) { env.RetentionMs = r.int64() },
	"attempt":        func(r *mpReader, env *envelope) { env.Attempt = int(r.int64()) },
	"run_id":         func(r *mpReader, env *envelope) { env.RunID = r.str() },
	"thread_id":      func(r *mpReader, env *envelope) { env.ThreadID = r.str() },
	"dk":             func(r *mpReader, env *envelope) { env.DownstreamKey = r.str() },
	"call_id":        func(r *mpReader, env *envelope) { env.CallID = r.str() },
	"status":         func(r *mpReader, env *envelope) { env.Status = saga.Status(r.uint64()) },
	"result":         func(r *mpReader, env *envelope) { env.Result = r.bytes() },
	"err":            func(r *mpReader, env *envelope) { env.Err = readError(r) },
	"by":             func(r *mpReader, env *envelope) { env.By = r.str() },
	"reason":         func(r *mpReader, env *envelope) { env.Reason = r.str() },
	"forced":         func(r *mpReader, env *envelope) { env.Forced = r.bool() },
	"waiter":         func(r *mpReader, env *envelope) { env.Waiter = readWaiter(r) },
	"snapshot": func(r *mpReader, _ *envelope) {
		if !r.nilValue() {
			r.fail() // a whole record (rounds only): reflection's
		}
	},
	"round_from": func(r *mpReader, env *envelope) { env.RoundFrom = r.int64() },
})

// fieldTable gives each field its bit.
func fieldTable(reads map[string]func(r *mpReader, env *envelope)) map[string]eventField {
	if len(reads) > 32 {
		panic("eventlog: more event fields than bits in decodeEnvelope's seen set")
	}
	t := make(map[string]eventField, len(reads))
	for name, read := range reads {
		t[name] = eventField{bit: 1 << len(t), read: read}
	}
	return t
}

// readWaiter reads a *saga.Waiter: nil, or a map of its fields.
func readWaiter(r *mpReader) *saga.Waiter {
	if r.nilValue() {
		return nil
	}
	n, ok := r.mapLen()
	if !ok {
		r.fail()
		return nil
	}
	w := &saga.Waiter{}
	var seen uint8
	for range n {
		name, ok := r.name()
		if !ok {
			return nil
		}
		var bit uint8
		switch string(name) {
		case "id":
			w.IntentID, bit = r.str(), 1
		case "reply_to":
			w.ReplyTo, bit = r.str(), 2
		case "tp":
			w.Traceparent, bit = r.str(), 4
		case "type":
			w.Type, bit = r.str(), 8
		case "at":
			w.At, bit = r.int64(), 16
		}
		if bit == 0 || seen&bit != 0 {
			r.fail()
			return nil
		}
		seen |= bit
	}
	return w
}

// readError reads a *saga.Error: nil, or a map of its fields.
func readError(r *mpReader) *saga.Error {
	if r.nilValue() {
		return nil
	}
	n, ok := r.mapLen()
	if !ok {
		r.fail()
		return nil
	}
	e := &saga.Error{}
	var seen uint8
	for range n {
		name, ok := r.name()
		if !ok {
			return nil
		}
		var bit uint8
		switch string(name) {
		case "code":
			e.Code, bit = r.str(), 1
		case "message":
			e.Message, bit = r.str(), 2
		}
		if bit == 0 || seen&bit != 0 {
			r.fail()
			return nil
		}
		seen |= bit
	}
	return e
}

// mpReader reads msgpack values from a byte slice. The first value it
// cannot read makes it fail for good (ok false); every later read
// returns a zero value, so a caller checks ok once per field.
type mpReader struct {
	b      []byte
	i      int
	failed bool
}

func (r *mpReader) ok() bool { return !r.failed }

func (r *mpReader) fail() { r.failed = true }

// take returns the next n bytes.
func (r *mpReader) take(n int) []byte {
	if r.failed || n < 0 || n > len(r.b)-r.i {
		r.fail()
		return nil
	}
	s := r.b[r.i : r.i+n]
	r.i += n
	return s
}

func (r *mpReader) code() byte {
	s := r.take(1)
	if s == nil {
		return msgpcode.Nil
	}
	return s[0]
}

// nilValue consumes a nil and reports whether there was one.
func (r *mpReader) nilValue() bool {
	if !r.failed && r.i < len(r.b) && r.b[r.i] == msgpcode.Nil {
		r.i++
		return true
	}
	return false
}

// mapLen reads a map header (not nil: the callers take nil apart).
func (r *mpReader) mapLen() (int, bool) {
	c := r.code()
	switch {
	case r.failed:
		return 0, false
	case c >= msgpcode.FixedMapLow && c <= msgpcode.FixedMapHigh:
		return int(c & msgpcode.FixedMapMask), true
	case c == msgpcode.Map16:
		return int(r.be(2)), r.ok()
	case c == msgpcode.Map32:
		return int(r.be(4)), r.ok()
	}
	return 0, false
}

// be reads an n-byte big-endian unsigned integer.
func (r *mpReader) be(n int) uint64 {
	s := r.take(n)
	switch n {
	case 1:
		if s != nil {
			return uint64(s[0])
		}
	case 2:
		if s != nil {
			return uint64(binary.BigEndian.Uint16(s))
		}
	case 4:
		if s != nil {
			return uint64(binary.BigEndian.Uint32(s))
		}
	case 8:
		if s != nil {
			return binary.BigEndian.Uint64(s)
		}
	}
	return 0
}

// raw reads a str or bin value (as reflection's bytesLen does: either
// serves a string or a []byte); isNil for a nil.
func (r *mpReader) raw() (s []byte, isNil bool) {
	c := r.code()
	switch {
	case r.failed:
		return nil, false
	case c == msgpcode.Nil:
		return nil, true
	case msgpcode.IsFixedString(c):
		return r.take(int(c & msgpcode.FixedStrMask)), false
	case c == msgpcode.Str8 || c == msgpcode.Bin8:
		return r.take(int(r.be(1))), false
	case c == msgpcode.Str16 || c == msgpcode.Bin16:
		return r.take(int(r.be(2))), false
	case c == msgpcode.Str32 || c == msgpcode.Bin32:
		return r.take(int(r.be(4))), false
	}
	r.fail()
	return nil, false
}

// name reads a field name: a str or bin (a nil name is reflection's).
func (r *mpReader) name() ([]byte, bool) {
	s, isNil := r.raw()
	return s, !isNil && r.ok()
}

// str reads a string field: nil is "".
func (r *mpReader) str() string {
	s, _ := r.raw()
	return string(s)
}

// bytes reads a []byte field: nil is nil, an empty one is empty (not
// nil), and the bytes are a copy, as reflection's.
func (r *mpReader) bytes() []byte {
	s, isNil := r.raw()
	if isNil || r.failed {
		return nil
	}
	return append(make([]byte, 0, len(s)), s...)
}

// bool reads a bool field: nil is false.
func (r *mpReader) bool() bool {
	switch r.code() {
	case msgpcode.Nil, msgpcode.False:
		return false
	case msgpcode.True:
		return true
	}
	r.fail()
	return false
}

// uint64 reads an integer as reflection's DecodeUint64 does: a negative
// one wraps, nil is 0.
func (r *mpReader) uint64() uint64 {
	c := r.code()
	switch {
	case r.failed || c == msgpcode.Nil:
		return 0
	case msgpcode.IsFixedNum(c):
		return uint64(int8(c))
	case c == msgpcode.Uint8:
		return r.be(1)
	case c == msgpcode.Int8:
		return uint64(int8(r.be(1)))
	case c == msgpcode.Uint16:
		return r.be(2)
	case c == msgpcode.Int16:
		return uint64(int16(r.be(2)))
	case c == msgpcode.Uint32:
		return r.be(4)
	case c == msgpcode.Int32:
		return uint64(int32(r.be(4)))
	case c == msgpcode.Uint64 || c == msgpcode.Int64:
		return r.be(8)
	}
	r.fail() // a float, a string...: reflection's (and its error)
	return 0
}

// int64 reads an integer as reflection's DecodeInt64 does.
func (r *mpReader) int64() int64 { return int64(r.uint64()) }

// decodeByReflection is the reference decoder, and the one for what
// decodeEnvelope leaves to it.
func decodeByReflection(b []byte) (*envelope, error) {
	env := &envelope{}
	if err := msgpack.Unmarshal(b, env); err != nil {
		return nil, err
	}
	return env, nil
}
