// Package codes is the closed vocabulary of wire contract v1: the status
// of an answer, the reason of a rejection, and the error codes the
// executor itself puts in answers. It is a leaf: no I/O and no import
// beyond the language, so that the pure state machines (package saga,
// package executor/partition) can name what they answer without
// depending on the Kafka client or the msgpack codec. This is their one
// spelling: package wire's messages carry them, and nothing re-exports them.
//
// docs/wire-format.md documents every value.
package codes

// Answer statuses. A "pending" answer is not terminal: the same intent gets
// a terminal answer once its key settles.
const (
	StatusSucceeded           = "succeeded"
	StatusFailed              = "failed"
	StatusNotExecuted         = "not_executed"
	StatusConflict            = "conflict"
	StatusPending             = "pending"
	StatusRejected            = "rejected"
	StatusCompensated         = "compensated"
	StatusCompensationFailed  = "compensation_failed"
	StatusCompensationPending = "compensation_pending"
	StatusResolved            = "resolved"
	// StatusApproved and StatusDenied answer an operator's approve and
	// deny commands (never an agent's intent): the command was applied.
	StatusApproved = "approved"
	StatusDenied   = "denied"
)

// Terminal reports whether status ends the intent's conversation.
func Terminal(status string) bool {
	return status != StatusPending && status != StatusCompensationPending
}

// Reject reasons. They label the dead-letter metric, so the set is closed.
const (
	ReasonUndecodable        = "undecodable"
	ReasonUnsupportedVersion = "unsupported_version"
	ReasonMissingField       = "missing_field"
	ReasonInvalidField       = "invalid_field"
	ReasonOversized          = "oversized"
	ReasonWrongTenant        = "wrong_tenant"
	ReasonKeyMismatch        = "key_mismatch"
	ReasonUnknownTool        = "unknown_tool"
	ReasonResolveOnIntents   = "resolve_not_allowed"
	ReasonBadReplyTo         = "bad_reply_to"
	ReasonInvalidArgs        = "invalid_args"
	ReasonDeadlineExceeded   = "deadline_exceeded"
	ReasonInvalidCommand     = "invalid_command"
	// ReasonUnproducible: a record the executor produced for this input
	// was refused (too large, or its destination vanished), so the input
	// is answered on its own.
	ReasonUnproducible = "unproducible"
)

// Error codes the executor writes into an answer's error (besides the
// reject reasons above and the codes tools report).
const (
	// ErrResultNotStored: the call succeeded, its result is not kept (too
	// large, not encodable, or its answer could not be produced).
	ErrResultNotStored = "result_not_stored"
	// ErrDrained: a call queued when its partition was released never
	// reached its tool.
	ErrDrained = "drained"
	// ErrInDoubt: a pending answer's code: the call may have reached its
	// tool, its pending_ttl passed, and the key waits to be settled.
	ErrInDoubt = "in_doubt"
	// ErrRunning: a lookup's pending answer for a call started within its
	// pending_ttl: still running, not yet in doubt.
	ErrRunning = "running"
	// ErrNoCallRunning: the key's owner found its call (or compensation)
	// started with no call of its own running: the member that started it
	// lost the partition or stopped. Recorded as an unknown outcome, so
	// that everyone waiting is told the key is in doubt.
	ErrNoCallRunning = "no_call_running"
	// ErrNotSent: a member started a call (its started event may have
	// committed) and never sent it: the transaction's end was unknown, so
	// the call was not made. Its not_executed fact carries this code.
	ErrNotSent = "not_sent"
	// ErrAwaitingApproval: a pending answer's code: the key's tool needs a
	// person's approval and nothing ran yet; the same intent (and every
	// duplicate with the same arguments) gets the final answer once the
	// request is approved and the call ends, denied, or lapses.
	ErrAwaitingApproval = "awaiting_approval"
	// ErrApprovalDenied: a failed answer's code: a person denied the call
	// (the message carries who and why); nothing ran.
	ErrApprovalDenied = "approval_denied"
	// ErrApprovalLapsed: a not_executed answer's code: no one approved the
	// call within its tool's approval_ttl (or the intent's deadline_ms);
	// nothing ran and the key is free again.
	ErrApprovalLapsed = "approval_lapsed"
	// ErrOverShare: a not_executed answer's code: the intent's tenant
	// holds its share of the calls its tool (or the member) may hold, so
	// the call was not started and nothing was recorded; the key is free.
	// The answer's retry_after_ms says when to send it again.
	ErrOverShare = "over_share"
	// ErrQueueFull: as ErrOverShare, but the tool (or the member) holds
	// as many calls as it may, whatever the tenant.
	ErrQueueFull = "queue_full"
)

// Busy reports whether an answer's status and error code say that the
// executor had no room for the call: nothing was started or recorded,
// and the same key may be sent again (after its retry_after_ms).
func Busy(status, code string) bool {
	return status == StatusNotExecuted && (code == ErrOverShare || code == ErrQueueFull)
}

// Refusals of a command that a caller acts on. The wire has one code for
// every command the key's state does not allow (ReasonInvalidCommand);
// the refusals a caller acts on also carry their own code in the answer's
// error.refusal. wire.Result.Refusal reads it back into sentinel errors,
// so that no caller matches text of its own.
const (
	// RefusalNoRecord: a compensate, approve, deny or lookup of a key that
	// has no record (never called, expired, or another tool's).
	RefusalNoRecord = "no_record"
	// RefusalMayStillLand: a compensate or resolve before the call's (or
	// compensation's) pending_ttl passed, without force: the call may still
	// reach its tool.
	RefusalMayStillLand = "may_still_land"
)

// The texts of the refusals in the answer's message. Readers of answers
// written without error.refusal (by an executor of an earlier release of
// contract v1) tell the kinds apart by these, so the saga keeps writing
// them.
const (
	RefusalNoRecordText     = "the key has no record"
	RefusalMayStillLandText = "its call may still reach the tool"
)
