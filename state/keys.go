package state

import (
	"encoding/binary"
	"fmt"
)

// Key layout: every key space of the member's Pebble store, in one place.
// Every key starts with a one-byte space so that a scan of one space never
// meets another.
//
//	'r' <tenant> 0x00 <key>                        -> msgpack saga.Record
//	'c' <topic> 0x00 <partition u32>               -> next offset to apply (u64)
//	'x' <expires_at u64> <tenant> 0x00 <key>      -> empty: expiry index
//	'd' <partition u32> <tenant> 0x00 <key>        -> pending_until (u64): keys in doubt
//	'w' <partition u32> <tenant> 0x00 <key>        -> requested_at, until (u64 each), tool: keys awaiting approval
//	'a' <caller's key>                             -> caller's bytes: see Batch.PutAux
//
// The auxiliary space 'a' is shared by the packages that commit state of
// their own with the view; each owns the keys under one prefix below, and
// no prefix is a prefix of another, so that a scan of one (ScanAux) never
// meets another's keys.
const (
	spaceRecord     = 'r'
	spaceCheckpoint = 'c'
	spaceExpiry     = 'x'
	spaceDoubt      = 'd'
	spaceApproval   = 'w'
	spaceAux        = 'a'
)

// The auxiliary prefixes, and the package that owns each.
const (
	// AuxReads: eventlog's pending reads,
	// "read/" <partition u32> <routing key length u16> <routing key> <intent id>.
	AuxReads = "read/"
	// AuxAbortedTxns: the executor's own aborted transactions,
	// "txn/" <producer id u64> <epoch u16>.
	AuxAbortedTxns = "txn/"
	// AuxFacts: the executor's facts not yet delivered (executor/facts.go),
	// "fact/" <routing key> 0x00 <downstream key>.
	AuxFacts = "fact/"
	// AuxInvestigations: the reconciler's investigations of calls,
	// "inv/" <tenant> 0x00 <key>.
	AuxInvestigations = "inv/"
	// AuxCompensationInvestigations: the reconciler's investigations of
	// compensations, "invc/" <tenant> 0x00 <key>.
	AuxCompensationInvestigations = "invc/"
)

func auxKey(k []byte) []byte {
	return append([]byte{spaceAux}, k...)
}

func recordKey(tenant, key string) []byte {
	b := make([]byte, 0, 2+len(tenant)+len(key))
	b = append(b, spaceRecord)
	b = append(b, tenant...)
	b = append(b, 0)
	return append(b, key...)
}

func checkpointKey(topic string, partition int32) []byte {
	b := make([]byte, 0, 6+len(topic))
	b = append(b, spaceCheckpoint)
	b = append(b, topic...)
	b = append(b, 0)
	return binary.BigEndian.AppendUint32(b, uint32(partition))
}

func expiryKey(at int64, tenant, key string) []byte {
	b := make([]byte, 0, 10+len(tenant)+len(key))
	b = append(b, spaceExpiry)
	b = binary.BigEndian.AppendUint64(b, uint64(at))
	b = append(b, tenant...)
	b = append(b, 0)
	return append(b, key...)
}

func doubtPrefix(partition int32) []byte {
	return binary.BigEndian.AppendUint32([]byte{spaceDoubt}, uint32(partition))
}

func doubtKey(partition int32, tenant, key string) []byte {
	b := doubtPrefix(partition)
	b = append(b, tenant...)
	b = append(b, 0)
	return append(b, key...)
}

// splitTenantKey parses "<tenant> 0x00 <key>"; tenants never hold 0x00.
func splitTenantKey(b []byte) (tenant, key string, err error) {
	for i, c := range b {
		if c == 0 {
			return string(b[:i]), string(b[i+1:]), nil
		}
	}
	return "", "", fmt.Errorf("%w: key %q has no tenant separator", ErrCorrupt, b)
}

// prefixEnd is the smallest key greater than every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}
