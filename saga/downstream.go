package saga

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"strconv"
)

// downstreamKeyDomain separates these hashes from every other use of
// SHA-256 in the product; v2 is the per-call key.
const downstreamKeyDomain = "toolexec/downstream-key/v2"

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
	h := sha256.New()
	for _, part := range []string{downstreamKeyDomain, tenant, tool, key, strconv.Itoa(attempt), strconv.FormatInt(at, 10)} {
		writePart(h, part)
	}
	return "tk2_" + hex.EncodeToString(h.Sum(nil)[:20])
}

func writePart(h hash.Hash, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}
