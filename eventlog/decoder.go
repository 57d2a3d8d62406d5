package eventlog

import (
	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/internal/mpread"
)

// The event's msgpack, read field by field instead of by reflection
// (the reflective decoder was a quarter of a restore's CPU),
// with internal/mpread, the reader the state record's and the topics'
// decoders use. It is the inverse of encoder.go, and it reads what the
// reflective decoder reads, value for value, including nil and empty: a
// field in any order, any integer width msgpack allows (narrowed as
// reflection narrows it), str or bin for the envelope's strings, names
// and bytes, nil for any field (its zero). The Waiter and the Error are
// mpread's shared readers of them (str only, an unknown field inside
// skipped, as reflection skips it).
//
// What it does not handle it leaves to reflection, which then decides, so
// that Decode accepts and rejects exactly what it did before, with the
// same errors: a field of the envelope it does not know (reflection skips
// it), a field given twice (reflection merges a second map into the
// first), a struct written as an array, a snapshot (rounds only: a whole
// record), and any input that is short or malformed.
// FuzzDecodeMatchesReflection holds the two to the same results.

// decodeEnvelope decodes b without reflection. ok false means the input
// is not one this decoder handles: nothing is decided, the caller asks
// reflection.
func decodeEnvelope(b []byte) (env *envelope, ok bool) {
	r := mpread.New(b)
	n, ok := r.MapLen()
	if !ok {
		return nil, false
	}
	env = &envelope{}
	var seen uint32
	for range n {
		name, ok := r.KeyOrBin()
		if !ok {
			return nil, false
		}
		f, known := eventFields[string(name)]
		if !known || seen&f.bit != 0 {
			return nil, false // unknown, or given twice: reflection's
		}
		seen |= f.bit
		if !f.read(&r, env) {
			return nil, false
		}
	}
	return env, true
}

// eventField reads one field of the envelope, reporting false for a form
// it leaves to reflection; bit marks it as read.
type eventField struct {
	bit  uint32
	read readField
}

type readField func(r *mpread.Reader, env *envelope) bool

// eventFields are the envelope's fields by name, as envelope and
// saga.Event's tags name them (TestDecodeMatchesReflectionForEveryField
// sets each one).
var eventFields = fieldTable(map[string]readField{
	"v":              func(r *mpread.Reader, env *envelope) bool { return readInt(r, &env.V) },
	"kind":           func(r *mpread.Reader, env *envelope) bool { return readUint8(r, &env.Kind) },
	"tenant":         func(r *mpread.Reader, env *envelope) bool { return readString(r, &env.Tenant) },
	"key":            func(r *mpread.Reader, env *envelope) bool { return readString(r, &env.Key) },
	"at":             func(r *mpread.Reader, env *envelope) bool { return readInt64(r, &env.At) },
	"intent_id":      func(r *mpread.Reader, env *envelope) bool { return readString(r, &env.IntentID) },
	"tool":           func(r *mpread.Reader, env *envelope) bool { return readString(r, &env.Tool) },
	"args_hash":      func(r *mpread.Reader, env *envelope) bool { return readBytes(r, &env.ArgsHash) },
	"args":           func(r *mpread.Reader, env *envelope) bool { return readBytes(r, &env.Args) },
	"pending_ttl_ms": func(r *mpread.Reader, env *envelope) bool { return readInt64(r, &env.PendingTTL) },
	"retention_ms":   func(r *mpread.Reader, env *envelope) bool { return readInt64(r, &env.RetentionMs) },
	"attempt":        func(r *mpread.Reader, env *envelope) bool { return readInt(r, &env.Attempt) },
	"run_id":         func(r *mpread.Reader, env *envelope) bool { return readString(r, &env.RunID) },
	"thread_id":      func(r *mpread.Reader, env *envelope) bool { return readString(r, &env.ThreadID) },
	"dk":             func(r *mpread.Reader, env *envelope) bool { return readString(r, &env.DownstreamKey) },
	"call_id":        func(r *mpread.Reader, env *envelope) bool { return readString(r, &env.CallID) },
	"status":         func(r *mpread.Reader, env *envelope) bool { return readUint8(r, &env.Status) },
	"result":         func(r *mpread.Reader, env *envelope) bool { return readBytes(r, &env.Result) },
	"err": func(r *mpread.Reader, env *envelope) (ok bool) {
		env.Err, ok = r.Error()
		return ok
	},
	"by":     func(r *mpread.Reader, env *envelope) bool { return readString(r, &env.By) },
	"reason": func(r *mpread.Reader, env *envelope) bool { return readString(r, &env.Reason) },
	"forced": func(r *mpread.Reader, env *envelope) (ok bool) {
		env.Forced, ok = r.Bool()
		return ok
	},
	"waiter": func(r *mpread.Reader, env *envelope) (ok bool) {
		env.Waiter, ok = r.WaiterPtr()
		return ok
	},
	// A snapshot is a whole record (rounds only): reflection's.
	"snapshot":   func(r *mpread.Reader, _ *envelope) bool { return r.Nil() },
	"round_from": func(r *mpread.Reader, env *envelope) bool { return readInt64(r, &env.RoundFrom) },
})

// fieldTable gives each field its bit.
func fieldTable(reads map[string]readField) map[string]eventField {
	if len(reads) > 32 {
		panic("eventlog: more event fields than bits in decodeEnvelope's seen set")
	}
	t := make(map[string]eventField, len(reads))
	for name, read := range reads {
		t[name] = eventField{bit: 1 << len(t), read: read}
	}
	return t
}

// The envelope's field kinds, each read into its field as reflection
// would set it.

func readString(r *mpread.Reader, s *string) (ok bool) {
	*s, ok = r.StringOrBin()
	return ok
}

func readBytes(r *mpread.Reader, b *[]byte) (ok bool) {
	*b, ok = r.Bytes()
	return ok
}

func readInt64(r *mpread.Reader, n *int64) (ok bool) {
	*n, ok = r.Int64()
	return ok
}

func readInt(r *mpread.Reader, n *int) bool {
	v, ok := r.Int64()
	*n = int(v)
	return ok
}

// readUint8 reads a uint8 kind (saga.EventKind, saga.Status) as
// reflection does: any integer, wrapped to its low byte.
func readUint8[T ~uint8](r *mpread.Reader, n *T) bool {
	v, ok := r.Uint64()
	*n = T(v)
	return ok
}

// decodeByReflection is the reference decoder, and the one for what
// decodeEnvelope leaves to it.
func decodeByReflection(b []byte) (*envelope, error) {
	// The reflective decoder preallocates what a header declares: a
	// 5-byte array32 header in a snapshot's waiters is a fatal out of
	// memory, on every member that restores the partition. A value that
	// declares more than its bytes can hold is refused first; the depth
	// is bounded by the bytes alone, so whatever reflection can decode
	// still passes.
	if err := mpread.CheckShape(b, len(b)); err != nil {
		return nil, err
	}
	env := &envelope{}
	if err := msgpack.Unmarshal(b, env); err != nil {
		return nil, err
	}
	return env, nil
}
