package saga

// EventKind names a fact in the event log.
type EventKind uint8

const (
	EvStarted EventKind = iota + 1
	EvOutcome
	EvReplayed
	EvCoalesced
	EvWaiting
	EvConflicted
	EvResolved
	EvCompensationStarted
	EvCompensationOutcome
	EvExpired
	EvReadStarted  // a read-only call was taken on: its intent must be answered
	EvReadAnswered // that intent was answered
	// EvSnapshot restates a key's whole record, so that the key outlives
	// the retention of the events it was folded from (snapshot rounds,
	// executor/partition/snapshot.go).
	EvSnapshot
	// EvRound ends a snapshot round of one partition: every record the
	// partition held when the round began was restated at or after
	// RoundFrom, so a fold of the log from RoundFrom alone is complete.
	// It is about the partition, not a key (no tenant, no key).
	EvRound
	// EvAwaitingApproval records the first intent of a key whose tool
	// needs a person's approval: the key, its arguments and their digest
	// (what an approval covers, and nothing else), who was asked and until
	// when (approval.go).
	EvAwaitingApproval
	// EvApproved: an operator's approve command was applied. The owner
	// writes it in the transaction that writes the call's started event,
	// right after it: no call without a committed approval of its digest.
	EvApproved
	// EvDenied: an operator's deny; the key ends failed (approval_denied).
	EvDenied
	// EvApprovalLapsed: no one decided before the request's deadline; the
	// key ends not_executed and is free again.
	EvApprovalLapsed
)

var eventNames = [...]string{
	EvStarted:             "started",
	EvOutcome:             "outcome",
	EvReplayed:            "replayed",
	EvCoalesced:           "coalesced",
	EvWaiting:             "waiting",
	EvConflicted:          "conflicted",
	EvResolved:            "resolved",
	EvCompensationStarted: "compensation_started",
	EvCompensationOutcome: "compensation_outcome",
	EvExpired:             "expired",
	EvReadStarted:         "read_started",
	EvReadAnswered:        "read_answered",
	EvSnapshot:            "snapshot",
	EvRound:               "round",
	EvAwaitingApproval:    "awaiting_approval",
	EvApproved:            "approved",
	EvDenied:              "denied",
	EvApprovalLapsed:      "approval_lapsed",
}

func (k EventKind) String() string {
	if int(k) < len(eventNames) && eventNames[k] != "" {
		return eventNames[k]
	}
	return "invalid"
}

// Valid reports whether k is a known kind.
func (k EventKind) Valid() bool { return k >= EvStarted && k <= EvApprovalLapsed }

// IsRead reports whether k is about one read-only call rather than the
// key's record: such events never change a Record.
func (k EventKind) IsRead() bool { return k == EvReadStarted || k == EvReadAnswered }

// AuditOnly reports whether k is a fact kept for the audit trail that
// leaves the key's record as it is: a duplicate answered from the record
// (replayed), or refused for other arguments (conflicted). Apply ignores
// them, so a member writes no record (and syncs nothing) for them, and a
// restore folds them to the same bytes.
func (k EventKind) AuditOnly() bool { return k == EvReplayed || k == EvConflicted }

// Event is one fact about one key. Fields not used by a kind stay empty;
// docs/wire-format.md lists which kind uses which.
type Event struct {
	Kind     EventKind `msgpack:"kind"`
	Tenant   string    `msgpack:"tenant"`
	Key      string    `msgpack:"key"`
	At       int64     `msgpack:"at"`
	IntentID string    `msgpack:"intent_id,omitempty"` // the intent or command that caused the fact

	// Started, CompensationStarted, ReadStarted, AwaitingApproval
	// (Approved and Denied: ArgsHash, the digest decided on).
	Tool        string `msgpack:"tool,omitempty"`
	ArgsHash    []byte `msgpack:"args_hash,omitempty"`
	Args        []byte `msgpack:"args,omitempty"`
	PendingTTL  int64  `msgpack:"pending_ttl_ms,omitempty"`
	RetentionMs int64  `msgpack:"retention_ms,omitempty"`
	Attempt     int    `msgpack:"attempt,omitempty"`
	RunID       string `msgpack:"run_id,omitempty"`
	ThreadID    string `msgpack:"thread_id,omitempty"`
	// DownstreamKey (started, compensation_started) is the key the tool
	// sees for this call (downstream.go); empty in events written before
	// it existed, whose calls used the per-key key (DownstreamKey).
	DownstreamKey string `msgpack:"dk,omitempty"`

	// Outcome, Resolved, CompensationOutcome; CallID, By and Reason also
	// Approved and Denied.
	CallID string `msgpack:"call_id,omitempty"`
	Status Status `msgpack:"status,omitempty"`
	Result []byte `msgpack:"result,omitempty"`
	Err    *Error `msgpack:"err,omitempty"`
	By     string `msgpack:"by,omitempty"`
	Reason string `msgpack:"reason,omitempty"`
	// Forced (resolve, compensation_started): an operator settled or
	// undid a call that might still reach its tool, explicitly.
	Forced bool `msgpack:"forced,omitempty"`

	// Started (the origin), Coalesced, Waiting, CompensationStarted,
	// ReadStarted (who to answer).
	Waiter *Waiter `msgpack:"waiter,omitempty"`
	// Snapshot: the key's whole record.
	Snapshot *Record `msgpack:"snapshot,omitempty"`
	// Round: the offset of the events partition at which the round began.
	RoundFrom int64 `msgpack:"round_from,omitempty"`

	// AwaitingApproval: the request lapses at ApprovalUntil (unix ms),
	// and Approvers is who was asked, as the tool's config names them
	// (operators, and groups as "group:<name>"; empty: any operator).
	// Approved, Denied: CallID, the intent whose request was decided.
	ApprovalUntil int64  `msgpack:"approval_until,omitempty"`
	Approvers     string `msgpack:"approvers,omitempty"`
}
