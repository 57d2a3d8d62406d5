package reconciler

import (
	"fmt"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/wire"
)

// Policy bounds investigations. The zero value is completed by Config's
// defaults; Plan and Judge take it complete.
type Policy struct {
	// MaxAttempts is how many rounds may fail (an ambiguous retry or probe,
	// a command that did not land) before the subject is escalated.
	MaxAttempts int
	// BackoffBase and BackoffCap shape the wait after a failed round:
	// BackoffBase doubled per failed round, at most BackoffCap.
	BackoffBase, BackoffCap time.Duration
	// CommandTimeout is how long a sent command may take to show in the
	// event log (the executor may be restarting) before the round counts
	// as failed.
	CommandTimeout time.Duration
}

// StepKind is what the reconciler does next about a subject.
type StepKind uint8

const (
	// StepWait: nothing until Step.At (the deadline, a backoff, or a
	// command on its way).
	StepWait StepKind = iota + 1
	// StepRetry: invoke the tool again with the same downstream key
	// (native_key), then Judge the outcome.
	StepRetry
	// StepProbe: ask the tool's probe by downstream key, then Judge.
	StepProbe
	// StepCompensate: send Step.Cmd, a compensate command.
	StepCompensate
	// StepResolve: send Step.Cmd, a resolve command.
	StepResolve
	// StepEscalate: park the subject for an operator (log, count, alert).
	StepEscalate
	// StepIdle: escalated earlier; nothing until an operator settles it.
	StepIdle
)

var stepNames = [...]string{StepWait: "wait", StepRetry: "retry", StepProbe: "probe", StepCompensate: "compensate",
	StepResolve: "resolve", StepEscalate: "escalate", StepIdle: "idle"}

func (k StepKind) String() string {
	if int(k) < len(stepNames) && stepNames[k] != "" {
		return stepNames[k]
	}
	return "invalid"
}

// Step is a decision about one subject. Inv is the investigation as it
// must be stored before the step is carried out (Changed says whether it
// differs from what was given); Cmd is the command of StepCompensate and
// StepResolve.
type Step struct {
	Kind    StepKind
	At      int64 // StepWait: unix ms
	Inv     Investigation
	Changed bool
	Cmd     *Command
}

// Command is a resolve or compensate for the control topic.
type Command struct {
	Type    string // wire.TypeResolve or wire.TypeCompensate
	ID      string
	Tenant  string
	Key     string
	CallID  string // precondition: the call or compensation in doubt
	Outcome string // resolve: a topics status
	Result  any
	Err     *wire.ErrorInfo
	Reason  string
}

// Plan decides what to do about s at now, given what is remembered of its
// investigation (nil when nothing is, or when it belongs to an earlier
// subject of the key). It is pure.
func Plan(now int64, s Subject, inv *Investigation, p Policy) Step {
	cur, changed := current(now, s, inv)
	switch {
	case now < s.Deadline:
		// The executor may still be calling; Invoke never outlives it.
		return Step{Kind: StepWait, At: s.Deadline, Inv: cur, Changed: false}
	case cur.Escalated:
		return Step{Kind: StepIdle, Inv: cur}
	case cur.Sent != nil:
		return afterSent(now, s, cur, p)
	case cur.Attempts >= p.MaxAttempts:
		// Rounds can fail outside a Judge: a compensation that came back
		// without reaching its tool is counted by the view's fold.
		return escalate(now, cur, fmt.Sprintf("%d rounds without settling the key; last: %s", cur.Attempts, cur.Reason))
	case now < cur.NextAt:
		return Step{Kind: StepWait, At: cur.NextAt, Inv: cur, Changed: changed}
	}
	return byClass(now, s, cur, p)
}

// current returns inv when it is s's investigation, else a fresh one.
func current(now int64, s Subject, inv *Investigation) (Investigation, bool) {
	if inv.matches(s) {
		return *inv, false
	}
	return Investigation{Phase: s.Phase, CallID: s.CallID, StartedAt: now}, true
}

// byClass starts a round by the class of the tool whose effect is in
// doubt.
func byClass(now int64, s Subject, inv Investigation, p Policy) Step {
	switch s.Class.Investigation() {
	case tools.InvestigateRetry:
		return Step{Kind: StepRetry, Inv: inv, Changed: true}
	case tools.InvestigateProbe:
		return Step{Kind: StepProbe, Inv: inv, Changed: true}
	case tools.InvestigateCompensate:
		if s.Phase == PhaseCall && s.CompensateWith != "" {
			return compensate(now, s, inv)
		}
	}
	return escalate(now, inv, undecidable(s))
}

// undecidable says why no investigation can settle s.
func undecidable(s Subject) string {
	switch {
	case !s.Class.Valid():
		return fmt.Sprintf("tool %q is not in the reconciler's tool configuration", s.Tool)
	case s.Class.Investigation() == tools.InvestigateEscalate && s.Phase == PhaseCall:
		return fmt.Sprintf("tool %q is %s and cannot be asked: an operator must find out whether it acted", s.Tool, s.Class)
	case s.Phase == PhaseCompensation:
		return fmt.Sprintf("the compensation by %q (class %s) is in doubt and its tool can neither be asked nor retried", s.Tool, s.Class)
	}
	return fmt.Sprintf("tool %q of class %s cannot be investigated", s.Tool, s.Class)
}

// compensate sends a compensate command. Its id is the same for every
// resend within one round (the saga sees one compensation however often
// it arrives), and new for each round after a compensation came back
// not_executed.
func compensate(now int64, s Subject, inv Investigation) Step {
	cmd := &Command{Type: wire.TypeCompensate, ID: commandID(s, wire.TypeCompensate, inv.Compensations), Tenant: s.Tenant, Key: s.Key,
		CallID: s.CallID, Reason: fmt.Sprintf("in doubt past pending_ttl; compensating with %s", s.CompensateWith)}
	inv.Sent = &Sent{Type: cmd.Type, ID: cmd.ID, At: now}
	inv.Reason = cmd.Reason
	return Step{Kind: StepCompensate, Inv: inv, Changed: true, Cmd: cmd}
}

func escalate(now int64, inv Investigation, reason string) Step {
	inv.Escalated, inv.EscalatedAt, inv.Reason, inv.Sent = true, now, reason, nil
	return Step{Kind: StepEscalate, Inv: inv, Changed: true}
}

// afterSent waits for a sent command to show in the log. A command that
// does not within CommandTimeout was rejected (the call was still in
// flight, say), lost before it was produced, or waits for an executor
// that is down: the round failed.
func afterSent(now int64, s Subject, inv Investigation, p Policy) Step {
	if due := inv.Sent.At + p.CommandTimeout.Milliseconds(); now < due {
		return Step{Kind: StepWait, At: due, Inv: inv}
	}
	inv.Attempts++
	if inv.Attempts >= p.MaxAttempts {
		return escalate(now, inv, fmt.Sprintf("%d rounds without settling the key; the last %s command (%s) never showed in the event log", inv.Attempts, inv.Sent.Type, inv.Sent.ID))
	}
	if inv.Sent.Type == wire.TypeCompensate {
		// Send the same command again, with the same id: should the first
		// still land, the executor's saga sees one compensation (the second
		// finds its own id waiting, or the compensation done).
		step := compensate(now, s, inv)
		step.Inv.Attempts = inv.Attempts
		return step
	}
	// A resolve is not repeated blindly: the key may have changed under
	// it (a rejected resolve for a call still in flight). Ask again.
	inv.Sent = nil
	return byClass(now, s, inv, p)
}

// Judge turns the outcome of a retry or probe (kind says which) into the
// next step: a resolve when the outcome is definite, else a later round,
// and an escalation after MaxAttempts. It is pure.
func Judge(now int64, s Subject, inv Investigation, kind StepKind, out tools.Outcome, p Policy) Step {
	switch {
	case out.Status == tools.Succeeded:
		return resolve(now, s, inv, kind, settledStatus(s, true), out)
	case out.Status == tools.Failed && !stillRunning(out):
		return resolve(now, s, inv, kind, settledStatus(s, false), out)
	case out.Status == tools.NotExecuted && kind == StepProbe:
		// The probe answers 404 only for keys it never saw: the call
		// never reached the tool.
		return resolve(now, s, inv, kind, codes.StatusNotExecuted, out)
	}
	// Unknown, or a retry that never reached the tool (refused, DNS):
	// that says nothing about the first call.
	inv.Attempts++
	inv.Reason = fmt.Sprintf("%s: %s %s", kind, out.Code, out.Message)
	if inv.Attempts >= p.MaxAttempts {
		return escalate(now, inv, fmt.Sprintf("%d rounds without a definite answer; last %s", inv.Attempts, inv.Reason))
	}
	inv.NextAt = now + Backoff(inv.Attempts, p).Milliseconds()
	return Step{Kind: StepWait, At: inv.NextAt, Inv: inv, Changed: true}
}

// stillRunning reports a 409 from a retry: downstreams that honour an
// idempotency key (Stripe) answer 409 while the first request with the
// key is still being processed. That is not the call's outcome.
func stillRunning(out tools.Outcome) bool { return out.Code == "http_409" }

// settledStatus is the resolve outcome for a definite answer about s.
func settledStatus(s Subject, ok bool) string {
	switch {
	case s.Phase == PhaseCompensation && ok:
		return codes.StatusCompensated
	case s.Phase == PhaseCompensation:
		return codes.StatusCompensationFailed
	case ok:
		return codes.StatusSucceeded
	}
	return codes.StatusFailed
}

func resolve(now int64, s Subject, inv Investigation, kind StepKind, outcome string, out tools.Outcome) Step {
	cmd := &Command{Type: wire.TypeResolve, ID: commandID(s, wire.TypeResolve, inv.Attempts), Tenant: s.Tenant, Key: s.Key,
		CallID: s.CallID, Outcome: outcome, Reason: fmt.Sprintf("%s of %s (%s) answered %s", kind, s.Tool, s.Class, out.Status)}
	if out.Status == tools.Succeeded {
		cmd.Result, cmd.Err = storableResult(out.Result)
	} else {
		cmd.Err = &wire.ErrorInfo{Code: out.Code, Message: out.Message}
	}
	inv.Sent = &Sent{Type: cmd.Type, ID: cmd.ID, Outcome: outcome, At: now}
	inv.Reason = cmd.Reason
	return Step{Kind: StepResolve, Inv: inv, Changed: true, Cmd: cmd}
}

// codeResultNotStored is the executor's error code for a success whose
// result it does not keep (codes.ErrResultNotStored): the call succeeded,
// its result is not replayed.
const codeResultNotStored = codes.ErrResultNotStored

// storableResult is what a resolve can carry of a tool's result: the
// result itself when its msgpack encoding fits the executor's bound on a
// stored result (wire.MaxResultBytes, the one constant both sides
// check), else none and the executor's result_not_stored code.
//
// Why: a retry may answer up to
// the HTTP adapter's 1 MiB, and the executor refused a resolve carrying
// more than 256 KiB: the command was rejected, the investigation tried
// again, and the key stayed in doubt although the tool had answered.
func storableResult(v any) (any, *wire.ErrorInfo) {
	if v == nil {
		return nil, nil
	}
	b, err := msgpack.Marshal(v)
	switch {
	case err != nil:
		return nil, &wire.ErrorInfo{Code: codeResultNotStored, Message: fmt.Sprintf("the tool's result cannot be encoded (%v); the call succeeded", err)}
	case len(b) > wire.MaxResultBytes:
		return nil, &wire.ErrorInfo{Code: codeResultNotStored, Message: fmt.Sprintf(
			"the tool's result is %d bytes, over the %d a stored result may have; the call succeeded", len(b), wire.MaxResultBytes)}
	}
	return v, nil
}

// Backoff is the wait after the n-th failed round (n >= 1): BackoffBase
// doubled n-1 times, at most BackoffCap. No jitter: subjects fall into
// doubt at different times already, and a pure function keeps the tests
// exact.
func Backoff(n int, p Policy) time.Duration {
	d := p.BackoffBase
	for i := 1; i < n && d < p.BackoffCap; i++ {
		d *= 2
	}
	return min(d, p.BackoffCap)
}
