package state

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble"
)

// Doubt is one key in doubt.
type Doubt struct {
	Tenant, Key  string
	PendingUntil int64
}

// InDoubt lists up to limit keys in doubt in partition p.
func (s *Store) InDoubt(p int32, limit int) ([]Doubt, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	prefix := doubtPrefix(p)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, fmt.Errorf("state: scan doubt: %w", err)
	}
	defer it.Close()
	var out []Doubt
	for ok := it.First(); ok && len(out) < limit; ok = it.Next() {
		tenant, key, err := splitTenantKey(it.Key()[len(prefix):])
		if err != nil {
			return nil, err
		}
		var until int64
		if v := it.Value(); len(v) == 8 {
			until = int64(binary.BigEndian.Uint64(v))
		}
		out = append(out, Doubt{Tenant: tenant, Key: key, PendingUntil: until})
	}
	return out, it.Error()
}

// CountInDoubt counts the keys in doubt in partition p.
func (s *Store) CountInDoubt(p int32) (int, error) {
	d, err := s.InDoubt(p, 1<<30)
	return len(d), err
}

// Expired lists up to limit (tenant, key) pairs whose retention ended at
// or before now.
func (s *Store) Expired(now int64, limit int) ([][2]string, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	lower := []byte{spaceExpiry}
	upper := binary.BigEndian.AppendUint64([]byte{spaceExpiry}, uint64(now)+1)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("state: scan expiry: %w", err)
	}
	defer it.Close()
	var out [][2]string
	for ok := it.First(); ok && len(out) < limit; ok = it.Next() {
		tenant, key, err := splitTenantKey(it.Key()[9:])
		if err != nil {
			return nil, err
		}
		out = append(out, [2]string{tenant, key})
	}
	return out, it.Error()
}

// Aux returns the value stored under key by Batch.PutAux, nil when absent.
func (s *Store) Aux(key []byte) ([]byte, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	v, closer, err := s.db.Get(auxKey(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state: get aux: %w", err)
	}
	defer closer.Close()
	return append([]byte(nil), v...), nil
}

// ScanAux calls fn for up to limit auxiliary entries whose key starts with
// prefix, in key order. fn gets copies; an error from fn stops the scan.
func (s *Store) ScanAux(prefix []byte, limit int, fn func(key, value []byte) error) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	lower := auxKey(prefix)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(lower)})
	if err != nil {
		return fmt.Errorf("state: scan aux: %w", err)
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok && n < limit; ok = it.Next() {
		k := append([]byte(nil), it.Key()[1:]...)
		if err := fn(k, append([]byte(nil), it.Value()...)); err != nil {
			return err
		}
		n++
	}
	return it.Error()
}
