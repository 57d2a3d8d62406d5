package wire

import (
	"crypto/sha256"

	"github.com/atmostonce/toolexec/codes"
)

// maxNesting bounds how deep maps and arrays may nest in one message: the
// intent map, args (CanonicalArgs allows 32 levels below it) and headroom,
// so that args nested 33 to 63 deep still get an answerable invalid_args.
const maxNesting = 64

// Bounds of every field that is copied from an intent's record into the
// executor's own records (events, answers, forwards, dead letters). A
// field over its bound is a rejection (oversized) with the field named,
// never a truncation: a truncated run id or traceparent would be a lie in
// the audit trail. Why each value:
const (
	// MaxTraceparentBytes: a W3C Trace Context version-00 traceparent is
	// exactly 55 characters ("00-" 32 hex "-" 16 hex "-" 2 hex). A longer
	// one, copied twice into the started event, could make it larger than
	// the producer's batch limit and wedge the member.
	MaxTraceparentBytes = 55
	// MaxTracestateBytes: W3C asks vendors to propagate at least 512
	// characters of tracestate; more is not required of anyone.
	MaxTracestateBytes = 512
	// MaxScopeFieldBytes bounds scope.run_id and scope.thread_id: ids of an
	// agent framework's run and thread (UUIDs, LangGraph thread ids).
	MaxScopeFieldBytes = 256
	// MaxByBytes bounds who settled a key (a user or service name).
	MaxByBytes = 128
	// MaxReasonBytes bounds an operator's or the reconciler's reason, a
	// sentence or two for the audit trail.
	MaxReasonBytes = 1024
	// MaxApproversBytes bounds who is asked to approve a tool's calls, as
	// recorded with each request for approval (a tool's approvers joined).
	MaxApproversBytes = 1024
	// MaxForwardHeaderBytes bounds the headers of a record that is
	// forwarded to its owner partition: the forward copies them.
	MaxForwardHeaderBytes = 16 << 10
	// MaxDeadLetterPrefix is how much of an offending value a dead letter
	// keeps, with the value's length and SHA-256: enough to read what it
	// was, never enough to make the dead letter itself unproducible (a
	// compressed intent over 1 MiB was copied whole into its dead letter).
	MaxDeadLetterPrefix = 4 << 10
	// MaxDeadLetterHeaders and MaxDeadLetterHeaderValue bound the headers a
	// dead letter keeps, for the same reason.
	MaxDeadLetterHeaders     = 16
	MaxDeadLetterHeaderValue = 256
	// MaxResultBytes bounds a stored result, whether a tool's answer or an
	// operator's or the reconciler's resolve: one meaning for both, so a
	// resolve the reconciler may send is one the executor accepts. A
	// quarter of a message: a record holds the arguments (MaxArgsLimit),
	// the call's result and its compensation's result, and with its
	// waiters it must fit one snapshot event (executor/snapshot.go).
	MaxResultBytes = MaxMessageBytes / 4
	// MaxArgsLimit is the largest max_args_bytes a tool may configure,
	// for the same reason.
	MaxArgsLimit = MaxMessageBytes / 4
	// MaxWaitersLimit is the largest number of intents that may wait on
	// one key (executor.Config.MaxWaiters), for the same reason: each
	// waiter is at most about 500 bytes.
	MaxWaitersLimit = 256
)

// CheckHeaders checks the trace headers an intent's record carries, which
// the executor copies into its events and answers.
func CheckHeaders(traceparent, tracestate string) *Reject {
	switch {
	case len(traceparent) > MaxTraceparentBytes:
		return reject(codes.ReasonOversized, "header traceparent is %d bytes; a W3C traceparent is %d", len(traceparent), MaxTraceparentBytes)
	case len(tracestate) > MaxTracestateBytes:
		return reject(codes.ReasonOversized, "header tracestate is %d bytes, the limit is %d", len(tracestate), MaxTracestateBytes)
	}
	return nil
}

// checkCopiedFields checks the body fields that are copied into events.
func checkCopiedFields(in *Intent) *Reject {
	if in.Scope != nil {
		switch {
		case len(in.Scope.RunID) > MaxScopeFieldBytes:
			return reject(codes.ReasonOversized, "field scope.run_id is %d bytes, the limit is %d", len(in.Scope.RunID), MaxScopeFieldBytes)
		case len(in.Scope.ThreadID) > MaxScopeFieldBytes:
			return reject(codes.ReasonOversized, "field scope.thread_id is %d bytes, the limit is %d", len(in.Scope.ThreadID), MaxScopeFieldBytes)
		}
	}
	switch {
	case len(in.By) > MaxByBytes:
		return reject(codes.ReasonOversized, "field by is %d bytes, the limit is %d", len(in.By), MaxByBytes)
	case len(in.Reason) > MaxReasonBytes:
		return reject(codes.ReasonOversized, "field reason is %d bytes, the limit is %d", len(in.Reason), MaxReasonBytes)
	}
	return nil
}

// DeadLetterValue fills d's value fields from an offending value: a
// bounded prefix, the whole length and the SHA-256 of the whole.
func DeadLetterValue(d *DeadLetter, value []byte) {
	sum := sha256.Sum256(value)
	d.ValueLen, d.ValueSHA256 = len(value), sum[:]
	d.Value = value[:min(len(value), MaxDeadLetterPrefix)]
	d.ValueTruncated = len(value) > MaxDeadLetterPrefix
}
