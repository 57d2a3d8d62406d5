package saga

import "github.com/atmostonce/toolexec/codes"

// Refusal is why a call cannot be taken on now: its tenant holds its
// share of the calls the tool (or the member) may hold, or the tool holds
// all it may. The runtime decides it (Env.Admit); the saga answers it.
type Refusal struct {
	Code         string // codes.ErrOverShare or codes.ErrQueueFull
	Message      string
	RetryAfterMs int64 // when to send the key again
}

// admit asks the runtime whether a call of tool for tenant may start: nil
// when it may (or when the runtime does not bound calls).
func (e *Env) admit(tenant, tool string) *Refusal {
	if e.Admit == nil {
		return nil
	}
	return e.Admit(tenant, tool)
}

// refuse answers an intent that would start a call for which there is no
// room: not_executed, with the refusal's code and retry hint. Nothing is
// logged: the key's record stays as it was (none, or free), so a later
// intent with the key starts its call as if this one had never come, and
// the intent's offset commits with the tick like any other.
func refuse(in Input, r *Refusal, env Env) Decision {
	a := Answer{To: in.waiter(env.Now), Tenant: in.Tenant, Key: in.Key, Tool: in.Tool, Status: codes.StatusNotExecuted,
		Err: &Error{Code: r.Code, Message: r.Message}, RetryAfterMs: r.RetryAfterMs}
	return Decision{Verdict: VerdictRefuse, Reason: r.Code, Detail: r.Message, Answers: []Answer{a}}
}
