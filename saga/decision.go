package saga

// Verdict is the kind of a decision.
type Verdict uint8

const (
	VerdictExecute Verdict = iota + 1
	VerdictReplay
	VerdictCoalesce
	VerdictPending
	VerdictConflict
	VerdictReject
	VerdictForward
	VerdictResolve
	VerdictCompensate
	VerdictRecord // a completion or an expiry was recorded
	VerdictStale  // nothing to do: the input no longer matches the key
	VerdictLookup // answered what the key's record says, nothing else
	// VerdictAwaitApproval: the first intent of a key whose tool needs a
	// person's approval was recorded awaiting it; nothing is called.
	VerdictAwaitApproval
	VerdictApprove // an approve was applied: the call starts
	VerdictDeny    // a deny was applied: the key ends failed
	VerdictRefuse  // no room for the call now: answered not_executed, nothing logged
)

var verdictNames = [...]string{
	VerdictExecute:       "execute",
	VerdictReplay:        "replay",
	VerdictCoalesce:      "coalesce",
	VerdictPending:       "pending",
	VerdictConflict:      "conflict",
	VerdictReject:        "reject",
	VerdictForward:       "forward",
	VerdictResolve:       "resolve",
	VerdictCompensate:    "compensate",
	VerdictRecord:        "record",
	VerdictStale:         "stale",
	VerdictLookup:        "lookup",
	VerdictAwaitApproval: "await_approval",
	VerdictApprove:       "approve",
	VerdictDeny:          "deny",
	VerdictRefuse:        "refuse",
}

func (v Verdict) String() string {
	if int(v) < len(verdictNames) && verdictNames[v] != "" {
		return verdictNames[v]
	}
	return "invalid"
}

// Decision is the outcome of one input: what to log, what to answer and
// what to call once the log is committed.
type Decision struct {
	Verdict Verdict
	Reason  string // a codes.Reason* code for rejects; the error code of a refusal
	Detail  string
	Events  []Event
	Answers []Answer
	Call    *Call
}

// CallKind tells an original call from a compensation.
type CallKind uint8

const (
	CallOriginal CallKind = iota + 1
	CallCompensation
	CallReadOnly // no dedup: recorded only as an obligation to answer (read.go)
)

// Call is a tool invocation to dispatch after the commit.
type Call struct {
	Kind        CallKind
	Tenant, Key string
	Tool        string // the tool to invoke (the compensating tool for a compensation)
	CallID      string // the intent that started it
	Args        []byte // canonical msgpack
	Traceparent string
	Attempt     int
	Origin      Waiter // read-only calls: who to answer
	// DecidedAt (unix ms) is the At of the event that started the call:
	// its pending budget runs from here (tools.Request.Decided).
	DecidedAt int64
	// DownstreamKey is the key the tool sees (downstream.go). Empty for
	// read-only calls and calls started before it existed: the runtime
	// then uses the per-key key (DownstreamKey).
	DownstreamKey string
}

// Answer is a result to send to one waiting intent.
type Answer struct {
	To               Waiter
	Tenant, Key      string
	Tool             string
	Status           string // a codes.Status* value
	Result           []byte
	Err              *Error
	WasReplay        bool
	OriginalIntentID string
	OriginalCalledAt int64
	CompletedAt      int64
	PreviousStatus   string
	Attempt          int
	// ApprovalUntil (unix ms), on an answer of a key awaiting approval:
	// when its request lapses unless a person decides first.
	ApprovalUntil int64
	RetryAfterMs  int64 // a refusal's (admit.go)
}
