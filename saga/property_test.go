package saga_test

import (
	"fmt"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/saga"
)

// The property test drives the saga like executor/partition's Core does over
// random histories of a few keys and checks the promise after every step:
//
//   - at most one original invocation per key per epoch (an epoch ends only
//     when the key is settled not_executed or expires);
//   - no invocation (nor compensation) while a call of the key is in flight;
//   - no intent gets two terminal answers, and once every key in doubt is
//     resolved every intent has exactly one;
//   - the fold of the log from nothing equals the view kept incrementally;
//   - Decide, Complete and Expire never modify the record they are given;
//   - no call of a tool that needs approval starts but by an approve of its
//     request, for the arguments it recorded (approved, then started, in
//     one decision).

const (
	propRetention   = 1_000
	propTTL         = 100
	propApprovalTTL = 300
)

func propPolicies(tool string) (saga.Policy, bool) {
	switch tool {
	case "charge":
		return saga.Policy{PendingTTLMs: propTTL, RetentionMs: propRetention, CompensateWith: "refund", MaxArgsBytes: 16}, true
	case "email":
		return saga.Policy{PendingTTLMs: propTTL, RetentionMs: propRetention, MaxArgsBytes: 16}, true
	case "search":
		return saga.Policy{ReadOnly: true, MaxArgsBytes: 16}, true
	case "transfer":
		return saga.Policy{PendingTTLMs: propTTL, RetentionMs: propRetention, MaxArgsBytes: 16, ApprovalTTLMs: propApprovalTTL}, true
	}
	return saga.Policy{}, false
}

// propMode says which inputs a history may contain. The saga has bugs
// around compensations that were not executed and re-delivered compensate
// commands (see decide_test.go); the full mode includes them.
type propMode struct {
	compNotExecuted   bool // a compensation may complete or be resolved not_executed
	redeliverCompCmds bool // a compensate command may be re-delivered with its id
}

func TestPropertyHistories(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) { runHistory(rt, propMode{}) })
}

func TestPropertyHistoriesWithCompensationNotExecuted(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) { runHistory(rt, propMode{compNotExecuted: true, redeliverCompCmds: true}) })
}

type propKey struct {
	name        string
	rec         *saga.Record
	log         []saga.Event
	inflight    *saga.Call // the call of this key running in this process
	invocations int        // original invocations in the current epoch
}

type delivery struct {
	tag        string // unique per delivery, carried as the traceparent
	in         saga.Input
	redelivery bool // the same intent id delivered again
	readOnly   bool // answered by the runtime, not by the saga
}

type propModel struct {
	t          *rapid.T
	mode       propMode
	now        int64
	maxWaiters int
	keys       []*propKey
	calls      []*delivery // fresh call intents, for duplicates
	sent       []*delivery // call and compensate deliveries, for re-deliveries
	decisions  []*delivery // approve and deny commands, for re-deliveries
	deliveries map[string]*delivery
	order      []string       // tags in delivery order
	terminal   map[string]int // terminal answers per delivery tag
	nextID     int
	settling   bool // the history's end: the runtime has room for every call
}

func runHistory(t *rapid.T, mode propMode) {
	m := &propModel{t: t, mode: mode, now: t0, deliveries: map[string]*delivery{}, terminal: map[string]int{}}
	m.maxWaiters = rapid.IntRange(0, 4).Draw(t, "maxWaiters")
	for i := rapid.IntRange(2, 4).Draw(t, "keys"); i > 0; i-- {
		m.keys = append(m.keys, &propKey{name: fmt.Sprintf("k%d", len(m.keys))})
	}
	steps := rapid.IntRange(1, 80).Draw(t, "steps")
	for i := 0; i < steps; i++ {
		switch op := rapid.IntRange(0, 15).Draw(t, "op"); {
		case op <= 2:
			m.newIntent()
		case op == 14:
			m.decideOne()
		case op == 15:
			m.redeliverDecision()
		case op == 3:
			m.duplicateByKey()
		case op == 4:
			m.redeliver()
		case op <= 6:
			m.completeOne()
		case op == 7:
			m.crash()
		case op == 8:
			m.resolveOne()
		case op <= 10:
			m.compensateOne()
		case op <= 12:
			m.advance()
		default:
			m.expireOne(m.pickKey("expireKey"))
		}
	}
	m.settleAll()
	for _, tag := range m.order {
		d := m.deliveries[tag]
		if d.readOnly || d.redelivery {
			continue
		}
		if n := m.terminal[tag]; n != 1 {
			t.Fatalf("delivery %s (%s %s on %s) got %d terminal answers after every key was settled, want 1", tag, d.in.Type, d.in.IntentID, d.in.Key, n)
		}
	}
	m.liveness()
}

func (m *propModel) freshID() (id, tag string) {
	m.nextID++
	return fmt.Sprintf("i%d", m.nextID), fmt.Sprintf("d%d", m.nextID)
}

func (m *propModel) pickKey(label string) *propKey {
	return m.keys[rapid.IntRange(0, len(m.keys)-1).Draw(m.t, label)]
}

func (m *propModel) env(k *propKey) saga.Env {
	return saga.Env{Now: m.now, InFlight: k.inflight != nil, MaxWaiters: m.maxWaiters, Policy: propPolicies}
}

func (m *propModel) newIntent() {
	k := m.pickKey("key")
	tool := rapid.SampledFrom([]string{"charge", "charge", "charge", "email", "search", "transfer", "transfer"}).Draw(m.t, "tool")
	args := rapid.SampledFrom([]string{"a0", "a0", "a1"}).Draw(m.t, "args")
	id, tag := m.freshID()
	in := saga.Input{Type: saga.InputCall, IntentID: id, Tenant: tenant, Key: k.name, Tool: tool, ArgsHash: hashOf(args),
		Args: []byte(args), ReplyTo: "replies", Traceparent: tag, Partition: 0, Owner: 0}
	d := &delivery{tag: tag, in: in, readOnly: tool == "search"}
	m.calls = append(m.calls, d)
	m.deliver(k, d)
}

// duplicateByKey sends a new intent (fresh id) for the key, tool and
// arguments of an earlier call: the agent retried with the same key.
func (m *propModel) duplicateByKey() {
	if len(m.calls) == 0 {
		return
	}
	orig := m.calls[rapid.IntRange(0, len(m.calls)-1).Draw(m.t, "dupOf")]
	id, tag := m.freshID()
	in := orig.in
	in.IntentID, in.Traceparent = id, tag
	d := &delivery{tag: tag, in: in, readOnly: orig.readOnly}
	m.calls = append(m.calls, d)
	m.deliver(m.key(in.Key), d)
}

// redeliver delivers an earlier intent again with its id: the transport
// duplicated it. Its answers are counted apart from the first delivery's.
func (m *propModel) redeliver() {
	var pool []*delivery
	for _, d := range m.sent {
		if d.in.Type == saga.InputCall || m.mode.redeliverCompCmds {
			pool = append(pool, d)
		}
	}
	if len(pool) == 0 {
		return
	}
	orig := pool[rapid.IntRange(0, len(pool)-1).Draw(m.t, "redeliver")]
	m.nextID++
	tag := fmt.Sprintf("d%d", m.nextID)
	in := orig.in
	in.Traceparent = tag
	m.deliver(m.key(in.Key), &delivery{tag: tag, in: in, redelivery: true, readOnly: orig.readOnly})
}

// decideOne sends an operator's approve or deny for a key: for its
// current request and digest, another request, other arguments, or
// unconditional.
func (m *propModel) decideOne() {
	k := m.pickKey("decideKey")
	id, tag := m.freshID()
	typ := rapid.SampledFrom([]saga.InputType{saga.InputApprove, saga.InputApprove, saga.InputDeny}).Draw(m.t, "decision")
	in := saga.Input{Type: typ, IntentID: id, Tenant: tenant, Key: k.name, ReplyTo: "control", Traceparent: tag, By: "alice", Reason: "ok"}
	switch rapid.IntRange(0, 3).Draw(m.t, "target") {
	case 0:
		if k.rec != nil {
			in.CallID, in.ArgsHash = k.rec.Origin.IntentID, k.rec.ArgsHash
		}
	case 1:
		in.CallID = "i0"
	case 2:
		in.ArgsHash = hashOf("a1")
	}
	d := &delivery{tag: tag, in: in}
	m.decisions = append(m.decisions, d)
	m.deliver(k, d)
}

// redeliverDecision delivers an approve or deny again with its id.
func (m *propModel) redeliverDecision() {
	if len(m.decisions) == 0 {
		return
	}
	orig := m.decisions[rapid.IntRange(0, len(m.decisions)-1).Draw(m.t, "redeliverDecision")]
	m.nextID++
	in := orig.in
	in.Traceparent = fmt.Sprintf("d%d", m.nextID)
	m.deliver(m.key(in.Key), &delivery{tag: in.Traceparent, in: in, redelivery: true})
}

func (m *propModel) compensateOne() {
	k := m.pickKey("compKey")
	id, tag := m.freshID()
	in := saga.Input{Type: saga.InputCompensate, IntentID: id, Tenant: tenant, Key: k.name, ReplyTo: "replies",
		Traceparent: tag, By: "agent"}
	m.deliver(k, &delivery{tag: tag, in: in})
}

var (
	callOutcomes = []saga.Status{saga.StatusSucceeded, saga.StatusFailed, saga.StatusNotExecuted}
	compOutcomes = []saga.Status{saga.StatusCompensated, saga.StatusCompensationFailed}
	anyOutcome   = []saga.Status{saga.StatusSucceeded, saga.StatusFailed, saga.StatusNotExecuted, saga.StatusUnknown,
		saga.StatusCompensated, saga.StatusCompensationFailed}
)

func (m *propModel) resolveOne() {
	k := m.pickKey("resolveKey")
	outcome := rapid.SampledFrom(anyOutcome).Draw(m.t, "outcome")
	if !m.mode.compNotExecuted && outcome == saga.StatusNotExecuted && k.rec != nil &&
		(k.rec.Status == saga.StatusCompensating || k.rec.Status == saga.StatusCompensationUnknown) {
		outcome = saga.StatusCompensated
	}
	m.resolve(k, outcome, rapid.Bool().Draw(m.t, "force"))
}

// resolve: by the reconciler (force false, only past the deadline in a
// real run, any time here: the saga must refuse it before), or by an
// operator who forces it.
func (m *propModel) resolve(k *propKey, outcome saga.Status, force bool) saga.Decision {
	id, tag := m.freshID()
	in := saga.Input{Type: saga.InputResolve, IntentID: id, Tenant: tenant, Key: k.name, ReplyTo: "control",
		Traceparent: tag, Outcome: outcome, Result: []byte("resolved-" + id), By: "reconciler", Force: force}
	return m.deliver(k, &delivery{tag: tag, in: in})
}

// deliver decides one input for k and does what the runtime does with the
// decision.
func (m *propModel) deliver(k *propKey, d *delivery) saga.Decision {
	m.deliveries[d.tag] = d
	m.order = append(m.order, d.tag)
	if d.in.Type == saga.InputCall || d.in.Type == saga.InputCompensate {
		m.sent = append(m.sent, d)
	}
	before := k.rec.Clone()
	env := m.env(k)
	full := !m.settling && rapid.IntRange(0, 5).Draw(m.t, "full") == 0
	if full {
		env.Admit = func(string, string) *saga.Refusal {
			return &saga.Refusal{Code: codes.ErrOverShare, Message: "no room", RetryAfterMs: 1}
		}
	}
	dec := saga.Decide(k.rec, d.in, env)
	m.checkNotBeforeDeadline(k, d.in, dec)
	m.checkRefusal(k, d, dec, full)
	m.t.Logf("%s %s %s %s on %s (status %s, in flight %v) -> %s %v",
		d.tag, d.in.Type, d.in.IntentID, d.in.Tool, k.name, statusOf(k.rec), k.inflight != nil, dec.Verdict, kinds(dec.Events))
	if !reflect.DeepEqual(before, k.rec) {
		m.t.Fatalf("Decide modified the record of %s", k.name)
	}
	if d.readOnly && dec.Verdict != saga.VerdictReject && dec.Verdict != saga.VerdictRefuse && (len(dec.Events) != 1 || dec.Events[0].Kind != saga.EvReadStarted ||
		dec.Events[0].IntentID != d.in.IntentID || len(dec.Answers) != 0) {
		m.t.Fatalf("a read-only call logged %v and answered %d; want only its read_started", kinds(dec.Events), len(dec.Answers))
	}
	if dec.Verdict == saga.VerdictCoalesce && k.inflight == nil {
		m.t.Fatalf("%s coalesced on %s (%s) with no call in flight: nothing will answer it", d.in.IntentID, k.name, statusOf(k.rec))
	}
	// An intent parked on a key in doubt is told so at once.
	for _, ev := range dec.Events {
		if ev.Kind != saga.EvWaiting && ev.Kind != saga.EvCoalesced {
			continue
		}
		if ev.Waiter == nil || ev.Waiter.IntentID != d.in.IntentID || ev.Waiter.Traceparent != d.tag {
			m.t.Fatalf("%s registers waiter %+v", d.tag, ev.Waiter)
		}
		if k.inflight == nil && !answered(dec.Answers, d.tag, codes.StatusPending, codes.StatusCompensationPending) {
			m.t.Fatalf("%s was parked on %s (%s) without a pending answer", d.in.IntentID, k.name, statusOf(k.rec))
		}
	}
	m.apply(k, dec)
	return dec
}

// checkRefusal: an intent is refused only when the runtime has no room,
// and a refusal starts nothing, logs nothing but the end of a record's
// stale state (past its retention, or its approval request lapsed), and
// answers the intent once, not_executed.
func (m *propModel) checkRefusal(k *propKey, d *delivery, dec saga.Decision, full bool) {
	if dec.Verdict != saga.VerdictRefuse {
		// A person's approve starts its call whatever the room: the
		// runtime counts it, never refuses it.
		if full && dec.Call != nil && dec.Verdict != saga.VerdictApprove {
			m.t.Fatalf("%s started a call of %s with no room", d.in.IntentID, k.name)
		}
		return
	}
	if !full {
		m.t.Fatalf("%s refused on %s with room", d.in.IntentID, k.name)
	}
	for _, ev := range dec.Events {
		if ev.Kind != saga.EvExpired && ev.Kind != saga.EvApprovalLapsed {
			m.t.Fatalf("a refusal of %s logged %v", d.in.IntentID, kinds(dec.Events))
		}
	}
	var own []saga.Answer
	for _, a := range dec.Answers {
		if a.To.Traceparent == d.tag {
			own = append(own, a)
		}
	}
	if dec.Call != nil || len(own) != 1 || own[0].Err == nil || !codes.Busy(own[0].Status, own[0].Err.Code) {
		m.t.Fatalf("a refusal of %s called %v and answered it %+v", d.in.IntentID, dec.Call, own)
	}
}

func (m *propModel) completeOne() {
	var running []*propKey
	for _, k := range m.keys {
		if k.inflight != nil {
			running = append(running, k)
		}
	}
	if len(running) == 0 {
		return
	}
	k := running[rapid.IntRange(0, len(running)-1).Draw(m.t, "complete")]
	c := k.inflight
	statuses := []saga.Status{saga.StatusSucceeded, saga.StatusFailed, saga.StatusUnknown, saga.StatusNotExecuted}
	if c.Kind == saga.CallCompensation && !m.mode.compNotExecuted {
		statuses = statuses[:3]
	}
	comp := saga.Completion{CallID: c.CallID, Compensation: c.Kind == saga.CallCompensation,
		Status: rapid.SampledFrom(statuses).Draw(m.t, "status"), Result: []byte("result-" + c.CallID), Attempts: 1}
	if comp.Status != saga.StatusSucceeded {
		comp.Err = &saga.Error{Code: "boom-" + comp.Status.String()}
	}
	env := m.env(k)
	before := k.rec.Clone()
	dec := saga.Complete(k.rec, comp, env)
	m.t.Logf("complete %s %s on %s (compensation %v) -> %s %v", c.CallID, comp.Status, k.name, comp.Compensation, dec.Verdict, kinds(dec.Events))
	if !reflect.DeepEqual(before, k.rec) {
		m.t.Fatalf("Complete modified the record of %s", k.name)
	}
	if dec.Verdict != saga.VerdictRecord {
		m.t.Fatalf("the completion of the call in flight %s on %s was %s: its outcome would be lost", c.CallID, k.name, dec.Verdict)
	}
	k.inflight = nil
	m.apply(k, dec)
}

// crash: the process died. Calls in flight are gone with their outcomes;
// their keys are in doubt until resolved.
func (m *propModel) crash() {
	m.t.Logf("crash")
	for _, k := range m.keys {
		k.inflight = nil
	}
}

func (m *propModel) advance() {
	m.now += rapid.Int64Range(1, 3*propRetention/2).Draw(m.t, "advance")
}

func (m *propModel) expireOne(k *propKey) {
	before := k.rec.Clone()
	dec := saga.Expire(k.rec, m.env(k))
	m.t.Logf("expire %s (status %s) -> %s", k.name, statusOf(k.rec), dec.Verdict)
	if !reflect.DeepEqual(before, k.rec) {
		m.t.Fatalf("Expire modified the record of %s", k.name)
	}
	if dec.Verdict == saga.VerdictRecord && k.inflight != nil {
		m.t.Fatalf("%s expired while a call of it is in flight", k.name)
	}
	m.apply(k, dec)
}

// apply folds a decision's events into k's view, sends its answers and
// dispatches its call, checking the invariants on the way.
func (m *propModel) apply(k *propKey, dec saga.Decision) {
	t := m.t
	before := k.rec.Clone()
	for _, ev := range dec.Events {
		if ev.Key != k.name || ev.Tenant != tenant || ev.At != m.now || !ev.Kind.Valid() {
			t.Fatalf("event %+v on %s at %d", ev, k.name, m.now)
		}
		k.log = append(k.log, ev)
		k.rec = saga.Apply(k.rec, ev)
		if k.rec == nil || k.rec.Status == saga.StatusNotExecuted {
			k.invocations = 0 // a new epoch: the key is free
		}
	}

	perDecision := map[string]int{}
	for _, a := range dec.Answers {
		d := m.deliveries[a.To.Traceparent]
		if d == nil || d.in.IntentID != a.To.IntentID {
			t.Fatalf("answer %s to %s (%s) that was never delivered", a.Status, a.To.IntentID, a.To.Traceparent)
		}
		if !knownWireStatus(a.Status) {
			t.Fatalf("answer to %s has status %q", a.To.IntentID, a.Status)
		}
		if !codes.Terminal(a.Status) {
			continue
		}
		m.terminal[d.tag]++
		perDecision[a.To.IntentID]++
		if m.terminal[d.tag] > 1 {
			t.Fatalf("delivery %s of %s got a second terminal answer (%s)", d.tag, a.To.IntentID, a.Status)
		}
		if perDecision[a.To.IntentID] > 1 {
			t.Fatalf("one decision answers %s terminally twice", a.To.IntentID)
		}
	}

	if c := dec.Call; c != nil {
		if c.Key != k.name {
			t.Fatalf("call for %s decided on %s", c.Key, k.name)
		}
		switch c.Kind {
		case saga.CallOriginal:
			if k.inflight != nil {
				t.Fatalf("invocation %s of %s while %s is in flight", c.CallID, k.name, k.inflight.CallID)
			}
			if k.invocations > 0 {
				t.Fatalf("second invocation (%s) of %s in one epoch: no not_executed or expiry since the first", c.CallID, k.name)
			}
			if k.rec == nil || k.rec.Status != saga.StatusStarted || k.rec.Origin.IntentID != c.CallID {
				t.Fatalf("invocation %s of %s is not fenced by its started record: %+v", c.CallID, k.name, k.rec)
			}
			m.checkApproved(k, before, dec, c)
			k.invocations++
			k.inflight = c
		case saga.CallCompensation:
			if k.inflight != nil {
				t.Fatalf("compensation %s of %s while %s is in flight", c.CallID, k.name, k.inflight.CallID)
			}
			if k.rec == nil || k.rec.Status != saga.StatusCompensating || k.rec.Comp == nil || k.rec.Comp.Origin.IntentID != c.CallID {
				t.Fatalf("compensation %s of %s is not fenced by its record: %+v", c.CallID, k.name, k.rec)
			}
			k.inflight = c
		case saga.CallReadOnly:
			// The obligation to answer is logged; the key's record is not
			// touched (checkKey refolds the log, read events included).
			if len(dec.Events) != 1 || dec.Events[0].Kind != saga.EvReadStarted || dec.Events[0].IntentID != c.CallID {
				t.Fatalf("read-only call logged %v", kinds(dec.Events))
			}
		default:
			t.Fatalf("call of kind %d", c.Kind)
		}
	}

	m.checkKey(k)
}

// checkApproved: a call of a tool that needs approval starts only by an
// approve of the request it belongs to, for its recorded arguments.
func (m *propModel) checkApproved(k *propKey, before *saga.Record, dec saga.Decision, c *saga.Call) {
	if pol, _ := propPolicies(c.Tool); pol.ApprovalTTLMs == 0 {
		return
	}
	evs := dec.Events
	if before == nil || before.Status != saga.StatusAwaitingApproval || len(evs) != 2 || evs[0].Kind != saga.EvApproved ||
		evs[1].Kind != saga.EvStarted || evs[0].CallID != c.CallID || before.Origin.IntentID != c.CallID ||
		string(evs[0].ArgsHash) != string(before.ArgsHash) || string(evs[1].ArgsHash) != string(before.ArgsHash) ||
		string(c.Args) != string(before.Args) {
		m.t.Fatalf("call %s of %s (needs approval) started by %v from %+v", c.CallID, k.name, kinds(evs), before)
	}
}

// checkKey checks the state invariants of one key.
func (m *propModel) checkKey(k *propKey) {
	t := m.t
	if got, want := normalise(refold(k.log)), normalise(k.rec); !reflect.DeepEqual(got, want) {
		t.Fatalf("fold of the log of %s differs from the view:\nfold %+v\nview %+v", k.name, got, want)
	}
	rec := k.rec
	if rec == nil {
		if k.inflight != nil {
			t.Fatalf("%s has no record while %s is in flight", k.name, k.inflight.CallID)
		}
		return
	}
	if k.inflight != nil {
		want := saga.StatusStarted
		if k.inflight.Kind == saga.CallCompensation {
			want = saga.StatusCompensating
		}
		if rec.Status != want {
			t.Fatalf("%s is %s while %s (%d) is in flight", k.name, rec.Status, k.inflight.CallID, k.inflight.Kind)
		}
	}
	if (rec.Status.Settled() || rec.Status.Free()) && len(rec.Waiters) != 0 {
		t.Fatalf("%s is %s and still holds waiters %+v", k.name, rec.Status, rec.Waiters)
	}
	// Whoever still waits on the key has had no terminal answer yet.
	var waiting []saga.Waiter
	if !rec.OriginAnswered {
		waiting = append(waiting, rec.Origin)
	}
	if rec.Comp != nil && (rec.Status == saga.StatusCompensating || rec.Status == saga.StatusCompensationUnknown) {
		waiting = append(waiting, rec.Comp.Origin)
	}
	waiting = append(waiting, rec.Waiters...)
	for _, w := range waiting {
		if m.terminal[w.Traceparent] != 0 {
			t.Fatalf("%s waits on %s (%s) but already had its terminal answer", w.IntentID, k.name, rec.Status)
		}
	}
}

// checkNotBeforeDeadline: no command settles or undoes a call that may
// still reach its tool (before its PendingUntil) unless it was forced, and
// then the event says so.
func (m *propModel) checkNotBeforeDeadline(k *propKey, in saga.Input, dec saga.Decision) {
	if k.rec == nil || !k.rec.Status.InDoubt() || (in.Type != saga.InputResolve && in.Type != saga.InputCompensate) {
		return
	}
	until := k.rec.PendingUntil
	if c := k.rec.Comp; c != nil && (k.rec.Status == saga.StatusCompensating || k.rec.Status == saga.StatusCompensationUnknown) {
		until = c.PendingUntil
	}
	if m.now >= until {
		return
	}
	for _, ev := range dec.Events {
		switch ev.Kind {
		case saga.EvResolved, saga.EvCompensationStarted, saga.EvCompensationOutcome:
			if !in.Force || !ev.Forced {
				m.t.Fatalf("%s %s on %s (%s) %d ms before its deadline: %s (force %v, event forced %v)",
					in.Type, in.IntentID, k.name, k.rec.Status, until-m.now, ev.Kind, in.Force, ev.Forced)
			}
		}
	}
}

// settleAll ends the history: the process stops, and once every call's
// deadline has passed the reconciler resolves every key left in doubt.
func (m *propModel) settleAll() {
	m.settling = true
	m.crash()
	m.now += 2*propTTL + propApprovalTTL
	for _, k := range m.keys {
		if k.rec != nil && k.rec.Status == saga.StatusAwaitingApproval {
			m.expireOne(k) // the sweep lapses every request left
		}
		for i := 0; k.rec != nil && k.rec.Status.InDoubt(); i++ {
			if i == 4 {
				m.t.Fatalf("%s is still in doubt after %d resolves", k.name, i)
			}
			outcomes := callOutcomes
			if k.rec.Status == saga.StatusCompensating || k.rec.Status == saga.StatusCompensationUnknown {
				outcomes = compOutcomes
				if m.mode.compNotExecuted {
					outcomes = append([]saga.Status{saga.StatusNotExecuted}, compOutcomes...)
				}
			}
			if dec := m.resolve(k, rapid.SampledFrom(outcomes).Draw(m.t, "finalOutcome"), false); dec.Verdict != saga.VerdictResolve {
				m.t.Fatalf("resolve of %s in doubt was %s: %s", k.name, dec.Verdict, dec.Detail)
			}
		}
	}
}

// liveness: once every key is settled and its retention has passed, each
// key is free for a new call.
func (m *propModel) liveness() {
	m.now += 2 * propRetention
	for _, k := range m.keys {
		id, tag := m.freshID()
		in := saga.Input{Type: saga.InputCall, IntentID: id, Tenant: tenant, Key: k.name, Tool: "charge",
			ArgsHash: hashOf("a9"), Args: []byte("a9"), Traceparent: tag}
		if dec := m.deliver(k, &delivery{tag: tag, in: in}); dec.Verdict != saga.VerdictExecute {
			m.t.Fatalf("%s (%s) is not free after its retention: %s %s", k.name, statusOf(k.rec), dec.Verdict, dec.Detail)
		}
	}
}

func (m *propModel) key(name string) *propKey {
	for _, k := range m.keys {
		if k.name == name {
			return k
		}
	}
	m.t.Fatalf("no key %s", name)
	return nil
}

func statusOf(rec *saga.Record) saga.Status {
	if rec == nil {
		return saga.StatusNone
	}
	return rec.Status
}

func kinds(evs []saga.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Kind.String())
	}
	return out
}

func answered(as []saga.Answer, tag string, statuses ...string) bool {
	for _, a := range as {
		for _, s := range statuses {
			if a.To.Traceparent == tag && a.Status == s {
				return true
			}
		}
	}
	return false
}

func knownWireStatus(s string) bool {
	switch s {
	case codes.StatusSucceeded, codes.StatusFailed, codes.StatusNotExecuted, codes.StatusConflict, codes.StatusPending,
		codes.StatusRejected, codes.StatusCompensated, codes.StatusCompensationFailed, codes.StatusCompensationPending,
		codes.StatusResolved, codes.StatusApproved, codes.StatusDenied:
		return true
	}
	return false
}
