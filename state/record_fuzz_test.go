package state

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/saga"
)

// fuzzNormRecord makes empty slices nil: the encoding omits them.
func fuzzNormRecord(r saga.Record) saga.Record {
	for _, b := range []*[]byte{&r.ArgsHash, &r.Args, &r.Result} {
		if len(*b) == 0 {
			*b = nil
		}
	}
	if len(r.Waiters) == 0 {
		r.Waiters = nil
	}
	if r.Comp != nil {
		c := *r.Comp
		if len(c.Result) == 0 {
			c.Result = nil
		}
		r.Comp = &c
	}
	return r
}

func FuzzRecordDecode(f *testing.F) {
	full := &saga.Record{Tenant: "acme", Key: "order/42", Tool: "pay", ArgsHash: []byte{1}, Args: []byte{0x80},
		Status: saga.StatusCompensating, Origin: saga.Waiter{IntentID: "i", ReplyTo: "r", Traceparent: "tp", Type: "call", At: 1},
		OriginAnswered: true, Attempt: 2, PrevStatus: saga.StatusNotExecuted, CalledAt: 1, PendingUntil: 2, RetentionMs: 3,
		CompletedAt: 4, ExpiresAt: 5, Result: []byte{0xc3}, Err: &saga.Error{Code: "c", Message: "m"}, ResolvedBy: "ops",
		Waiters: []saga.Waiter{{IntentID: "w"}}, Comp: &saga.Compensation{Tool: "refund", Origin: saga.Waiter{IntentID: "c"},
			StartedAt: 6, PrevStatus: saga.StatusSucceeded, Result: []byte{1}, Err: &saga.Error{Code: "e"}}, LastEventAt: 7}
	minimal := &saga.Record{Tenant: "acme", Key: "order/42", Status: saga.StatusStarted, Origin: saga.Waiter{IntentID: "i"}}
	for _, r := range []*saga.Record{full, minimal} {
		b, err := marshalRecord(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "acme", "order/42")
		f.Add(b, "acme", "other")
	}
	f.Add([]byte{0xc1}, "t", "k")
	f.Add([]byte{0x80}, "t", "k")
	f.Add([]byte{0x91, 0x01}, "t", "k")

	// The same bytes also go through the store: under a record key in a
	// real (in-memory) Pebble, read back with Get.
	s, err := Open("", Options{FS: vfs.NewMem(), CacheBytes: 1 << 20})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()

	f.Fuzz(func(t *testing.T, data []byte, tenant, key string) {
		r, err := decodeRecord(data, tenant, key)
		if err != nil {
			if r != nil {
				t.Fatal("a record and an error")
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
		} else {
			if r.Tenant != tenant || r.Key != key {
				t.Fatalf("record of %q/%q returned for %q/%q", r.Tenant, r.Key, tenant, key)
			}
			if err := checkRecord(r); err != nil {
				t.Fatalf("decoded record fails its check: %v", err)
			}
			b, err := marshalRecord(r)
			if err != nil {
				t.Fatalf("decoded record does not encode: %v", err)
			}
			again, err := decodeRecord(b, tenant, key)
			if err != nil {
				t.Fatalf("re-encoded record does not decode: %v", err)
			}
			if !reflect.DeepEqual(fuzzNormRecord(*again), fuzzNormRecord(*r)) {
				t.Fatalf("round trip changed the record:\n got %+v\nwant %+v", *again, *r)
			}
			if b2, _ := msgpack.Marshal(again); !bytes.Equal(b, b2) {
				t.Fatalf("encoding is not a fixed point:\n%x\n%x", b, b2)
			}
		}

		// Through Pebble: Get agrees with decodeRecord.
		if err := s.setRaw(recordKey(tenant, key), data); err != nil {
			t.Fatal(err)
		}
		got, gerr := s.Get(tenant, key)
		if (gerr == nil) != (err == nil) {
			t.Fatalf("Get err %v, decodeRecord err %v", gerr, err)
		}
		if gerr != nil && !errors.Is(gerr, ErrCorrupt) {
			t.Fatalf("Get error does not wrap ErrCorrupt: %v", gerr)
		}
		if gerr == nil && !reflect.DeepEqual(got, r) {
			t.Fatalf("Get = %+v, decodeRecord = %+v", got, r)
		}
		if err := s.db.Delete(recordKey(tenant, key), pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	})
}
