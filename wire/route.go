package wire

import (
	"strings"
)

// RoutingKey is the Kafka record key of an intent, a command, an event and
// a result: "<tenant>/<key>". The tenant may not contain '/', so the split
// is unambiguous even when the idempotency key does.
func RoutingKey(tenant, key string) string {
	return tenant + "/" + key
}

// SplitRoutingKey is the inverse of RoutingKey.
func SplitRoutingKey(rk string) (tenant, key string, ok bool) {
	tenant, key, ok = strings.Cut(rk, "/")
	return tenant, key, ok
}

// Partition returns the owning partition of a routing key among n
// partitions. It is Kafka's Java default (murmur2, positive, modulo n) so
// that Java and franz-go producers land on the owner directly. Producers
// with another partitioner (librdkafka's default is CRC32) land elsewhere
// and their intents are forwarded: safety never depends on the producer.
func Partition(routingKey string, n int32) int32 {
	if n <= 0 {
		panic("wire: Partition with no partitions")
	}
	return int32((murmur2([]byte(routingKey)) & 0x7fffffff) % uint32(n))
}

// murmur2 is the exact hash of Kafka's org.apache.kafka.common.utils.Utils.
func murmur2(b []byte) uint32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	h := seed ^ uint32(len(b))
	for len(b) >= 4 {
		k := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
		b = b[4:]
	}
	switch len(b) {
	case 3:
		h ^= uint32(b[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(b[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(b[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}
