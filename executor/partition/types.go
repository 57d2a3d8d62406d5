package partition

import (
	"github.com/atmostonce/toolexec/overlay"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/wire"
)

// Origin is what a produced record was produced for: a polled record
// (topic, partition, offset), or a finished call (Call, with partition
// -1). A record that cannot be produced marks its origin (poison.go).
type Origin struct {
	Topic     string
	Partition int32
	Offset    int64
	Call      string
}

// CallOrigin is the origin of the records a finished call's outcome
// produces: its routing key and call id (read ids are unique per key only).
func CallOrigin(rk, callID string) Origin { return Origin{Partition: -1, Call: rk + "\x00" + callID} }

// Poll is one tick's polled records, decoded, in poll order.
type Poll struct {
	Inputs []Input
}

// Input is one polled record, decoded by the caller.
type Input struct {
	Origin Origin
	// Salvage is what could be read of the record (id, tenant, key, tool,
	// reply_to, type), to answer it on its own when it is isolated.
	Salvage wire.Reject
	// Reject is set when the record cannot be decided (undecodable,
	// invalid, a bound broken): it is answered and dead-lettered.
	Reject *wire.Reject
	// Intent is the saga's input when Reject is nil, with the partition it
	// arrived on and the partition that owns its key.
	Intent saga.Input
	// Traceparent is the record's W3C traceparent header (bounded by the
	// caller), carried into answers.
	Traceparent string
	// RecordKey is the record's Kafka key: the key of a rejection's answer
	// when the rejection names no valid tenant and key.
	RecordKey []byte
}

// Call is a call to dispatch: a saga call with the partition and the
// ownership epoch it was started under.
type Call struct {
	saga.Call
	P     int32
	Epoch uint64
	RK    string // routing key "<tenant>/<key>"
	// Tracestate goes with Call.Traceparent when the loop traces calls (it
	// sets both to the decision's span, executor/trace.go); empty otherwise.
	Tracestate string
}

// Completion is a finished call as the caller converted its outcome
// (codes, results encoded and bounded).
type Completion struct {
	Call    Call
	Outcome saga.Completion
	// HadResult: the tool returned a result (stored, or too large to be).
	HadResult bool
}

// Event is one event to append to the events partition P.
type Event struct {
	P           int32
	Ev          saga.Event
	Traceparent string
	Origin      Origin
}

// Answer is one answer to produce.
type Answer struct {
	saga.Answer
	// RawKey: the Kafka key is RecordKey, the polled record's own (a
	// rejection that names no valid tenant and key); otherwise it is the
	// routing key.
	RawKey    bool
	RecordKey []byte
	// ReplyToError, when set, sends the answer to the results topic
	// instead of its reply_to, with this reason.
	ReplyToError string
	Origin       Origin
}

// DeadLetter is one dead letter: the polled record Poll.Inputs[In] with
// the reason. Bare ones keep only the facts, not the record's bytes.
type DeadLetter struct {
	In              int
	Reason, Detail  string
	ID, Tenant, Key string
	At              int64
	Bare            bool
	Origin          Origin
}

// Forward re-produces Poll.Inputs[In] to its owner partition.
type Forward struct {
	In     int
	Owner  int32
	Origin Origin
}

// Decisions is what one Step decided.
type Decisions struct {
	// Restore, when set, lists the partitions to restore before the poll
	// can be stepped. Nothing else is set, and nothing changed.
	Restore []int32

	Events      []Event
	Answers     []Answer
	DeadLetters []DeadLetter
	Forwards    []Forward
	// Calls are to be dispatched once the transaction committed.
	Calls []Call
	// Recorded are the completions whose outcome this transaction records.
	Recorded []Completion
	// Lost are completions dropped because their partition moved: the key
	// is in doubt for its owner, until the fact of a definite outcome
	// reaches it (executor/facts.go).
	Lost []Completion
	// Overlay holds the records and pending reads the events change, to
	// be written once the transaction committed.
	Overlay *overlay.Overlay

	// Refused are the intents refused for want of a place (admission.go),
	// counted once the transaction commits.
	Refused []Refused

	Inputs    int            // polled records decided
	Verdicts  map[string]int // decisions by verdict
	Snapshots int            // records restated by the snapshot round
	Rounds    int            // snapshot rounds this tick ended

	rounded bool                 // took a step of the snapshot round
	walks   map[int32]orphanWalk // where the orphan walks it moved stood before (orphans.go)
}

// Touched lists the events partitions the Decisions writes (the fence needs
// an offset commit for each).
func (rd *Decisions) Touched() map[int32]bool {
	out := map[int32]bool{}
	for _, ev := range rd.Events {
		out[ev.P] = true
	}
	return out
}
