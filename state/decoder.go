package state

import (
	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/internal/mpread"
	"github.com/atmostonce/toolexec/saga"
)

// The record's msgpack, read field by field instead of by reflection
// (every Pebble read of a record, which the replays of cold keys
// and a restore are made of, decoded it reflectively). It reads what
// writeRecord writes; any other form (a field given twice, an ext, an
// unexpected type, a struct given as an array: a record of an older
// build or a corrupt one) makes it give up, and the record is decoded
// reflectively as before, so what is accepted and rejected does not
// change. FuzzRecordDecodeMatchesReflection checks the values are equal.

// unmarshalRecord decodes v into r: by hand when it can, else by
// reflection.
func unmarshalRecord(v []byte, r *saga.Record) error {
	if readRecord(v, r) {
		return nil
	}
	*r = saga.Record{}
	// As eventlog's reflective decode: a header that declares more than
	// its bytes can hold would be preallocated (a fatal out of memory for
	// an array32 of waiters).
	if err := mpread.CheckShape(v, len(v)); err != nil {
		return err
	}
	return msgpack.Unmarshal(v, r)
}

// readRecord reads a record's map, or reports false.
func readRecord(v []byte, r *saga.Record) bool {
	rd := mpread.New(v)
	n, ok := rd.MapLen()
	if !ok {
		return false
	}
	var seen uint32
	for range n {
		k, ok := rd.Key()
		if !ok {
			return false
		}
		bit, ok := readRecordField(&rd, r, string(k))
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
	}
	return true
}

// readRecordField reads the value of the field called name and returns
// the field's bit (0 for an unknown field, skipped).
func readRecordField(rd *mpread.Reader, r *saga.Record, name string) (uint32, bool) {
	var ok bool
	switch name {
	case "tenant":
		r.Tenant, ok = rd.String()
		return 1 << 0, ok
	case "key":
		r.Key, ok = rd.String()
		return 1 << 1, ok
	case "tool":
		r.Tool, ok = rd.String()
		return 1 << 2, ok
	case "args_hash":
		r.ArgsHash, ok = rd.Bytes()
		return 1 << 3, ok
	case "args":
		r.Args, ok = rd.Bytes()
		return 1 << 4, ok
	case "status":
		r.Status, ok = readStatus(rd)
		return 1 << 5, ok
	case "origin":
		return 1 << 6, rd.Waiter(&r.Origin)
	case "origin_answered":
		r.OriginAnswered, ok = rd.Bool()
		return 1 << 7, ok
	case "attempt":
		var n int64
		n, ok = rd.Int64()
		r.Attempt = int(n)
		return 1 << 8, ok
	case "prev_status":
		r.PrevStatus, ok = readStatus(rd)
		return 1 << 9, ok
	case "called_at":
		r.CalledAt, ok = rd.Int64()
		return 1 << 10, ok
	case "pending_until":
		r.PendingUntil, ok = rd.Int64()
		return 1 << 11, ok
	case "retention_ms":
		r.RetentionMs, ok = rd.Int64()
		return 1 << 12, ok
	case "completed_at":
		r.CompletedAt, ok = rd.Int64()
		return 1 << 13, ok
	case "expires_at":
		r.ExpiresAt, ok = rd.Int64()
		return 1 << 14, ok
	case "result":
		r.Result, ok = rd.Bytes()
		return 1 << 15, ok
	case "err":
		r.Err, ok = rd.Error()
		return 1 << 16, ok
	case "resolved_by":
		r.ResolvedBy, ok = rd.String()
		return 1 << 17, ok
	case "waiters":
		r.Waiters, ok = readWaiters(rd)
		return 1 << 18, ok
	case "comp":
		r.Comp, ok = readCompensation(rd)
		return 1 << 19, ok
	case "dk":
		r.DownstreamKey, ok = rd.String()
		return 1 << 20, ok
	case "last_event_at":
		r.LastEventAt, ok = rd.Int64()
		return 1 << 21, ok
	}
	return 0, rd.Skip()
}

func readStatus(rd *mpread.Reader) (saga.Status, bool) {
	n, ok := rd.Uint8()
	return saga.Status(n), ok
}

func readWaiters(rd *mpread.Reader) ([]saga.Waiter, bool) {
	if rd.Nil() {
		return nil, true
	}
	n, ok := rd.ArrayLen()
	if !ok {
		return nil, false
	}
	ws := make([]saga.Waiter, n)
	for i := range ws {
		if !rd.Waiter(&ws[i]) {
			return nil, false
		}
	}
	return ws, true
}

// readCompensation reads a *Compensation: nil as nil, else its map.
func readCompensation(rd *mpread.Reader) (*saga.Compensation, bool) {
	if rd.Nil() {
		return nil, true
	}
	n, ok := rd.MapLen()
	if !ok {
		return nil, false
	}
	c := &saga.Compensation{}
	var seen uint16
	for range n {
		k, ok := rd.Key()
		if !ok {
			return nil, false
		}
		var bit uint16
		switch string(k) {
		case "tool":
			bit = 1 << 0
			c.Tool, ok = rd.String()
		case "origin":
			bit = 1 << 1
			ok = rd.Waiter(&c.Origin)
		case "started_at":
			bit = 1 << 2
			c.StartedAt, ok = rd.Int64()
		case "completed_at":
			bit = 1 << 3
			c.CompletedAt, ok = rd.Int64()
		case "prev_status":
			bit = 1 << 4
			c.PrevStatus, ok = readStatus(rd)
		case "pending_until":
			bit = 1 << 5
			c.PendingUntil, ok = rd.Int64()
		case "dk":
			bit = 1 << 6
			c.DownstreamKey, ok = rd.String()
		case "result":
			bit = 1 << 7
			c.Result, ok = rd.Bytes()
		case "err":
			bit = 1 << 8
			c.Err, ok = rd.Error()
		default:
			ok = rd.Skip()
		}
		if !ok || seen&bit != 0 {
			return nil, false
		}
		seen |= bit
	}
	return c, true
}
