package saga

// Waiter is an intent that waits for a key's final answer: the intent that
// started the call, a duplicate coalesced with it, or a duplicate answered
// "pending" while the key is in doubt.
type Waiter struct {
	IntentID    string `msgpack:"id"`
	ReplyTo     string `msgpack:"reply_to,omitempty"`
	Traceparent string `msgpack:"tp,omitempty"`
	Type        string `msgpack:"type,omitempty"`
	At          int64  `msgpack:"at,omitempty"`
}

// Error is a machine-readable code and a message.
type Error struct {
	Code    string `msgpack:"code" json:"code"`
	Message string `msgpack:"message,omitempty" json:"message,omitempty"`
	// Refusal is a refused command's kind (codes.Refusal*), for the
	// answer's error.refusal; never part of a record.
	Refusal string `msgpack:"refusal,omitempty" json:"refusal,omitempty"`
}

// Compensation is the sub-state of a key whose effect is being undone.
type Compensation struct {
	Tool        string `msgpack:"tool"`
	Origin      Waiter `msgpack:"origin"` // the compensate intent or command
	StartedAt   int64  `msgpack:"started_at"`
	CompletedAt int64  `msgpack:"completed_at,omitempty"`
	PrevStatus  Status `msgpack:"prev_status"` // restored if the compensation never reached its tool
	// PendingUntil: the compensation may reach its tool until then (0 in
	// records from before it was kept: the tool's policy decides).
	PendingUntil  int64  `msgpack:"pending_until,omitempty"`
	DownstreamKey string `msgpack:"dk,omitempty"`
	Result        []byte `msgpack:"result,omitempty"`
	Err           *Error `msgpack:"err,omitempty"`
}

// Record is the state of one (tenant, key): the fold of its events.
type Record struct {
	Tenant   string `msgpack:"tenant"`
	Key      string `msgpack:"key"`
	Tool     string `msgpack:"tool"`
	ArgsHash []byte `msgpack:"args_hash"`
	Args     []byte `msgpack:"args,omitempty"` // canonical msgpack, kept for a retry with the same key
	Status   Status `msgpack:"status"`

	Origin         Waiter        `msgpack:"origin"` // the intent that started the current call
	OriginAnswered bool          `msgpack:"origin_answered,omitempty"`
	Attempt        int           `msgpack:"attempt"`                // calls started for this key; >1 only after not_executed
	PrevStatus     Status        `msgpack:"prev_status,omitempty"`  // not_executed when this attempt followed one
	CalledAt       int64         `msgpack:"called_at"`              // unix ms of the started event
	PendingUntil   int64         `msgpack:"pending_until"`          // in doubt past this; the reconciler takes over
	RetentionMs    int64         `msgpack:"retention_ms"`           // how long the outcome is kept, from the started event
	CompletedAt    int64         `msgpack:"completed_at,omitempty"` // unix ms of the outcome
	ExpiresAt      int64         `msgpack:"expires_at,omitempty"`   // the key is free again after this (awaiting_approval: its request lapses then)
	Result         []byte        `msgpack:"result,omitempty"`       // msgpack of the tool's result
	Err            *Error        `msgpack:"err,omitempty"`          // the tool's error on failure
	ResolvedBy     string        `msgpack:"resolved_by,omitempty"`  // operator or reconciler that settled it
	Waiters        []Waiter      `msgpack:"waiters,omitempty"`
	Comp           *Compensation `msgpack:"comp,omitempty"`
	DownstreamKey  string        `msgpack:"dk,omitempty"` // the current call's; empty: the legacy per-key one
	LastEventAt    int64         `msgpack:"last_event_at"`
	// Approval is the request for a person's approval of the current
	// call, for a tool that needs one (approval.go); nil otherwise. It
	// stays with the call it let run, for the audit.
	Approval *Approval `msgpack:"approval,omitempty"`
}

// Approval is a request for a person's approval of one call: the key
// with the arguments (ArgsHash) its first intent recorded, and what was
// decided. An approval covers that call only: a call started again after
// not_executed, or after the key expired, asks again.
type Approval struct {
	RequestedAt int64  `msgpack:"requested_at"`
	Until       int64  `msgpack:"until"`               // the request lapses then, unless decided
	Approvers   string `msgpack:"approvers,omitempty"` // who was asked (EvAwaitingApproval)
	// Decision: set once an approve, a deny or the lapse was applied.
	Decision  ApprovalDecision `msgpack:"decision,omitempty"`
	DecidedAt int64            `msgpack:"decided_at,omitempty"`
	By        string           `msgpack:"by,omitempty"`
	Reason    string           `msgpack:"reason,omitempty"`
	CommandID string           `msgpack:"command_id,omitempty"` // the approve or deny applied
}

// ApprovalDecision is what became of an approval request.
type ApprovalDecision uint8

const (
	ApprovalUndecided ApprovalDecision = iota
	ApprovalApproved
	ApprovalDenied
	ApprovalLapsed
)

var approvalDecisionNames = [...]string{
	ApprovalUndecided: "undecided",
	ApprovalApproved:  "approved",
	ApprovalDenied:    "denied",
	ApprovalLapsed:    "lapsed",
}

func (d ApprovalDecision) String() string {
	if int(d) < len(approvalDecisionNames) {
		return approvalDecisionNames[d]
	}
	return "invalid"
}

// Clone returns a deep copy, so a tick's overlay never aliases the view.
func (r *Record) Clone() *Record {
	if r == nil {
		return nil
	}
	c := *r
	c.Waiters = append([]Waiter(nil), r.Waiters...)
	if r.Comp != nil {
		comp := *r.Comp
		c.Comp = &comp
	}
	if r.Err != nil {
		e := *r.Err
		c.Err = &e
	}
	if r.Approval != nil {
		a := *r.Approval
		c.Approval = &a
	}
	return &c
}

// SweepAt is when the executor's sweep must look at the key again: the
// end of a settled outcome's retention, or the deadline of an approval
// request (approval.go); 0 for a key the sweep leaves alone (a call
// running or in doubt). The store indexes records by it.
func (r *Record) SweepAt() int64 {
	if r.Status.Settled() || r.Status == StatusNotExecuted || r.Status == StatusAwaitingApproval {
		return r.ExpiresAt
	}
	return 0
}

// expired reports whether a settled outcome has passed its retention.
func (r *Record) expired(now int64) bool {
	if r == nil || r.ExpiresAt == 0 {
		return false
	}
	return (r.Status.Settled() || r.Status == StatusNotExecuted) && now >= r.ExpiresAt
}

// hasWaiter reports whether id already waits, so a re-emitted intent with
// the same id is not queued twice.
func (r *Record) hasWaiter(id string) bool {
	if r.Origin.IntentID == id {
		return true
	}
	if r.Comp != nil && r.Comp.Origin.IntentID == id {
		return true
	}
	for _, w := range r.Waiters {
		if w.IntentID == id {
			return true
		}
	}
	return false
}
