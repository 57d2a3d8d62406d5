package state

import (
	"fmt"

	"github.com/cockroachdb/pebble"

	"github.com/atmostonce/toolexec/saga"
)

// ScanRecords calls fn for up to limit records in key order, starting
// after the record of (afterTenant, afterKey) ("", "" from the first). It
// returns the number of records visited; fewer than limit means the scan
// reached the end. fn must not write to the store.
//
// It serves walks over every record that proceed a bounded step at a time
// (snapshot rounds) and the clearing of a partition after a gap.
func (s *Store) ScanRecords(afterTenant, afterKey string, limit int, fn func(rec *saga.Record) error) (int, error) {
	if err := s.acquire(); err != nil {
		return 0, err
	}
	defer s.mu.RUnlock()
	lower := []byte{spaceRecord}
	if afterTenant != "" || afterKey != "" {
		lower = append(recordKey(afterTenant, afterKey), 0) // the smallest key after it
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: []byte{spaceRecord + 1}})
	if err != nil {
		return 0, fmt.Errorf("state: scan records: %w", err)
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok && n < limit; ok = it.Next() {
		tenant, key, err := splitTenantKey(it.Key()[1:])
		if err != nil {
			return n, err
		}
		rec, err := decodeRecord(it.Value(), tenant, key)
		if err != nil {
			return n, err
		}
		if err := fn(rec); err != nil {
			return n, err
		}
		n++
	}
	return n, it.Error()
}
