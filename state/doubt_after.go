package state

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble"
)

// InDoubtAfter lists up to limit keys in doubt in partition p that come
// after (tenant, key) in the index's order (tenant, then 0x00, then key);
// with tenant empty, from the first. A caller that remembers the last key
// it got and passes it back walks the whole index in pages, which is how
// the reconciler moves its scan on instead of reading the same first
// limit keys every time.
func (s *Store) InDoubtAfter(p int32, tenant, key string, limit int) ([]Doubt, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	prefix := doubtPrefix(p)
	lower := prefix
	if tenant != "" {
		// The smallest index key greater than (tenant, key): the key itself
		// with a 0x00 appended.
		lower = append(doubtKey(p, tenant, key), 0)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, fmt.Errorf("state: scan doubt: %w", err)
	}
	defer it.Close()
	var out []Doubt
	for ok := it.First(); ok && len(out) < limit; ok = it.Next() {
		t, k, err := splitTenantKey(it.Key()[len(prefix):])
		if err != nil {
			return nil, err
		}
		var until int64
		if v := it.Value(); len(v) == 8 {
			until = int64(binary.BigEndian.Uint64(v))
		}
		out = append(out, Doubt{Tenant: t, Key: k, PendingUntil: until})
	}
	return out, it.Error()
}
