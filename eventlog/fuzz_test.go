package eventlog_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/saga"
)

// fuzzNormEvent makes empty byte slices nil: the encoding omits them, so
// "absent" and "present but empty" are one value.
func fuzzNormEvent(ev saga.Event) saga.Event {
	for _, b := range []*[]byte{&ev.ArgsHash, &ev.Args, &ev.Result} {
		if len(*b) == 0 {
			*b = nil
		}
	}
	return ev
}

func FuzzEventDecode(f *testing.F) {
	for _, ev := range evEvents() {
		b, err := eventlog.Encode(&ev)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0xc1})
	f.Add([]byte{0x81, 0xa1, 'v', 0x01})
	f.Add([]byte{0x85, 0xa1, 'v', 0x01, 0xa4, 'k', 'i', 'n', 'd', 0x0a, 0xa6, 't', 'e', 'n', 'a', 'n', 't', 0xa1, 't', 0xa3, 'k', 'e', 'y', 0xa1, 'k', 0xa2, 'a', 't', 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := eventlog.Decode(data)
		if err != nil {
			if ev != nil {
				t.Fatal("an event and an error")
			}
			if !errors.Is(err, eventlog.ErrBadEvent) {
				t.Fatalf("error does not wrap ErrBadEvent: %v", err)
			}
			return
		}
		if err := eventlog.Check(ev); err != nil {
			t.Fatalf("decoded event fails Check: %v", err)
		}
		b, err := eventlog.Encode(ev)
		if err != nil {
			t.Fatalf("decoded event does not encode: %v", err)
		}
		again, err := eventlog.Decode(b)
		if err != nil {
			t.Fatalf("re-encoded event does not decode: %v", err)
		}
		if !reflect.DeepEqual(fuzzNormEvent(*again), fuzzNormEvent(*ev)) {
			t.Fatalf("round trip changed the event:\n got %+v\nwant %+v", *again, *ev)
		}
		// The encoding is a fixed point after one round.
		b2, err := eventlog.Encode(again)
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("encoding is not stable: %v\n%x\n%x", err, b, b2)
		}
	})
}
