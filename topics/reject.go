package topics

import "fmt"

// Reject reasons: the machine-readable codes of docs/wire-format.md. They
// label the dead-letter metric, so the set is closed.
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
	// is answered on its own (issue 12).
	ReasonUnproducible = "unproducible"
)

// Reject explains why an input cannot be decided. It carries whatever
// could be read of the input so the rejection can still be answered.
type Reject struct {
	Reason string // one of the Reason constants
	Detail string // human-readable, names the field

	// What could be salvaged from the input, possibly empty.
	ID, Tenant, Key, Tool, ReplyTo, Type string
}

func (r *Reject) Error() string {
	return fmt.Sprintf("topics: rejected (%s): %s", r.Reason, r.Detail)
}

// Answerable reports whether the rejection can be answered: an answer is
// matched by intent id, so without one nobody could read it.
func (r *Reject) Answerable() bool { return r.ID != "" }

func reject(reason, format string, a ...any) *Reject {
	return &Reject{Reason: reason, Detail: fmt.Sprintf(format, a...)}
}

func (r *Reject) from(in *Intent) *Reject {
	r.ID, r.Tenant, r.Key, r.Tool, r.ReplyTo, r.Type = in.ID, in.Tenant, in.Key, in.Tool, in.ReplyTo, in.Type
	if len(r.ID) > MaxIDBytes {
		r.ID = ""
	}
	if len(r.ReplyTo) > MaxReplyToBytes {
		r.ReplyTo = ""
	}
	return r
}
