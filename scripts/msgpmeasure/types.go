// Package msgpmeasure measures github.com/tinylib/msgp's generated code
// against the reflective codec (github.com/vmihailenco/msgpack/v5) and the
// hand-written one, for the structs the executor encodes per record: the
// event (with its envelope's version), the stored record, the intent and
// the answer. The types below are copies of saga.Event, saga.Record,
// wire.Intent and wire.Result, field for field and tag for tag (msgp
// reads the msgpack tags: //msgp:tag below); types_gen.go is msgp's
// output for them, made by go generate and not kept in the repository:
//
//	cd scripts/msgpmeasure && go generate && go test -v   (bytes and values)
//	scripts/msgpmeasure/bench.sh 5                        (CPU, against the hand-written codecs)
//
// A separate module, so that the product's go.mod does not take msgp.
package msgpmeasure

import "github.com/tinylib/msgp/msgp"

//go:generate go run github.com/tinylib/msgp -file types.go -o types_gen.go -tests=false

//msgp:tag msgpack

type Status uint8
type EventKind uint8

type Waiter struct {
	IntentID    string `msgpack:"id"`
	ReplyTo     string `msgpack:"reply_to,omitempty"`
	Traceparent string `msgpack:"tp,omitempty"`
	Type        string `msgpack:"type,omitempty"`
	At          int64  `msgpack:"at,omitempty"`
}

type Error struct {
	Code    string `msgpack:"code"`
	Message string `msgpack:"message,omitempty"`
}

// Envelope is eventlog's envelope: the version, then saga.Event inline
// (msgp has no inline: the fields are spelt out in order).
type Envelope struct {
	V             int       `msgpack:"v"`
	Kind          EventKind `msgpack:"kind"`
	Tenant        string    `msgpack:"tenant"`
	Key           string    `msgpack:"key"`
	At            int64     `msgpack:"at"`
	IntentID      string    `msgpack:"intent_id,omitempty"`
	Tool          string    `msgpack:"tool,omitempty"`
	ArgsHash      []byte    `msgpack:"args_hash,omitempty"`
	Args          []byte    `msgpack:"args,omitempty"`
	PendingTTL    int64     `msgpack:"pending_ttl_ms,omitempty"`
	RetentionMs   int64     `msgpack:"retention_ms,omitempty"`
	Attempt       int       `msgpack:"attempt,omitempty"`
	RunID         string    `msgpack:"run_id,omitempty"`
	ThreadID      string    `msgpack:"thread_id,omitempty"`
	DownstreamKey string    `msgpack:"dk,omitempty"`
	CallID        string    `msgpack:"call_id,omitempty"`
	Status        Status    `msgpack:"status,omitempty"`
	Result        []byte    `msgpack:"result,omitempty"`
	Err           *Error    `msgpack:"err,omitempty"`
	By            string    `msgpack:"by,omitempty"`
	Reason        string    `msgpack:"reason,omitempty"`
	Forced        bool      `msgpack:"forced,omitempty"`
	Waiter        *Waiter   `msgpack:"waiter,omitempty"`
	Snapshot      *Record   `msgpack:"snapshot,omitempty"`
	RoundFrom     int64     `msgpack:"round_from,omitempty"`
}

type Compensation struct {
	Tool          string `msgpack:"tool"`
	Origin        Waiter `msgpack:"origin"`
	StartedAt     int64  `msgpack:"started_at"`
	CompletedAt   int64  `msgpack:"completed_at,omitempty"`
	PrevStatus    Status `msgpack:"prev_status"`
	PendingUntil  int64  `msgpack:"pending_until,omitempty"`
	DownstreamKey string `msgpack:"dk,omitempty"`
	Result        []byte `msgpack:"result,omitempty"`
	Err           *Error `msgpack:"err,omitempty"`
}

type Record struct {
	Tenant         string        `msgpack:"tenant"`
	Key            string        `msgpack:"key"`
	Tool           string        `msgpack:"tool"`
	ArgsHash       []byte        `msgpack:"args_hash"`
	Args           []byte        `msgpack:"args,omitempty"`
	Status         Status        `msgpack:"status"`
	Origin         Waiter        `msgpack:"origin"`
	OriginAnswered bool          `msgpack:"origin_answered,omitempty"`
	Attempt        int           `msgpack:"attempt"`
	PrevStatus     Status        `msgpack:"prev_status,omitempty"`
	CalledAt       int64         `msgpack:"called_at"`
	PendingUntil   int64         `msgpack:"pending_until"`
	RetentionMs    int64         `msgpack:"retention_ms"`
	CompletedAt    int64         `msgpack:"completed_at,omitempty"`
	ExpiresAt      int64         `msgpack:"expires_at,omitempty"`
	Result         []byte        `msgpack:"result,omitempty"`
	Err            *Error        `msgpack:"err,omitempty"`
	ResolvedBy     string        `msgpack:"resolved_by,omitempty"`
	Waiters        []Waiter      `msgpack:"waiters,omitempty"`
	Comp           *Compensation `msgpack:"comp,omitempty"`
	DownstreamKey  string        `msgpack:"dk,omitempty"`
	LastEventAt    int64         `msgpack:"last_event_at"`
}

type Scope struct {
	RunID    string `msgpack:"run_id,omitempty"`
	ThreadID string `msgpack:"thread_id,omitempty"`
}

type ErrorInfo struct {
	Code    string `msgpack:"code"`
	Message string `msgpack:"message,omitempty"`
}

type Intent struct {
	V          int            `msgpack:"v"`
	Type       string         `msgpack:"type"`
	ID         string         `msgpack:"id"`
	Tenant     string         `msgpack:"tenant,omitempty"`
	Key        string         `msgpack:"key"`
	Tool       string         `msgpack:"tool,omitempty"`
	Args       map[string]any `msgpack:"args,omitempty"`
	ReplyTo    string         `msgpack:"reply_to,omitempty"`
	DeadlineMs int64          `msgpack:"deadline_ms,omitempty"`
	Scope      *Scope         `msgpack:"scope,omitempty"`
	Outcome    string         `msgpack:"outcome,omitempty"`
	Result     any            `msgpack:"result,omitempty"`
	Error      *ErrorInfo     `msgpack:"error,omitempty"`
	By         string         `msgpack:"by,omitempty"`
	Reason     string         `msgpack:"reason,omitempty"`
	CallID     string         `msgpack:"call_id,omitempty"`
	Force      bool           `msgpack:"force,omitempty"`
}

// Result is wire.Result but for its result, a msgpack.RawMessage held in
// an any: msgp writes an any holding a []byte as a bin, so the raw field
// is given msgp's own Raw type (written as it is, like RawMessage).
type Result struct {
	V                int        `msgpack:"v"`
	IntentID         string     `msgpack:"intent_id"`
	Type             string     `msgpack:"type,omitempty"`
	Tenant           string     `msgpack:"tenant"`
	Key              string     `msgpack:"key"`
	Tool             string     `msgpack:"tool,omitempty"`
	Status           string     `msgpack:"status"`
	Result           msgp.Raw   `msgpack:"result,omitempty"`
	Error            *ErrorInfo `msgpack:"error,omitempty"`
	WasReplay        bool       `msgpack:"was_replay"`
	OriginalIntentID string     `msgpack:"original_intent_id,omitempty"`
	OriginalCalledAt int64      `msgpack:"original_called_at,omitempty"`
	CompletedAt      int64      `msgpack:"completed_at,omitempty"`
	PreviousStatus   string     `msgpack:"previous_status,omitempty"`
	Attempt          int        `msgpack:"attempt,omitempty"`
	ReplyToError     string     `msgpack:"reply_to_error,omitempty"`
}
