package eventlog

import (
	"encoding/binary"
	"fmt"

	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/state"
)

// Pending reads (saga/read.go) live in the store's auxiliary space, next to
// the records they are folded with: one entry per read_started event whose
// read_answered has not been seen, under "read/" + partition + intent id.

var readPrefix = []byte("read/")

// ReadPrefix is the aux prefix of partition p's pending reads.
func ReadPrefix(p int32) []byte {
	return binary.BigEndian.AppendUint32(append([]byte(nil), readPrefix...), uint32(p))
}

// ReadKey is the aux key of one pending read.
func ReadKey(p int32, intentID string) []byte {
	return append(ReadPrefix(p), intentID...)
}

// PutReads writes pending reads into b: an event stores it, nil deletes it.
func PutReads(b *state.Batch, reads map[string]*saga.Event) error {
	for k, ev := range reads {
		if ev == nil {
			if err := b.DeleteAux([]byte(k)); err != nil {
				return err
			}
			continue
		}
		v, err := Encode(ev)
		if err != nil {
			return err
		}
		if err := b.PutAux([]byte(k), v); err != nil {
			return err
		}
	}
	return nil
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
