package executor

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/executor/partition"
	"github.com/atmostonce/toolexec/internal/msgpack/mpread"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/state"
	"github.com/atmostonce/toolexec/wire"
)

// A member's facts: what it knows of a call it started and cannot record
// itself, kept on its disk until the key's owner has it.
//
// Two kinds. An outcome the member got from the tool after the call's
// partition moved (a completion of an older ownership epoch: the core
// drops it, Decisions.Lost), and the certainty that it never sent a call whose
// started event may have committed (a transaction end of unknown outcome:
// its calls are not made, Core.Aborted). Either, forgotten, would leave
// the key to an investigation: for an irreversible tool, a person asked
// what a machine knew.
//
// A fact is written to the store, synced, before the loop goes on (keep),
// and the courier (courier.go) delivers it to the owner of the key's
// partition of the control topic as a resolve that names the attempt by
// call id and downstream key (saga/fact.go): applied only while that
// attempt is the key's call in doubt. An unknown outcome is no fact: it
// says no more than the doubt itself.

// fact is one kept fact, as stored under its key (factKey).
type fact struct {
	Tenant string `msgpack:"tenant"`
	Key    string `msgpack:"key"`
	CallID string `msgpack:"call_id"`
	// DK is the attempt's downstream key: with CallID, what the owner
	// checks against the key's call in doubt.
	DK           string      `msgpack:"dk"`
	Compensation bool        `msgpack:"compensation,omitempty"`
	Status       saga.Status `msgpack:"status"` // succeeded, failed or not_executed
	Result       []byte      `msgpack:"result,omitempty"`
	Err          *saga.Error `msgpack:"err,omitempty"`
	Reason       string      `msgpack:"reason"`
	At           int64       `msgpack:"at"` // unix ms the member learnt it
}

var factPrefix = []byte(state.AuxFacts)

// factKey is the fact's key in the auxiliary space: one per attempt.
func factKey(f *fact) []byte {
	k := append(append([]byte(nil), factPrefix...), wire.RoutingKey(f.Tenant, f.Key)...)
	return append(append(k, 0), f.DK...)
}

// errFact is wrapped by the pair assertion's errors.
var errFact = errors.New("executor: fact")

// check is the pair assertion of a fact, run before it is written and
// after it is read.
func (f *fact) check() error {
	switch {
	case !wire.ValidTenant(f.Tenant) || f.Key == "":
		return fmt.Errorf("%w: no tenant and key", errFact)
	case f.CallID == "" || f.DK == "":
		return fmt.Errorf("%w %s/%s: no call id or downstream key", errFact, f.Tenant, f.Key)
	case f.Status != saga.StatusSucceeded && f.Status != saga.StatusFailed && f.Status != saga.StatusNotExecuted:
		return fmt.Errorf("%w %s/%s: status %s is no fact", errFact, f.Tenant, f.Key, f.Status)
	}
	return nil
}

func decodeFact(v []byte) (*fact, error) {
	var f fact
	if err := mpread.Unmarshal(v, &f); err != nil {
		return nil, fmt.Errorf("%w: %w", errFact, err)
	}
	return &f, f.check()
}

// outcomeFact is the fact a completion dropped for a moved partition
// carries, if any: a definite outcome of a call or compensation (a read
// is called again by its next owner; an unknown outcome is no fact).
func outcomeFact(cm partition.Completion, now int64) (*fact, bool) {
	c := cm.Call
	if c.Kind == saga.CallReadOnly || c.DownstreamKey == "" {
		return nil, false
	}
	switch cm.Outcome.Status {
	case saga.StatusSucceeded, saga.StatusFailed, saga.StatusNotExecuted:
	default:
		return nil, false
	}
	return &fact{Tenant: c.Tenant, Key: c.Key, CallID: c.CallID, DK: c.DownstreamKey, Compensation: c.Kind == saga.CallCompensation,
		Status: cm.Outcome.Status, Result: cm.Outcome.Result, Err: cm.Outcome.Err, At: now,
		Reason: "the member that made the call got this outcome after the key's partition moved"}, true
}

// unsentFact is the fact of a call started in a transaction whose end was
// unknown, and so never sent.
func unsentFact(c partition.Call, now int64) (*fact, bool) {
	if c.Kind == saga.CallReadOnly || c.DownstreamKey == "" {
		return nil, false
	}
	return &fact{Tenant: c.Tenant, Key: c.Key, CallID: c.CallID, DK: c.DownstreamKey, Compensation: c.Kind == saga.CallCompensation,
		Status: saga.StatusNotExecuted, At: now, Reason: "the member started the call and never sent it",
		Err: &saga.Error{Code: codes.ErrNotSent, Message: "the transaction that started the call ended with an unknown outcome, so the member did not make the call"}}, true
}

// factID is the fact's command id: derived from the fact alone, so that a
// fact delivered again (the member stopped between the broker's
// acknowledgement and forgetting it) is the same command.
func factID(f *fact) string {
	h := sha256.New()
	for _, part := range []string{"toolexec/member-fact/v1", f.Tenant, f.Key, f.CallID, f.DK, strconv.FormatBool(f.Compensation), f.Status.String()} {
		h.Write([]byte(strconv.Itoa(len(part))))
		h.Write([]byte{':'})
		h.Write([]byte(part))
	}
	return "mf-" + hex.EncodeToString(h.Sum(nil)[:12])
}

// factBy is the author every fact's resolve names.
const factBy = "executor"

// intent is the fact as the resolve the owner applies.
func (f *fact) intent() *wire.Intent {
	in := &wire.Intent{V: wire.Version, Type: wire.TypeResolve, ID: factID(f), Tenant: f.Tenant, Key: f.Key,
		Outcome: f.outcome(), By: factBy, Reason: f.Reason, CallID: f.CallID, DownstreamKey: f.DK}
	if f.Result != nil {
		in.Result = msgpack.RawMessage(f.Result)
	}
	if f.Err != nil {
		in.Error = &wire.ErrorInfo{Code: f.Err.Code, Message: f.Err.Message}
	}
	return in
}

// outcome is the resolve's outcome: a compensation's in its own words.
func (f *fact) outcome() string {
	switch {
	case f.Compensation && f.Status == saga.StatusSucceeded:
		return codes.StatusCompensated
	case f.Compensation && f.Status == saga.StatusFailed:
		return codes.StatusCompensationFailed
	}
	return f.Status.String()
}

// keepFacts writes facts, synced, and hands them to the courier. An error
// means the store could not take them: the member must stop (a fact it
// cannot keep is a fact lost), as for any failed write of its view.
func (e *Executor) keepFacts(facts []*fact) error {
	if len(facts) == 0 {
		return nil
	}
	b := e.store.NewBatch()
	for _, f := range facts {
		v, err := msgpack.Marshal(f)
		if err == nil {
			err = f.check()
		}
		if err == nil {
			err = b.PutAux(factKey(f), v)
		}
		if err != nil {
			b.Discard()
			return fmt.Errorf("%w: keep a fact: %w", ErrFatal, err)
		}
	}
	if err := b.Commit(state.Sync); err != nil {
		return fmt.Errorf("%w: keep facts: %w", ErrFatal, err)
	}
	e.cfg.Logger.Warn("calls' facts kept for their keys' owners", "facts", len(facts), "first_key", wire.RoutingKey(facts[0].Tenant, facts[0].Key),
		"reason", facts[0].Reason)
	for _, f := range facts {
		e.cfg.Logger.Info("a call's fact is kept for the key's owner", "key", wire.RoutingKey(f.Tenant, f.Key), "call", f.CallID,
			"status", f.Status.String(), "compensation", f.Compensation, "reason", f.Reason)
	}
	e.m.Facts.Kept.Add(float64(len(facts)))
	e.courier.wake()
	return nil
}

// keepLost keeps the facts of the completions a step dropped because
// their partition moved.
func (e *Executor) keepLost(lost []partition.Completion) error {
	var facts []*fact
	for _, cm := range lost {
		if f, ok := outcomeFact(cm, e.cfg.Now().UnixMilli()); ok {
			facts = append(facts, f)
		}
	}
	return e.keepFacts(facts)
}

// keepUnsent keeps the not_executed facts of the calls of a tick whose
// transaction end is unknown: its started events may have committed, and
// its calls were not made.
func (e *Executor) keepUnsent(calls []partition.Call) error {
	var facts []*fact
	for _, c := range calls {
		if f, ok := unsentFact(c, e.cfg.Now().UnixMilli()); ok {
			facts = append(facts, f)
		}
	}
	return e.keepFacts(facts)
}
