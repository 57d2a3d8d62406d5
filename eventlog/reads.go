package eventlog

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/atmostonce/toolexec/overlay"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/state"
)

// Pending reads (saga/read.go) live in the store's auxiliary space, next to
// the records they are folded with: one entry per read_started event whose
// read_answered has not been seen, under "read/" + partition + the length
// of the routing key (2 bytes) + the routing key + the intent id.
//
// Why the routing key: intent ids are unique per emission of
// one agent, not across tenants. Keyed by partition and intent id alone,
// tenants alice and bob who each sent id req-1 to a read-only tool on the
// same partition shared one entry, and only one of them was answered.

var readPrefix = []byte(state.AuxReads)

// ReadPrefix is the aux prefix of partition p's pending reads.
func ReadPrefix(p int32) []byte {
	return binary.BigEndian.AppendUint32(append([]byte(nil), readPrefix...), uint32(p))
}

// ReadKey is the aux key of one pending read.
func ReadKey(p int32, tenant, key, intentID string) []byte {
	rk := tenant + "/" + key
	b := binary.BigEndian.AppendUint16(ReadPrefix(p), uint16(len(rk)))
	return append(append(b, rk...), intentID...)
}

// ReadKeyOf is the aux key of the pending read ev (read_started or
// read_answered) on p.
func ReadKeyOf(p int32, ev *saga.Event) []byte { return ReadKey(p, ev.Tenant, ev.Key, ev.IntentID) }

// MigrateReadKeys rewrites pending reads stored under the first layout
// (partition + intent id) to ReadKey's, so that a store written under it
// keeps its obligations. Idempotent; pending reads are few (they
// live from a read's start to its answer).
func MigrateReadKeys(st *state.Store) (int, error) {
	type move struct{ from, to, v []byte }
	var moves []move
	err := st.ScanAux(readPrefix, math.MaxInt, func(k, v []byte) error {
		ev, err := Decode(v)
		if err != nil || len(k) < len(readPrefix)+4 {
			return nil // not ours to judge: PendingReads reports it
		}
		p := int32(binary.BigEndian.Uint32(k[len(readPrefix):]))
		if want := ReadKeyOf(p, ev); string(want) != string(k) {
			moves = append(moves, move{append([]byte(nil), k...), want, append([]byte(nil), v...)})
		}
		return nil
	})
	if err != nil || len(moves) == 0 {
		return 0, err
	}
	b := st.NewBatch()
	for _, m := range moves {
		if err := b.DeleteAux(m.from); err != nil {
			b.Discard()
			return 0, err
		}
		if err := b.PutAux(m.to, m.v); err != nil {
			b.Discard()
			return 0, err
		}
	}
	return len(moves), b.Commit(state.Sync)
}

// Writer is the overlay.Writer of a store batch: records and checkpoints go
// to the store, pending reads to their aux keys (ReadKey), encoded like
// events.
type Writer struct{ *state.Batch }

// PutRead stores a pending read.
func (w Writer) PutRead(id overlay.ReadID, ev *saga.Event) error {
	v, err := Encode(ev)
	if err != nil {
		return err
	}
	return w.PutAux(ReadKey(id.P, id.Tenant, id.Key, id.IntentID), v)
}

// DeleteRead removes an answered read.
func (w Writer) DeleteRead(id overlay.ReadID) error {
	return w.DeleteAux(ReadKey(id.P, id.Tenant, id.Key, id.IntentID))
}

// ReadPending reports whether the view holds the read id as taken on and
// not answered.
func ReadPending(st *state.Store, id overlay.ReadID) (bool, error) {
	v, err := st.Aux(ReadKey(id.P, id.Tenant, id.Key, id.IntentID))
	return v != nil, err
}

// PendingReads lists up to limit pending reads of partition p.
func PendingReads(st *state.Store, p int32, limit int) ([]*saga.Event, error) {
	var out []*saga.Event
	err := st.ScanAux(ReadPrefix(p), limit, func(k, v []byte) error {
		ev, err := Decode(v)
		if err != nil {
			return fmt.Errorf("eventlog: pending read %q: %w", k, err)
		}
		out = append(out, ev)
		return nil
	})
	return out, err
}
