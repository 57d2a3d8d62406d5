package reconciler

import (
	"time"

	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/tools"
)

// Phase tells what of a key is in doubt: its call, or the compensation of
// its call.
type Phase uint8

const (
	PhaseCall Phase = iota + 1
	PhaseCompensation
)

func (p Phase) String() string {
	switch p {
	case PhaseCall:
		return "call"
	case PhaseCompensation:
		return "compensation"
	}
	return "none"
}

// Subject is what one investigation is about: one call, or one
// compensation, of one key that has no outcome. It is derived from the
// key's record and the tool configuration only (SubjectOf), so the loop,
// the operator's pending list and the tests all see the same thing.
type Subject struct {
	Tenant, Key string
	Phase       Phase
	// CallID is the intent id of the call (Record.Origin) or of the
	// compensation (Record.Comp.Origin) in doubt. Commands carry it as
	// their precondition, and an investigation belongs to one CallID.
	CallID string
	// Tool is the tool whose effect is in doubt: the call's tool, or the
	// compensating tool. Its class decides the investigation.
	Tool  string
	Class tools.Class // "" when the tool is not in this configuration
	// DownstreamKey is the key the tool saw for the call or compensation in
	// doubt (its started event's), or the legacy per-key one for records
	// from before keys were per call. Every retry and probe uses it: a key
	// used again after not_executed or expiry has a new call under a new
	// downstream key, and asking under the old one would read the old
	// call's effect.
	DownstreamKey string
	// CompensateWith is the call's compensating tool (call phase only).
	CompensateWith string
	Status         saga.Status
	CalledAt       int64 // unix ms the call or compensation started
	// Deadline (unix ms) is when the key becomes the reconciler's: the
	// call's PendingUntil, or the compensation's start plus the
	// compensating tool's pending_ttl. No executor call outlives it.
	Deadline int64
	Waiters  int // intents waiting for the key's final answer
}

// Lookup finds a tool's spec; false when it is not configured.
type Lookup func(tool string) (tools.Spec, bool)

// RegistryLookup adapts a tools.Registry to Lookup.
func RegistryLookup(reg *tools.Registry) Lookup {
	return func(tool string) (tools.Spec, bool) {
		spec, _, ok := reg.Lookup(tool)
		return spec, ok
	}
}

// SubjectOf returns what of rec is in doubt, or false when rec has an
// outcome (or is nil). It is pure.
func SubjectOf(rec *saga.Record, lookup Lookup) (Subject, bool) {
	if rec == nil || !rec.Status.InDoubt() {
		return Subject{}, false
	}
	s := Subject{Tenant: rec.Tenant, Key: rec.Key, Status: rec.Status, Waiters: len(rec.Waiters)}
	if rec.Comp != nil && (rec.Status == saga.StatusCompensating || rec.Status == saga.StatusCompensationUnknown) {
		spec, ok := lookup(rec.Comp.Tool)
		ttl := tools.DefaultPendingTTL
		if ok {
			s.Class, ttl = spec.Class, spec.PendingTTL
		}
		s.Phase, s.CallID, s.Tool = PhaseCompensation, rec.Comp.Origin.IntentID, rec.Comp.Tool
		s.DownstreamKey = saga.DownstreamKey(rec.Comp.DownstreamKey, rec.Tenant, rec.Comp.Tool, rec.Key)
		s.CalledAt, s.Deadline = rec.Comp.StartedAt, compensationDeadline(rec.Comp, ttl)
		return s, true
	}
	if spec, ok := lookup(rec.Tool); ok {
		s.Class, s.CompensateWith = spec.Class, spec.CompensateWith
	}
	s.Phase, s.CallID, s.Tool = PhaseCall, rec.Origin.IntentID, rec.Tool
	s.DownstreamKey = saga.DownstreamKey(rec.DownstreamKey, rec.Tenant, rec.Tool, rec.Key)
	s.CalledAt, s.Deadline = rec.CalledAt, rec.PendingUntil
	return s, true
}

// compensationDeadline is when a compensation in doubt becomes the
// reconciler's: the PendingUntil its started event recorded (the
// executor refuses a command before it), or, for records from before it
// was kept, its start plus the compensating tool's pending_ttl.
func compensationDeadline(c *saga.Compensation, ttl time.Duration) int64 {
	if c.PendingUntil > 0 {
		return c.PendingUntil
	}
	return c.StartedAt + ttl.Milliseconds()
}

// callIdentity is the call whose investigation a record keeps alive: the
// call in doubt, also while a compensation of it runs or is in doubt (its
// rounds belong to the call's investigation); "" when none. When it
// changes, the call's investigation is obsolete.
func callIdentity(rec *saga.Record) string {
	switch {
	case rec == nil:
		return ""
	case rec.Status == saga.StatusStarted || rec.Status == saga.StatusUnknown:
		return rec.Origin.IntentID
	case compensationIdentity(rec) != "" && (rec.Comp.PrevStatus == saga.StatusStarted || rec.Comp.PrevStatus == saga.StatusUnknown):
		return rec.Origin.IntentID
	}
	return ""
}

// compensationIdentity is the compensation in doubt (running or unknown)
// of a record, "" when none.
func compensationIdentity(rec *saga.Record) string {
	if rec == nil || rec.Comp == nil || (rec.Status != saga.StatusCompensating && rec.Status != saga.StatusCompensationUnknown) {
		return ""
	}
	return rec.Comp.Origin.IntentID
}
