package saga

// InputType is what an input asks for.
type InputType uint8

const (
	InputCall InputType = iota + 1
	InputCompensate
	InputResolve
	InputLookup
	// InputApprove and InputDeny decide a key's request for approval
	// (approval.go); they arrive only on the control topic.
	InputApprove
	InputDeny
)

func (t InputType) String() string {
	switch t {
	case InputCall:
		return "call"
	case InputCompensate:
		return "compensate"
	case InputResolve:
		return "resolve"
	case InputLookup:
		return "lookup"
	case InputApprove:
		return "approve"
	case InputDeny:
		return "deny"
	}
	return "invalid"
}

// Input is one decoded, structurally valid intent or command.
type Input struct {
	Type        InputType
	IntentID    string
	Tenant, Key string
	Tool        string
	ArgsHash    []byte // SHA-256 of the canonical arguments (approve, deny: the digest the person decided on; nil: the recorded one)
	Args        []byte // the canonical arguments (msgpack)
	ReplyTo     string
	Traceparent string
	DeadlineMs  int64 // do not start a call after this; 0 means none
	RunID       string
	ThreadID    string

	// Resolve only (By and Reason also approve and deny).
	Outcome Status
	Result  []byte
	Err     *Error
	By      string
	Reason  string

	// CallID, on a resolve or compensate, makes the command conditional:
	// it applies only while this call (or, for a resolve, this
	// compensation) is the key's current one and in doubt. The reconciler
	// sets it, so that a command decided on a view that just went stale
	// (the call settled meanwhile) is refused instead of undoing a success
	// or settling a newer call. Empty means unconditional (operators).
	CallID string
	// DownstreamKey, on a resolve, makes it a member's fact about one
	// attempt (fact.go): the member that started the call under this
	// downstream key got its outcome, or never sent it. It applies only
	// while that attempt is the key's call (or compensation) in doubt,
	// and, the attempt having ended, before its pending_ttl too. CallID
	// is required with it.
	DownstreamKey string
	// Force (resolve, compensate; the control topic only) settles or
	// undoes a call that may still reach its tool. Without it such a
	// command is refused until the call's PendingUntil (command.go).
	Force bool

	// Routing: where it arrived and where it belongs.
	Partition, Owner int32
}

func (in *Input) waiter(now int64) Waiter {
	return Waiter{IntentID: in.IntentID, ReplyTo: in.ReplyTo, Traceparent: in.Traceparent, Type: in.Type.String(), At: now}
}

// Policy is what the saga needs to know of a tool.
type Policy struct {
	ReadOnly       bool  // no dedup record: every intent calls
	PendingTTLMs   int64 // in doubt after this long without an outcome
	RetentionMs    int64 // outcomes are replayed this long
	CompensateWith string
	MaxArgsBytes   int
	// Resent: past PendingUntil the reconciler investigates a call of this
	// tool by sending it again under its downstream key (native_key), so
	// an executor's "not executed" is known only before then (complete.go).
	Resent bool
	// ApprovalTTLMs > 0: a call of this tool waits for a person's approval
	// first, at most this long (approval.go). Approvers is who is asked,
	// as the tool's config names them ("" : any operator).
	ApprovalTTLMs int64
	Approvers     string
}

// Env is the world as the runtime sees it for one decision.
type Env struct {
	Now int64 // unix ms
	// InFlight: a call (or compensation) for this key runs in this process.
	InFlight bool
	// MaxWaiters bounds the intents that may wait on one key (default 64).
	MaxWaiters int
	// Policy looks up a tool's policy; false means an unknown tool.
	Policy func(tool string) (Policy, bool)
	// NearestTool, when set, names the tool tenant may call whose name is
	// nearest to an unknown one (a typo): the rejection suggests it.
	NearestTool func(tenant, tool string) (string, bool)
	// Admit, when set, is asked before a call, a read or a compensation
	// starts, with the tenant and the tool to call: a Refusal answers the
	// intent at once and starts nothing (admit.go). Nil admits every call.
	Admit func(tenant, tool string) *Refusal
}

func (e *Env) maxWaiters() int {
	if e.MaxWaiters <= 0 {
		return 64
	}
	return e.MaxWaiters
}

// Completion is what a finished call reports.
type Completion struct {
	CallID       string // the intent id that started the call
	Compensation bool
	Status       Status // Succeeded, Failed, Unknown or NotExecuted
	Result       []byte
	Err          *Error
	Attempts     int
}
