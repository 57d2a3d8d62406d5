package eventlog_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/saga"
)

const evAt = int64(1_700_000_000_000)

func evWaiter(id string) *saga.Waiter {
	return &saga.Waiter{IntentID: id, ReplyTo: "acme.answers", Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", Type: "call", At: evAt}
}

// evEvents returns one event of every kind, each with the fields its kind
// uses (saga's decide, complete and command code).
func evEvents() map[saga.EventKind]saga.Event {
	base := func(k saga.EventKind) saga.Event {
		return saga.Event{Kind: k, Tenant: "acme", Key: "order/42", At: evAt, IntentID: "i-1"}
	}
	started := base(saga.EvStarted)
	started.Tool, started.ArgsHash, started.Args = "pay", []byte{0xde, 0xad, 0xbe, 0xef}, []byte{0x81, 0xa1, 'n', 0x78}
	started.PendingTTL, started.RetentionMs, started.Attempt = 30_000, 86_400_000, 2
	started.RunID, started.ThreadID, started.Waiter = "run-1", "thread-1", evWaiter("i-1")

	outcome := base(saga.EvOutcome)
	outcome.CallID, outcome.Status, outcome.Result = "i-1", saga.StatusSucceeded, []byte{0x81, 0xa2, 'i', 'd', 0xa1, 'x'}

	failed := base(saga.EvOutcome)
	failed.CallID, failed.Status, failed.Err = "i-1", saga.StatusFailed, &saga.Error{Code: "declined", Message: "card declined"}

	replayed := base(saga.EvReplayed)
	replayed.IntentID = "i-2"

	coalesced := base(saga.EvCoalesced)
	coalesced.IntentID, coalesced.Waiter = "i-3", evWaiter("i-3")

	waiting := base(saga.EvWaiting)
	waiting.IntentID, waiting.Waiter = "i-4", evWaiter("i-4")

	conflicted := base(saga.EvConflicted)
	conflicted.IntentID, conflicted.Tool, conflicted.ArgsHash = "i-5", "pay", []byte{1, 2, 3}

	resolved := base(saga.EvResolved)
	resolved.IntentID, resolved.CallID, resolved.Status = "cmd-1", "i-1", saga.StatusNotExecuted
	resolved.By, resolved.Reason, resolved.Err = "reconciler", "probe: no such charge", &saga.Error{Code: "not_found"}

	compStarted := base(saga.EvCompensationStarted)
	compStarted.IntentID, compStarted.Tool, compStarted.Waiter = "comp-1", "refund", evWaiter("comp-1")
	compStarted.By, compStarted.Reason = "ops", "customer asked"

	compOutcome := base(saga.EvCompensationOutcome)
	compOutcome.IntentID, compOutcome.CallID, compOutcome.Status, compOutcome.Result = "comp-1", "comp-1", saga.StatusSucceeded, []byte{0xc3}

	expired := base(saga.EvExpired)
	expired.Reason = "retention passed"

	awaiting := base(saga.EvAwaitingApproval)
	awaiting.Tool, awaiting.ArgsHash, awaiting.Args, awaiting.RetentionMs, awaiting.Attempt = "transfer", []byte{7, 7}, []byte{0x80}, 86_400_000, 1
	awaiting.Waiter, awaiting.ApprovalUntil, awaiting.Approvers = evWaiter("i-1"), evAt+86_400_000, "alice, group:payments"

	approved := base(saga.EvApproved)
	approved.IntentID, approved.CallID, approved.ArgsHash, approved.By, approved.Reason = "op-1", "i-1", []byte{7, 7}, "alice", "invoice checked"

	denied := base(saga.EvDenied)
	denied.IntentID, denied.CallID, denied.ArgsHash, denied.By, denied.Reason = "op-2", "i-1", []byte{7, 7}, "bob", "wrong account"

	lapsed := base(saga.EvApprovalLapsed)
	lapsed.IntentID, lapsed.CallID, lapsed.Reason = "", "i-1", "no one approved the call before ..."

	return map[saga.EventKind]saga.Event{
		saga.EvStarted: started, saga.EvOutcome: outcome, saga.EvReplayed: replayed, saga.EvCoalesced: coalesced,
		saga.EvWaiting: waiting, saga.EvConflicted: conflicted, saga.EvResolved: resolved,
		saga.EvCompensationStarted: compStarted, saga.EvCompensationOutcome: compOutcome, saga.EvExpired: expired,
		saga.EvAwaitingApproval: awaiting, saga.EvApproved: approved, saga.EvDenied: denied, saga.EvApprovalLapsed: lapsed,
		// A failed outcome under a kind that is already in the map would
		// collide; the round trip test adds it separately.
	}
}

func TestEventRoundTripEveryKind(t *testing.T) {
	evs := evEvents()
	for k := saga.EvStarted; k <= saga.EvExpired; k++ {
		ev, ok := evs[k]
		if !ok {
			t.Fatalf("no test event for kind %s", k)
		}
		evRoundTrip(t, ev)
	}
	for k := saga.EvAwaitingApproval; k <= saga.EvApprovalLapsed; k++ {
		evRoundTrip(t, evs[k])
	}
	failed := evs[saga.EvOutcome]
	failed.Status, failed.Result, failed.Err = saga.StatusFailed, nil, &saga.Error{Code: "declined", Message: "card declined"}
	evRoundTrip(t, failed)
	unknown := evs[saga.EvOutcome]
	unknown.Status, unknown.Result = saga.StatusUnknown, nil
	evRoundTrip(t, unknown)
	// Minimal events: only what Check requires.
	evRoundTrip(t, saga.Event{Kind: saga.EvExpired, Tenant: "t", Key: "k", At: 1})
	evRoundTrip(t, saga.Event{Kind: saga.EvStarted, Tenant: "t", Key: "k", At: 1, Tool: "x", ArgsHash: []byte{0}, Waiter: &saga.Waiter{}})
}

func evRoundTrip(t *testing.T, ev saga.Event) {
	t.Helper()
	b, err := eventlog.Encode(&ev)
	if err != nil {
		t.Fatalf("%s: encode: %v", ev.Kind, err)
	}
	got, err := eventlog.Decode(b)
	if err != nil {
		t.Fatalf("%s: decode: %v", ev.Kind, err)
	}
	if !reflect.DeepEqual(*got, ev) {
		t.Errorf("%s: round trip\n got %+v\nwant %+v", ev.Kind, *got, ev)
	}
	// The envelope is a msgpack map carrying v=1 next to the event fields.
	var m map[string]any
	if err := msgpack.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: not a msgpack map: %v", ev.Kind, err)
	}
	if v, _ := m["v"].(int8); v != eventlog.Version {
		t.Errorf("%s: v = %#v", ev.Kind, m["v"])
	}
	if m["tenant"] != ev.Tenant || m["key"] != ev.Key {
		t.Errorf("%s: fields not inline: %v", ev.Kind, m)
	}
}

func TestEncodeRejectsInvalidEvents(t *testing.T) {
	evs := evEvents()
	mut := func(k saga.EventKind, f func(*saga.Event)) saga.Event {
		ev := evs[k]
		f(&ev)
		return ev
	}
	cases := map[string]saga.Event{
		"kind 0":                        mut(saga.EvExpired, func(e *saga.Event) { e.Kind = 0 }),
		"kind past the last":            mut(saga.EvExpired, func(e *saga.Event) { e.Kind = saga.EvExpired + 1 }),
		"kind 255":                      mut(saga.EvExpired, func(e *saga.Event) { e.Kind = 255 }),
		"no tenant":                     mut(saga.EvOutcome, func(e *saga.Event) { e.Tenant = "" }),
		"no key":                        mut(saga.EvReplayed, func(e *saga.Event) { e.Key = "" }),
		"no time":                       mut(saga.EvWaiting, func(e *saga.Event) { e.At = 0 }),
		"negative time":                 mut(saga.EvWaiting, func(e *saga.Event) { e.At = -1 }),
		"started without waiter":        mut(saga.EvStarted, func(e *saga.Event) { e.Waiter = nil }),
		"started without tool":          mut(saga.EvStarted, func(e *saga.Event) { e.Tool = "" }),
		"started without args hash":     mut(saga.EvStarted, func(e *saga.Event) { e.ArgsHash = nil }),
		"started with empty args hash":  mut(saga.EvStarted, func(e *saga.Event) { e.ArgsHash = []byte{} }),
		"outcome without call id":       mut(saga.EvOutcome, func(e *saga.Event) { e.CallID = "" }),
		"resolved without call id":      mut(saga.EvResolved, func(e *saga.Event) { e.CallID = "" }),
		"comp. outcome without call id": mut(saga.EvCompensationOutcome, func(e *saga.Event) { e.CallID = "" }),
		"awaiting without waiter":       mut(saga.EvAwaitingApproval, func(e *saga.Event) { e.Waiter = nil }),
		"awaiting without args hash":    mut(saga.EvAwaitingApproval, func(e *saga.Event) { e.ArgsHash = nil }),
		"awaiting without deadline":     mut(saga.EvAwaitingApproval, func(e *saga.Event) { e.ApprovalUntil = 0 }),
		"approved without request":      mut(saga.EvApproved, func(e *saga.Event) { e.CallID = "" }),
		"approved without args hash":    mut(saga.EvApproved, func(e *saga.Event) { e.ArgsHash = nil }),
		"approved without who":          mut(saga.EvApproved, func(e *saga.Event) { e.By = "" }),
		"denied without command":        mut(saga.EvDenied, func(e *saga.Event) { e.IntentID = "" }),
		"lapsed without request":        mut(saga.EvApprovalLapsed, func(e *saga.Event) { e.CallID = "" }),
	}
	for name, ev := range cases {
		if _, err := eventlog.Encode(&ev); !errors.Is(err, eventlog.ErrBadEvent) {
			t.Errorf("%s: Encode err %v, want ErrBadEvent", name, err)
		}
		if err := eventlog.Check(&ev); !errors.Is(err, eventlog.ErrBadEvent) {
			t.Errorf("%s: Check err %v, want ErrBadEvent", name, err)
		}
		// The same event written by someone else is refused on read.
		b, err := msgpack.Marshal(map[string]any{"v": 1, "kind": uint8(ev.Kind), "tenant": ev.Tenant, "key": ev.Key, "at": ev.At,
			"tool": ev.Tool, "args_hash": ev.ArgsHash, "call_id": ev.CallID, "waiter": ev.Waiter})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := eventlog.Decode(b); !errors.Is(err, eventlog.ErrBadEvent) {
			t.Errorf("%s: Decode err %v, want ErrBadEvent", name, err)
		}
	}
}

// An outcome must carry the status it settles the key with. One with no
// status (or "started") passes Check today; folded by saga.Apply it turns
// the record's status into none/started with an expiry, and the restore
// then stops for good at the next write (state's checkRecord refuses a
// record with status none), wedging the partition.
func TestCheckRejectsOutcomeWithoutSettledStatus(t *testing.T) {
	evs := evEvents()
	for _, k := range []saga.EventKind{saga.EvOutcome, saga.EvResolved, saga.EvCompensationOutcome} {
		for _, st := range []saga.Status{saga.StatusNone, saga.StatusStarted, saga.StatusCompensating, 200} {
			ev := evs[k]
			ev.Status = st
			if _, err := eventlog.Encode(&ev); !errors.Is(err, eventlog.ErrBadEvent) {
				t.Errorf("%s with status %d: Encode err %v, want ErrBadEvent", k, st, err)
			}
		}
	}
	// A compensation_started without its origin can never be completed:
	// compensation outcomes name the origin as call id, which must be set.
	ev := evs[saga.EvCompensationStarted]
	ev.Waiter = nil
	if _, err := eventlog.Encode(&ev); !errors.Is(err, eventlog.ErrBadEvent) {
		t.Errorf("compensation_started without waiter: Encode err %v", err)
	}
}

func TestDecodeRejectsWrongVersion(t *testing.T) {
	ev := evEvents()[saga.EvOutcome]
	for _, v := range []int{0, 2, -1, 1000} {
		b, err := msgpack.Marshal(map[string]any{"v": v, "kind": uint8(ev.Kind), "tenant": ev.Tenant, "key": ev.Key, "at": ev.At, "call_id": ev.CallID, "status": uint8(ev.Status)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = eventlog.Decode(b)
		if !errors.Is(err, eventlog.ErrBadEvent) || !strings.Contains(err.Error(), "version") {
			t.Errorf("v=%d: err %v", v, err)
		}
	}
	// Without v at all.
	b, _ := msgpack.Marshal(map[string]any{"kind": uint8(ev.Kind), "tenant": ev.Tenant, "key": ev.Key, "at": ev.At, "call_id": ev.CallID})
	if _, err := eventlog.Decode(b); !errors.Is(err, eventlog.ErrBadEvent) {
		t.Errorf("no v: err %v", err)
	}
}

func TestDecodeRejectsGarbage(t *testing.T) {
	for _, b := range [][]byte{nil, {}, {0xc1}, {0x81}, {0xa3, 'a', 'b', 'c'}, {0x92, 0x01, 0x02}} {
		if _, err := eventlog.Decode(b); !errors.Is(err, eventlog.ErrBadEvent) {
			t.Errorf("Decode(%x): err %v", b, err)
		}
	}
}

func TestDecodeIgnoresUnknownFields(t *testing.T) {
	ev := evEvents()[saga.EvOutcome]
	b, err := msgpack.Marshal(map[string]any{"v": 1, "kind": uint8(ev.Kind), "tenant": ev.Tenant, "key": ev.Key, "at": ev.At,
		"intent_id": ev.IntentID, "call_id": ev.CallID, "status": uint8(ev.Status), "result": ev.Result, "added_in_v1_1": map[string]any{"x": 1}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := eventlog.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*got, ev) {
		t.Errorf("got %+v\nwant %+v", *got, ev)
	}
}
