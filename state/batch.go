package state

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble"

	"github.com/atmostonce/toolexec/internal/msgpack/mpwrite"
	"github.com/atmostonce/toolexec/saga"
)

// Batch collects one tick's writes. Not safe for concurrent use.
type Batch struct {
	s      *Store
	b      *pebble.Batch
	hashes []uint64 // of the record keys set, for the store's key filter
	// created and deleted count the record keys put without a previous
	// record and deleted: the key filter's estimate of its keys.
	created, deleted int64
}

// NewBatch starts an empty batch.
func (s *Store) NewBatch() *Batch { return &Batch{s: s, b: s.db.NewBatch()} }

// Put stores the record of (tenant, key) in partition p, replacing prev
// (the record as it was before this tick, nil if none) and its index
// entries. A nil rec deletes the key.
func (b *Batch) Put(p int32, prev, rec *saga.Record) error {
	if prev != nil {
		b.unindex(p, prev)
	}
	if rec == nil {
		if prev == nil {
			return nil
		}
		b.deleted++
		return b.b.Delete(recordKey(prev.Tenant, prev.Key), nil)
	}
	if prev == nil {
		b.created++
	}
	if err := b.setRecord(rec); err != nil {
		return err
	}
	return b.index(p, rec)
}

// setRecord encodes rec into a pooled writer and hands its bytes to the
// batch, which copies them: one copy of every record written, where
// a cloned encoding (Writer.Bytes) made two on the tick's path.
func (b *Batch) setRecord(rec *saga.Record) error {
	if err := checkRecord(rec); err != nil {
		return err
	}
	w := mpwrite.Get()
	defer mpwrite.Put(w)
	if err := writeRecord(w, rec); err != nil {
		return err
	}
	v, err := w.Borrow()
	if err != nil {
		return fmt.Errorf("state: encode record: %w", err)
	}
	k := recordKey(rec.Tenant, rec.Key)
	if err := b.b.Set(k, v, nil); err != nil {
		return fmt.Errorf("state: put: %w", err)
	}
	b.hashes = append(b.hashes, b.s.filter.hash(k))
	return nil
}

func (b *Batch) index(p int32, r *saga.Record) error {
	if at := r.SweepAt(); at > 0 {
		if err := b.b.Set(expiryKey(at, r.Tenant, r.Key), nil, nil); err != nil {
			return fmt.Errorf("state: index expiry: %w", err)
		}
	}
	if err := b.indexApproval(p, r); err != nil {
		return err
	}
	if r.Status.InDoubt() {
		v := binary.BigEndian.AppendUint64(nil, uint64(r.PendingUntil))
		if err := b.b.Set(doubtKey(p, r.Tenant, r.Key), v, nil); err != nil {
			return fmt.Errorf("state: index doubt: %w", err)
		}
	}
	return nil
}

func (b *Batch) unindex(p int32, r *saga.Record) {
	if r.ExpiresAt > 0 {
		_ = b.b.Delete(expiryKey(r.ExpiresAt, r.Tenant, r.Key), nil)
	}
	_ = b.b.Delete(doubtKey(p, r.Tenant, r.Key), nil)
	if r.Status == saga.StatusAwaitingApproval {
		_ = b.b.Delete(approvalKey(p, r.Tenant, r.Key), nil)
	}
}

// SetCheckpoint records that topic/partition is applied up to next.
func (b *Batch) SetCheckpoint(topic string, partition int32, next int64) error {
	v := binary.BigEndian.AppendUint64(nil, uint64(next))
	if err := b.b.Set(checkpointKey(topic, partition), v, nil); err != nil {
		return fmt.Errorf("state: set checkpoint: %w", err)
	}
	return nil
}

// PutAux stores value under key in the auxiliary space: records a process
// keeps next to the view that must commit atomically with it (the
// reconciler's investigations). The store does not interpret them.
func (b *Batch) PutAux(key, value []byte) error {
	if err := b.b.Set(auxKey(key), value, nil); err != nil {
		return fmt.Errorf("state: put aux: %w", err)
	}
	return nil
}

// DeleteAux removes key from the auxiliary space; a missing key is fine.
func (b *Batch) DeleteAux(key []byte) error {
	if err := b.b.Delete(auxKey(key), nil); err != nil {
		return fmt.Errorf("state: delete aux: %w", err)
	}
	return nil
}

// Len is the batch's encoded size in bytes.
func (b *Batch) Len() int { return b.b.Len() }

// Commit applies the batch atomically with the chosen durability and
// closes it.
func (b *Batch) Commit(d Durability) error {
	opts := pebble.NoSync
	if d == Sync {
		opts = pebble.Sync
	}
	defer b.b.Close()
	if err := b.s.acquire(); err != nil {
		return err
	}
	defer b.s.mu.RUnlock()
	if err := b.apply(opts); err != nil {
		return fmt.Errorf("state: commit: %w", err)
	}
	b.s.filter.churn(b.created, b.deleted)
	if b.s.filter.outgrown() {
		b.s.filter.startScan(b.s)
	}
	return nil
}

// apply adds the batch's keys to the key filter, then applies it: in that
// order, and under the filter's gate, so that no reader finds a record
// whose key the filter rules out (recordfilter.go).
//
// Pebble fails a commit whose log write or sync failed with a fatal error
// (a panic, through quietLogger): apply turns it into ErrBroken and
// breaks the store, so that the member stops deciding on a view it could
// not write instead of crashing mid-tick.
func (b *Batch) apply(opts *pebble.WriteOptions) (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		msg, ok := r.(pebbleFatal)
		if !ok {
			panic(r)
		}
		s := string(msg)
		b.s.broken.Store(&s)
		err = fmt.Errorf("%w: %s", ErrBroken, s)
	}()
	f := b.s.filter
	f.gate.RLock()
	defer f.gate.RUnlock()
	f.admit(b.hashes)
	return b.s.db.Apply(b.b, opts)
}

// Discard drops the batch without applying it.
func (b *Batch) Discard() { _ = b.b.Close() }
