package saga

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"strconv"
)

// The domains separate these hashes from every other use of SHA-256 in
// the product; bump a version together with its prefix.
const (
	downstreamKeyDomain = "toolexec/downstream-key/v2" // per call, "tk2_"
	perKeyDomain        = "toolexec/downstream-key/v1" // per key, "tk1_"
)

// DownstreamKey is the downstream key of one call: recorded, the one its
// started event carries (a new one per call, callKey); empty, the per-key
// key of calls started before keys were per call, which their retries and
// investigations keep. This file is the one home of both derivations.
func DownstreamKey(recorded, tenant, tool, key string) string {
	if recorded != "" {
		return recorded
	}
	return perKeyDownstreamKey(tenant, tool, key)
}

// callKey derives the downstream idempotency key of one call: the key a
// tool sees in Idempotency-Key, the same on every retry of the call and in
// every investigation of it, and different for every new call of the same
// (tenant, key).
//
// Why per call and not per key: derived from (tenant, tool, key) only, a
// key settled not_executed, or expired and used again, would reach its
// tool under the old call's key: a probe
// of the new call could read the old call's status, and a native_key
// downstream could hand back the old result as a fresh success. The
// generation is the record's attempt counter together with the started
// event's time: the counter orders the calls within a record's life, and
// the time separates a call from one made before the record expired
// (the counter starts again at 1 then).
//
// The result is "tk2_" and 40 lower-case hex digits; every part is
// length-prefixed before hashing, so no two inputs collide by
// concatenation. Pure.
func callKey(tenant, tool, key string, attempt int, at int64) string {
	return "tk2_" + digest(downstreamKeyDomain, tenant, tool, key, strconv.Itoa(attempt), strconv.FormatInt(at, 10))
}

// perKeyDownstreamKey is the key of a call started before keys were per
// call: the same for the same (tenant, tool, key), "tk1_" and 40 hex
// digits.
func perKeyDownstreamKey(tenant, tool, key string) string {
	return "tk1_" + digest(perKeyDomain, tenant, tool, key)
}

// digest is 40 lower-case hex digits of SHA-256 over the parts, each
// length-prefixed, so that ("a/b","c") and ("a","b/c") cannot collide by
// concatenation.
func digest(parts ...string) string {
	h := sha256.New()
	for _, part := range parts {
		writePart(h, part)
	}
	return hex.EncodeToString(h.Sum(nil)[:20])
}

// writePart writes len(s) as 8 big-endian bytes, then s.
func writePart(h hash.Hash, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}
