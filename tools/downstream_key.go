package tools

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
)

// downstreamKeyDomain separates these hashes from any other use of SHA-256
// over the same parts; bump the version together with the "tk1_" prefix.
const downstreamKeyDomain = "toolexec/downstream-key/v1"

// DownstreamKey derives the key sent downstream as the Idempotency-Key: the
// same for the same (tenant, tool, key) on every attempt and in every
// investigation, different across tenants and tools. Each part is length-
// prefixed before hashing, so ("a/b","c") and ("a","b/c") cannot collide by
// concatenation. The result is "tk1_" followed by 40 lower-case hex digits
// (160 bits), printable ASCII safe for any header. It is a pure function.
func DownstreamKey(tenant, tool, key string) string {
	h := sha256.New()
	for _, part := range []string{downstreamKeyDomain, tenant, tool, key} {
		writePart(h, part)
	}
	return "tk1_" + hex.EncodeToString(h.Sum(nil)[:20])
}

// writePart writes len(s) as 8 big-endian bytes, then s.
func writePart(h hash.Hash, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}

// CallDownstreamKey is the downstream key of one call: recorded, the one
// its started event carries (a new one per call, saga.callKey); empty, the
// per-key key of calls started before keys were per call, which their
// retries and investigations keep.
func CallDownstreamKey(recorded, tenant, tool, key string) string {
	if recorded != "" {
		return recorded
	}
	return DownstreamKey(tenant, tool, key)
}
