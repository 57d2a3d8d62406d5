package wire

import (
	"time"

	"github.com/atmostonce/toolexec/codes"
)

// ErrorInfo is a machine-readable code and a human message.
type ErrorInfo struct {
	Code    string `msgpack:"code" json:"code"`
	Message string `msgpack:"message,omitempty" json:"message,omitempty"`
	// Refusal is, in an answer only, the kind of an invalid_command that a
	// caller acts on (codes.Refusal*); read it with Result.Refusal.
	Refusal string `msgpack:"refusal,omitempty" json:"refusal,omitempty"`
}

// Result is the answer to one intent, keyed like it.
type Result struct {
	V                int        `msgpack:"v" json:"v"`
	IntentID         string     `msgpack:"intent_id" json:"intent_id"`
	Type             string     `msgpack:"type,omitempty" json:"type,omitempty"`
	Tenant           string     `msgpack:"tenant" json:"tenant"`
	Key              string     `msgpack:"key" json:"key"`
	Tool             string     `msgpack:"tool,omitempty" json:"tool,omitempty"`
	Status           string     `msgpack:"status" json:"status"`
	Result           any        `msgpack:"result,omitempty" json:"result,omitempty"`
	Error            *ErrorInfo `msgpack:"error,omitempty" json:"error,omitempty"`
	WasReplay        bool       `msgpack:"was_replay" json:"was_replay"`
	OriginalIntentID string     `msgpack:"original_intent_id,omitempty" json:"original_intent_id,omitempty"`
	OriginalCalledAt int64      `msgpack:"original_called_at,omitempty" json:"original_called_at,omitempty"`
	CompletedAt      int64      `msgpack:"completed_at,omitempty" json:"completed_at,omitempty"`
	// PreviousStatus is set when an earlier attempt of this key was settled
	// not_executed and this intent therefore ran the tool anew.
	PreviousStatus string `msgpack:"previous_status,omitempty" json:"previous_status,omitempty"`
	Attempt        int    `msgpack:"attempt,omitempty" json:"attempt,omitempty"`
	// ReplyToError says why this answer is on the results topic and not on
	// the intent's reply_to (the topic does not exist, or was deleted
	// while the answer was owed).
	ReplyToError string `msgpack:"reply_to_error,omitempty" json:"reply_to_error,omitempty"`
	// RetryAfterMs is set on an answer that says the executor had no room
	// for the call (codes.Busy): how long to wait before sending the
	// same key again. Readers that do not know it see a not_executed
	// answer, which already means the key is free.
	RetryAfterMs int64 `msgpack:"retry_after_ms,omitempty" json:"retry_after_ms,omitempty"`
	// ApprovalUntil (unix ms), on a pending answer whose error code is
	// awaiting_approval: the key's request for a person's approval lapses
	// then (the key ends not_executed) unless someone decides first.
	ApprovalUntil int64 `msgpack:"approval_until,omitempty" json:"approval_until,omitempty"`
}

// AwaitingApproval reports whether r says its key waits for a person's
// approval: pending, with the error code awaiting_approval. Nothing ran;
// the same key and arguments get the final answer once it is decided.
func (r *Result) AwaitingApproval() bool {
	return r.Status == codes.StatusPending && r.Error != nil && r.Error.Code == codes.ErrAwaitingApproval
}

// Busy reports whether r says the executor had no room for the call:
// nothing ran and nothing was recorded, so the same key may be sent again
// after RetryAfter.
func (r *Result) Busy() bool {
	return r.Error != nil && codes.Busy(r.Status, r.Error.Code)
}

// RetryAfter is r's retry_after_ms as a duration; zero when absent.
func (r *Result) RetryAfter() time.Duration {
	return time.Duration(max(r.RetryAfterMs, 0)) * time.Millisecond
}

// DeadLetter is what lands on the dead-letter topic: the reason and the
// original bytes, so nothing is dropped silently.
type DeadLetter struct {
	V         int               `msgpack:"v"`
	Reason    string            `msgpack:"reason"`
	Detail    string            `msgpack:"detail"`
	Topic     string            `msgpack:"topic"`
	Partition int32             `msgpack:"partition"`
	Offset    int64             `msgpack:"offset"`
	IntentID  string            `msgpack:"intent_id,omitempty"`
	Tenant    string            `msgpack:"tenant,omitempty"`
	Key       string            `msgpack:"key,omitempty"`
	Headers   map[string]string `msgpack:"headers,omitempty"`
	// Value is the offending record's value, or its first
	// MaxDeadLetterPrefix bytes (ValueTruncated); ValueLen and ValueSHA256
	// are of the whole value (DeadLetterValue).
	Value          []byte `msgpack:"value"`
	ValueLen       int    `msgpack:"value_len"`
	ValueSHA256    []byte `msgpack:"value_sha256,omitempty"`
	ValueTruncated bool   `msgpack:"value_truncated,omitempty"`
	At             int64  `msgpack:"at"`
}
