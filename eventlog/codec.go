package eventlog

import (
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/internal/msgpack/mpread"
	"github.com/atmostonce/toolexec/internal/msgpack/mpstruct"
	"github.com/atmostonce/toolexec/internal/msgpack/mpwrite"
	"github.com/atmostonce/toolexec/saga"
)

// Version of the event encoding.
const Version = 1

// ErrBadEvent is wrapped by every decode or validation failure.
var ErrBadEvent = errors.New("eventlog: bad event")

type envelope struct {
	V          int `msgpack:"v"`
	saga.Event `msgpack:",inline"`
}

// The envelope's msgpack: "v", then saga.Event's fields in order, the
// reflective codec's bytes (the log's format), written and read by
// planned codecs (internal/msgpack/mpstruct) rather than by reflection (which was
// an eighth of the member's CPU to encode and a quarter of a restore's to
// decode). What a plan declines (a field given twice, a struct given as
// an array, an ext, an input short or malformed, a snapshot) is left to
// reflection, which decides with the same errors as before, so Decode
// accepts and rejects exactly what it did. FuzzEncodeMatchesReflection
// and FuzzDecodeMatchesReflection hold the two together.
var (
	// eventCodec writes an event's fields after the envelope's "v"
	// (without copying the event into an envelope). A snapshot (rounds
	// only: a whole record) is reflection's.
	eventCodec = mpstruct.For[saga.Event](mpstruct.Options{Reflective: []string{"snapshot"}})
	// envelopeCodec reads an envelope. Its own names and strings may be a
	// str or a bin (reflection takes both; the waiter and the error inside
	// are read as str only), a kind or a status any integer narrowed as
	// reflection narrows it; an unknown name, and a snapshot, are
	// reflection's.
	envelopeCodec = mpstruct.For[envelope](mpstruct.Options{
		BinStrings: true, WrapUint8: true, StrictNames: true, Reflective: []string{"snapshot"},
	})
)

// encodeEvent writes the envelope of ev (version v).
func encodeEvent(v int, ev *saga.Event) ([]byte, error) {
	w := mpwrite.Get()
	defer mpwrite.Put(w)
	set := eventCodec.Present(ev)
	w.MapLen(1 + set.Len())
	w.Int("v", v)
	if !eventCodec.AppendFields(w, ev, set) {
		return msgpack.Marshal(&envelope{V: v, Event: *ev})
	}
	return w.Bytes()
}

// decodeEnvelope decodes b by its plan. ok false means the input is not
// one the plan takes: nothing is decided, the caller asks reflection.
func decodeEnvelope(b []byte) (*envelope, bool) {
	env := &envelope{}
	if !envelopeCodec.Unmarshal(b, env) {
		return nil, false
	}
	return env, true
}

// decodeByReflection is the reference decoder, and the one for what
// decodeEnvelope leaves to it.
func decodeByReflection(b []byte) (*envelope, error) {
	// The reflective decoder preallocates what a header declares: a
	// 5-byte array32 header in a snapshot's waiters is a fatal out of
	// memory, on every member that restores the partition. A value that
	// declares more than its bytes can hold is refused first; the depth
	// is bounded by the bytes alone, so whatever reflection can decode
	// still passes.
	if err := mpread.CheckShape(b, len(b)); err != nil {
		return nil, err
	}
	env := &envelope{}
	if err := msgpack.Unmarshal(b, env); err != nil {
		return nil, err
	}
	return env, nil
}

// Encode validates ev and encodes it as a msgpack map.
func Encode(ev *saga.Event) ([]byte, error) {
	if err := Check(ev); err != nil {
		return nil, err
	}
	b, err := encodeEvent(Version, ev)
	if err != nil {
		return nil, fmt.Errorf("eventlog: encode %s: %w", ev.Kind, err)
	}
	return b, nil
}

// Decode decodes and validates one event. It never panics on any input.
func Decode(b []byte) (*saga.Event, error) {
	env, ok := decodeEnvelope(b)
	if !ok {
		// Not a shape the plan takes: reflection decides, and words
		// the error.
		var err error
		if env, err = decodeByReflection(b); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadEvent, err)
		}
	}
	if env.V != Version {
		return nil, fmt.Errorf("%w: version %d, this build reads %d", ErrBadEvent, env.V, Version)
	}
	if err := Check(&env.Event); err != nil {
		return nil, err
	}
	return &env.Event, nil
}

// Check is the pair assertion run before writing and after reading.
func Check(ev *saga.Event) error {
	switch {
	case !ev.Kind.Valid():
		return fmt.Errorf("%w: kind %d", ErrBadEvent, ev.Kind)
	case ev.Kind == saga.EvRound:
		return checkRound(ev)
	case ev.Tenant == "" || ev.Key == "":
		return fmt.Errorf("%w: %s without tenant or key", ErrBadEvent, ev.Kind)
	case ev.At <= 0:
		return fmt.Errorf("%w: %s without a time", ErrBadEvent, ev.Kind)
	case ev.Kind == saga.EvStarted && (ev.Waiter == nil || ev.Tool == "" || len(ev.ArgsHash) == 0):
		return fmt.Errorf("%w: started without origin, tool or args hash", ErrBadEvent)
	case (ev.Kind == saga.EvOutcome || ev.Kind == saga.EvResolved || ev.Kind == saga.EvCompensationOutcome) && ev.CallID == "":
		return fmt.Errorf("%w: %s without call id", ErrBadEvent, ev.Kind)
	case (ev.Kind == saga.EvOutcome || ev.Kind == saga.EvResolved || ev.Kind == saga.EvCompensationOutcome) && !outcomeStatus(ev.Status):
		return fmt.Errorf("%w: %s with status %s", ErrBadEvent, ev.Kind, ev.Status)
	case ev.Kind == saga.EvCompensationStarted && (ev.Waiter == nil || ev.Waiter.IntentID == "" || ev.Tool == ""):
		return fmt.Errorf("%w: compensation_started without origin or tool", ErrBadEvent)
	case ev.Kind == saga.EvReadStarted && (ev.Waiter == nil || ev.IntentID == "" || ev.Tool == ""):
		return fmt.Errorf("%w: read_started without intent, origin or tool", ErrBadEvent)
	case ev.Kind == saga.EvReadAnswered && ev.IntentID == "":
		return fmt.Errorf("%w: read_answered without intent", ErrBadEvent)
	case ev.Kind == saga.EvSnapshot && (ev.Snapshot == nil || ev.Snapshot.Tenant != ev.Tenant || ev.Snapshot.Key != ev.Key || ev.Snapshot.Tool == ""):
		return fmt.Errorf("%w: snapshot without the record of its key", ErrBadEvent)
	}
	return checkApproval(ev)
}

// checkApproval checks the events of a request for approval: what it is
// for, and who decided it.
func checkApproval(ev *saga.Event) error {
	switch {
	case ev.Kind == saga.EvAwaitingApproval && (ev.Waiter == nil || ev.Waiter.IntentID == "" || ev.Tool == "" || len(ev.ArgsHash) == 0 || ev.ApprovalUntil <= 0):
		return fmt.Errorf("%w: awaiting_approval without origin, tool, args hash or deadline", ErrBadEvent)
	case (ev.Kind == saga.EvApproved || ev.Kind == saga.EvDenied) && (ev.CallID == "" || ev.IntentID == "" || len(ev.ArgsHash) == 0 || ev.By == ""):
		return fmt.Errorf("%w: %s without request, command, args hash or who decided", ErrBadEvent, ev.Kind)
	case ev.Kind == saga.EvApprovalLapsed && ev.CallID == "":
		return fmt.Errorf("%w: approval_lapsed without request", ErrBadEvent)
	}
	return nil
}

func checkRound(ev *saga.Event) error {
	switch {
	case ev.Tenant != "" || ev.Key != "":
		return fmt.Errorf("%w: round names a key", ErrBadEvent)
	case ev.At <= 0 || ev.RoundFrom < 0:
		return fmt.Errorf("%w: round without a time or with offset %d", ErrBadEvent, ev.RoundFrom)
	}
	return nil
}

// outcomeStatus reports whether s is what a call or compensation can end
// in (or, unknown, fall into doubt with).
func outcomeStatus(s saga.Status) bool {
	switch s {
	case saga.StatusSucceeded, saga.StatusFailed, saga.StatusUnknown, saga.StatusNotExecuted:
		return true
	}
	return false
}
