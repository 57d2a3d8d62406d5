package state

import (
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/saga"
)

// A settled record's codec, as a replay of a cold key reads it and a
// call writes it, by hand and by reflection. Run with
// go test ./state -run '^$' -bench Record -benchmem.

func benchRecord() *saga.Record {
	return &saga.Record{Tenant: "bench", Key: "k-123456", Tool: "bench.noop", ArgsHash: make([]byte, 32), Status: saga.StatusSucceeded,
		Origin: saga.Waiter{IntentID: "u-123456", ReplyTo: "results", At: 1764660000000}, OriginAnswered: true, Attempt: 1,
		CalledAt: 1764660000000, PendingUntil: 1764660030000, RetentionMs: 86400000, CompletedAt: 1764660000001,
		ExpiresAt: 1764746400001, Result: []byte{0x81, 0xa2, 'o', 'k', 0xc3}, LastEventAt: 1764660000001}
}

func BenchmarkDecodeRecordByHand(b *testing.B) {
	v, err := marshalRecord(benchRecord())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		var r saga.Record
		if err := unmarshalRecord(v, &r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeRecordByReflection(b *testing.B) {
	v, err := marshalRecord(benchRecord())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		var r saga.Record
		if err := msgpack.Unmarshal(v, &r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeRecordByHand(b *testing.B) {
	r := benchRecord()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := marshalRecord(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeRecordByReflection(b *testing.B) {
	r := benchRecord()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := msgpack.Marshal(r); err != nil {
			b.Fatal(err)
		}
	}
}
