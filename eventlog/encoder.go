package eventlog

import (
	"bytes"
	"sync"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/saga"
)

// The event's msgpack, written field by field instead of by reflection
// (issue 17: the reflective encoder, with its per-encode list of the
// omitempty fields, was an eighth of the member's CPU). The bytes are the
// reflective encoder's own, field for field and integer width for
// integer width (FuzzEncodeMatchesReflection): the log's format does not
// change, and either encoder can write an event the other's reader takes.
//
// The order and the names below are saga.Event's and envelope's, which
// the reflective encoder follows: a map of the non-empty fields (fields
// without omitempty always), int64 as 9 bytes, int in its shortest form,
// uint8 as 2 bytes. A snapshot event, which restates
// a whole record (rounds only), goes through reflection.

// encoderBufferKeep bounds the buffer a pooled encoder keeps between
// events: an event with a large result (up to a Kafka record) would
// otherwise pin its buffer in the pool for good.
const encoderBufferKeep = 64 << 10

type eventEncoder struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
}

var eventEncoders = sync.Pool{New: func() any {
	e := &eventEncoder{}
	e.enc = msgpack.NewEncoder(&e.buf)
	return e
}}

// encodeEvent writes the envelope of ev (version v) as msgpack.
func encodeEvent(v int, ev *saga.Event) ([]byte, error) {
	if ev.Snapshot != nil {
		return msgpack.Marshal(&envelope{V: v, Event: *ev})
	}
	e := eventEncoders.Get().(*eventEncoder)
	defer func() {
		if e.buf.Cap() <= encoderBufferKeep {
			e.buf.Reset()
			eventEncoders.Put(e)
		}
	}()
	w := fieldWriter{enc: e.enc}
	w.event(v, ev)
	if w.err != nil {
		return nil, w.err
	}
	return bytes.Clone(e.buf.Bytes()), nil
}

// fieldWriter writes map entries, keeping the first error.
type fieldWriter struct {
	enc *msgpack.Encoder
	err error
}

func (w *fieldWriter) keep(err error) {
	if w.err == nil {
		w.err = err
	}
}

func (w *fieldWriter) mapLen(n int)  { w.keep(w.enc.EncodeMapLen(n)) }
func (w *fieldWriter) name(s string) { w.keep(w.enc.EncodeString(s)) }

func (w *fieldWriter) str(name, s string) {
	w.name(name)
	w.keep(w.enc.EncodeString(s))
}

func (w *fieldWriter) int64(name string, n int64) {
	w.name(name)
	w.keep(w.enc.EncodeInt64(n))
}

func (w *fieldWriter) uint8(name string, n uint8) {
	w.name(name)
	w.keep(w.enc.EncodeUint8(n))
}

func (w *fieldWriter) bytes(name string, b []byte) {
	w.name(name)
	w.keep(w.enc.EncodeBytes(b))
}

// count counts the true conditions: the map's length is that of the
// fields it writes.
func count(conds ...bool) int {
	n := 0
	for _, c := range conds {
		if c {
			n++
		}
	}
	return n
}

// event writes the envelope: "v", then saga.Event's fields in order.
func (w *fieldWriter) event(v int, ev *saga.Event) {
	w.mapLen(5 + count(ev.IntentID != "", ev.Tool != "", len(ev.ArgsHash) > 0, len(ev.Args) > 0, ev.PendingTTL != 0,
		ev.RetentionMs != 0, ev.Attempt != 0, ev.RunID != "", ev.ThreadID != "", ev.DownstreamKey != "", ev.CallID != "",
		ev.Status != 0, len(ev.Result) > 0, ev.Err != nil, ev.By != "", ev.Reason != "", ev.Forced, ev.Waiter != nil,
		ev.RoundFrom != 0))
	w.name("v")
	w.keep(w.enc.EncodeInt(int64(v))) // an int: shortest form
	w.uint8("kind", uint8(ev.Kind))
	w.str("tenant", ev.Tenant)
	w.str("key", ev.Key)
	w.int64("at", ev.At)
	w.optStr("intent_id", ev.IntentID)
	w.optStr("tool", ev.Tool)
	w.optBytes("args_hash", ev.ArgsHash)
	w.optBytes("args", ev.Args)
	w.optInt64("pending_ttl_ms", ev.PendingTTL)
	w.optInt64("retention_ms", ev.RetentionMs)
	if ev.Attempt != 0 {
		w.name("attempt")
		w.keep(w.enc.EncodeInt(int64(ev.Attempt))) // an int: shortest form
	}
	w.optStr("run_id", ev.RunID)
	w.optStr("thread_id", ev.ThreadID)
	w.optStr("dk", ev.DownstreamKey)
	w.optStr("call_id", ev.CallID)
	if ev.Status != 0 {
		w.uint8("status", uint8(ev.Status))
	}
	w.optBytes("result", ev.Result)
	if ev.Err != nil {
		w.name("err")
		w.error(ev.Err)
	}
	w.optStr("by", ev.By)
	w.optStr("reason", ev.Reason)
	if ev.Forced {
		w.name("forced")
		w.keep(w.enc.EncodeBool(true))
	}
	if ev.Waiter != nil {
		w.name("waiter")
		w.waiter(ev.Waiter)
	}
	w.optInt64("round_from", ev.RoundFrom)
}

func (w *fieldWriter) optStr(name, s string) {
	if s != "" {
		w.str(name, s)
	}
}

func (w *fieldWriter) optBytes(name string, b []byte) {
	if len(b) > 0 {
		w.bytes(name, b)
	}
}

func (w *fieldWriter) optInt64(name string, n int64) {
	if n != 0 {
		w.int64(name, n)
	}
}

// waiter writes saga.Waiter: "id" always, the rest when not empty.
func (w *fieldWriter) waiter(wt *saga.Waiter) {
	w.mapLen(1 + count(wt.ReplyTo != "", wt.Traceparent != "", wt.Type != "", wt.At != 0))
	w.str("id", wt.IntentID)
	w.optStr("reply_to", wt.ReplyTo)
	w.optStr("tp", wt.Traceparent)
	w.optStr("type", wt.Type)
	w.optInt64("at", wt.At)
}

// error writes saga.Error: "code" always, "message" when not empty.
func (w *fieldWriter) error(e *saga.Error) {
	w.mapLen(1 + count(e.Message != ""))
	w.str("code", e.Code)
	w.optStr("message", e.Message)
}
