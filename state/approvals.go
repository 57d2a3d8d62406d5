package state

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble"

	"github.com/atmostonce/toolexec/saga"
)

// Awaiting is one key of the approval index: a request for a person's
// approval that no one decided yet (saga.StatusAwaitingApproval).
type Awaiting struct {
	Tenant, Key string
	Tool        string
	RequestedAt int64 // unix ms
	Until       int64 // the request lapses then
}

func approvalPrefix(partition int32) []byte {
	return binary.BigEndian.AppendUint32([]byte{spaceApproval}, uint32(partition))
}

func approvalKey(partition int32, tenant, key string) []byte {
	b := approvalPrefix(partition)
	b = append(b, tenant...)
	b = append(b, 0)
	return append(b, key...)
}

// indexApproval puts a key awaiting approval in the approval index, with
// what the reconciler's gauges need without reading the record: its tool
// and times.
func (b *Batch) indexApproval(p int32, r *saga.Record) error {
	if r.Status != saga.StatusAwaitingApproval || r.Approval == nil {
		return nil
	}
	v := binary.BigEndian.AppendUint64(nil, uint64(r.Approval.RequestedAt))
	v = binary.BigEndian.AppendUint64(v, uint64(r.Approval.Until))
	v = append(v, r.Tool...)
	if err := b.b.Set(approvalKey(p, r.Tenant, r.Key), v, nil); err != nil {
		return fmt.Errorf("state: index approval: %w", err)
	}
	return nil
}

// AwaitingAfter lists up to limit keys of partition p awaiting approval
// that come after (tenant, key) in the index's order (tenant, then key);
// with tenant empty, from the first. Passing back the last key it
// returned walks the whole index in pages.
func (s *Store) AwaitingAfter(p int32, tenant, key string, limit int) ([]Awaiting, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	prefix := approvalPrefix(p)
	lower := prefix
	if tenant != "" {
		lower = append(approvalKey(p, tenant, key), 0)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, fmt.Errorf("state: scan approvals: %w", err)
	}
	defer it.Close()
	var out []Awaiting
	for ok := it.First(); ok && len(out) < limit; ok = it.Next() {
		a, err := awaitingOf(it.Key()[len(prefix):], it.Value())
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, it.Error()
}

func awaitingOf(k, v []byte) (Awaiting, error) {
	t, key, err := splitTenantKey(k)
	if err != nil {
		return Awaiting{}, err
	}
	if len(v) < 16 {
		return Awaiting{}, fmt.Errorf("%w: approval index entry of %q is %d bytes", ErrCorrupt, k, len(v))
	}
	return Awaiting{Tenant: t, Key: key, RequestedAt: int64(binary.BigEndian.Uint64(v)),
		Until: int64(binary.BigEndian.Uint64(v[8:])), Tool: string(v[16:])}, nil
}
