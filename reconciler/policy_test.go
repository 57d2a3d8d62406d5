package reconciler

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/wire"
)

const t0 = int64(1_700_000_000_000) // the deadline of every test subject (unix ms)

var testPolicy = Policy{MaxAttempts: 3, BackoffBase: 2 * time.Second, BackoffCap: 10 * time.Second, CommandTimeout: time.Minute}

func subj(class tools.Class, phase Phase) Subject {
	s := Subject{Tenant: "acme", Key: "k1", Phase: phase, CallID: "A", Tool: "pay", Class: class,
		Status: saga.StatusUnknown, CalledAt: t0 - 30_000, Deadline: t0}
	if class == tools.Compensatable && phase == PhaseCall {
		s.CompensateWith = "refund"
	}
	if phase == PhaseCompensation {
		s.CallID, s.Tool, s.Status = "K", "refund", saga.StatusCompensationUnknown
	}
	return s
}

func inv(f func(*Investigation)) *Investigation {
	i := &Investigation{Phase: PhaseCall, CallID: "A", StartedAt: t0}
	if f != nil {
		f(i)
	}
	return i
}

func TestReconcilerPlan(t *testing.T) {
	compensateID := commandID(subj(tools.Compensatable, PhaseCall), wire.TypeCompensate, 0)
	cases := []struct {
		name    string
		now     int64
		subj    Subject
		inv     *Investigation
		kind    StepKind
		at      int64
		changed bool
		check   func(t *testing.T, s Step)
	}{
		{name: "before the deadline an executor call may still run", now: t0 - 1, subj: subj(tools.NativeKey, PhaseCall),
			kind: StepWait, at: t0},
		{name: "native_key past the deadline is retried with its key", now: t0, subj: subj(tools.NativeKey, PhaseCall),
			kind: StepRetry, changed: true, check: wantInv(Investigation{Phase: PhaseCall, CallID: "A", StartedAt: t0})},
		{name: "probe past the deadline is probed", now: t0 + 5, subj: subj(tools.Probe, PhaseCall), kind: StepProbe, changed: true},
		{name: "compensatable is compensated, conditional on its call", now: t0 + 5, subj: subj(tools.Compensatable, PhaseCall),
			kind: StepCompensate, changed: true, check: func(t *testing.T, s Step) {
				want := &Command{Type: wire.TypeCompensate, ID: compensateID, Tenant: "acme", Key: "k1", CallID: "A",
					Reason: "in doubt past pending_ttl; compensating with refund"}
				if !reflect.DeepEqual(s.Cmd, want) {
					t.Errorf("command %+v, want %+v", s.Cmd, want)
				}
				if s.Inv.Sent == nil || *s.Inv.Sent != (Sent{Type: wire.TypeCompensate, ID: compensateID, At: t0 + 5}) {
					t.Errorf("sent %+v", s.Inv.Sent)
				}
			}},
		{name: "irreversible is escalated", now: t0 + 5, subj: subj(tools.Irreversible, PhaseCall), kind: StepEscalate, changed: true,
			check: wantEscalated(t0+5, "irreversible")},
		{name: "a tool missing from the configuration is escalated", now: t0, subj: subj("", PhaseCall), kind: StepEscalate, changed: true,
			check: wantEscalated(t0, "not in the reconciler's tool configuration")},
		{name: "a compensation in doubt by a native_key tool is retried", now: t0, subj: subj(tools.NativeKey, PhaseCompensation),
			inv: inv(nil), kind: StepRetry, changed: true, check: wantInv(Investigation{Phase: PhaseCompensation, CallID: "K", StartedAt: t0})},
		{name: "a compensation in doubt by a probe tool is probed", now: t0, subj: subj(tools.Probe, PhaseCompensation), kind: StepProbe, changed: true},
		{name: "a compensation in doubt by a compensatable tool is escalated", now: t0, subj: subj(tools.Compensatable, PhaseCompensation),
			kind: StepEscalate, changed: true, check: wantEscalated(t0, "compensation by \"refund\"")},
		{name: "a compensation in doubt by an irreversible tool is escalated", now: t0, subj: subj(tools.Irreversible, PhaseCompensation),
			kind: StepEscalate, changed: true},
		{name: "escalated stays idle until an operator acts", now: t0 + 1e6, subj: subj(tools.Irreversible, PhaseCall),
			inv: inv(func(i *Investigation) { i.Escalated, i.EscalatedAt = true, t0 }), kind: StepIdle},
		{name: "an investigation of an earlier call of the key is ignored", now: t0, subj: subj(tools.Irreversible, PhaseCall),
			inv: inv(func(i *Investigation) { i.CallID, i.Escalated = "OLD", true }), kind: StepEscalate, changed: true},
		{name: "a failed round waits for its backoff", now: t0 + 100, subj: subj(tools.Probe, PhaseCall),
			inv: inv(func(i *Investigation) { i.Attempts, i.NextAt = 1, t0+2000 }), kind: StepWait, at: t0 + 2000},
		{name: "after the backoff the next round starts", now: t0 + 2000, subj: subj(tools.Probe, PhaseCall),
			inv: inv(func(i *Investigation) { i.Attempts, i.NextAt = 1, t0+2000 }), kind: StepProbe, changed: true},
		{name: "a sent command is given its timeout to show in the log", now: t0 + 59_999, subj: subj(tools.Compensatable, PhaseCall),
			inv:  inv(func(i *Investigation) { i.Sent = &Sent{Type: wire.TypeCompensate, ID: compensateID, At: t0} }),
			kind: StepWait, at: t0 + 60_000},
		{name: "a compensate that never showed is sent again with the same id", now: t0 + 60_000, subj: subj(tools.Compensatable, PhaseCall),
			inv:  inv(func(i *Investigation) { i.Sent = &Sent{Type: wire.TypeCompensate, ID: compensateID, At: t0} }),
			kind: StepCompensate, changed: true, check: func(t *testing.T, s Step) {
				if s.Cmd.ID != compensateID || s.Inv.Attempts != 1 || s.Inv.Sent.At != t0+60_000 {
					t.Errorf("resend %+v, inv %+v", s.Cmd, s.Inv)
				}
			}},
		{name: "a resolve that never showed is not repeated blindly: the key is asked again", now: t0 + 60_000, subj: subj(tools.Probe, PhaseCall),
			inv: inv(func(i *Investigation) {
				i.Sent = &Sent{Type: wire.TypeResolve, ID: "rc-x", Outcome: "not_executed", At: t0}
			}),
			kind: StepProbe, changed: true, check: func(t *testing.T, s Step) {
				if s.Inv.Sent != nil || s.Inv.Attempts != 1 {
					t.Errorf("inv %+v", s.Inv)
				}
			}},
		{name: "commands that never land are escalated after max attempts", now: t0 + 60_000, subj: subj(tools.Compensatable, PhaseCall),
			inv: inv(func(i *Investigation) {
				i.Attempts, i.Sent = 2, &Sent{Type: wire.TypeCompensate, ID: compensateID, At: t0}
			}),
			kind: StepEscalate, changed: true, check: wantEscalated(t0+60_000, "never showed in the event log")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var before *Investigation
			if c.inv != nil {
				cp := *c.inv
				before = &cp
			}
			s := Plan(c.now, c.subj, c.inv, testPolicy)
			if s.Kind != c.kind || s.At != c.at || s.Changed != c.changed {
				t.Errorf("step %s at %d changed %v, want %s at %d changed %v (inv %+v)", s.Kind, s.At, s.Changed, c.kind, c.at, c.changed, s.Inv)
			}
			if !reflect.DeepEqual(before, c.inv) {
				t.Errorf("Plan modified the investigation it was given")
			}
			if !s.Inv.matches(c.subj) {
				t.Errorf("the step's investigation %+v is not the subject's", s.Inv)
			}
			if (s.Kind == StepCompensate || s.Kind == StepResolve) != (s.Cmd != nil) {
				t.Errorf("step %s with command %+v", s.Kind, s.Cmd)
			}
			if c.check != nil {
				c.check(t, s)
			}
		})
	}
}

func wantInv(want Investigation) func(*testing.T, Step) {
	return func(t *testing.T, s Step) {
		t.Helper()
		if !reflect.DeepEqual(s.Inv, want) {
			t.Errorf("investigation %+v, want %+v", s.Inv, want)
		}
	}
}

func wantEscalated(at int64, reason string) func(*testing.T, Step) {
	return func(t *testing.T, s Step) {
		t.Helper()
		if !s.Inv.Escalated || s.Inv.EscalatedAt != at || !strings.Contains(s.Inv.Reason, reason) || s.Inv.Sent != nil {
			t.Errorf("investigation %+v, want escalated at %d because %q", s.Inv, at, reason)
		}
	}
}

func TestReconcilerJudge(t *testing.T) {
	ok := tools.Outcome{Status: tools.Succeeded, Result: map[string]any{"id": "ch_1"}, Attempts: 1}
	declined := tools.Outcome{Status: tools.Failed, Code: "http_402", Message: "declined"}
	cases := []struct {
		name     string
		subj     Subject
		inv      Investigation
		kind     StepKind
		out      tools.Outcome
		step     StepKind
		outcome  string // of the resolve
		attempts int
		at       int64 // of a wait
	}{
		{name: "a retry that answers settles the key as succeeded", subj: subj(tools.NativeKey, PhaseCall), kind: StepRetry, out: ok,
			step: StepResolve, outcome: codes.StatusSucceeded},
		{name: "a retry answered with a definite refusal settles it as failed", subj: subj(tools.NativeKey, PhaseCall), kind: StepRetry,
			out: declined, step: StepResolve, outcome: codes.StatusFailed},
		{name: "409 means the first request still runs downstream: ask later", subj: subj(tools.NativeKey, PhaseCall), kind: StepRetry,
			out: tools.Outcome{Status: tools.Failed, Code: "http_409"}, step: StepWait, attempts: 1, at: t0 + 2000},
		{name: "a retry that never reached the tool says nothing about the first call", subj: subj(tools.NativeKey, PhaseCall), kind: StepRetry,
			out: tools.Outcome{Status: tools.NotExecuted, Code: "connection_refused"}, step: StepWait, attempts: 1, at: t0 + 2000},
		{name: "an ambiguous round backs off, doubling", subj: subj(tools.NativeKey, PhaseCall), inv: *inv(func(i *Investigation) { i.Attempts = 1 }),
			kind: StepRetry, out: tools.Outcome{Status: tools.Unknown, Code: "timeout"}, step: StepWait, attempts: 2, at: t0 + 4000},
		{name: "an ambiguous round at max attempts escalates", subj: subj(tools.Probe, PhaseCall), inv: *inv(func(i *Investigation) { i.Attempts = 2 }),
			kind: StepProbe, out: tools.Outcome{Status: tools.Unknown, Code: "http_500"}, step: StepEscalate, attempts: 3},
		{name: "a probe that found the call settles it as succeeded", subj: subj(tools.Probe, PhaseCall), kind: StepProbe, out: ok,
			step: StepResolve, outcome: codes.StatusSucceeded},
		{name: "a probe that found it failed settles it as failed", subj: subj(tools.Probe, PhaseCall), kind: StepProbe,
			out: tools.Outcome{Status: tools.Failed, Code: "probe_failed"}, step: StepResolve, outcome: codes.StatusFailed},
		{name: "a probe 404 settles it as not_executed", subj: subj(tools.Probe, PhaseCall), kind: StepProbe,
			out: tools.Outcome{Status: tools.NotExecuted, Code: "probe_not_found"}, step: StepResolve, outcome: codes.StatusNotExecuted},
		{name: "a compensation found done settles it as compensated", subj: subj(tools.Probe, PhaseCompensation),
			inv: Investigation{Phase: PhaseCompensation, CallID: "K"}, kind: StepProbe, out: ok, step: StepResolve, outcome: codes.StatusCompensated},
		{name: "a compensation refused settles it as compensation_failed", subj: subj(tools.NativeKey, PhaseCompensation),
			inv: Investigation{Phase: PhaseCompensation, CallID: "K"}, kind: StepRetry, out: declined, step: StepResolve, outcome: codes.StatusCompensationFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.inv.CallID == "" {
				c.inv = *inv(nil)
			}
			s := Judge(t0, c.subj, c.inv, c.kind, c.out, testPolicy)
			if s.Kind != c.step || s.Inv.Attempts != c.attempts || s.At != c.at || !s.Changed {
				t.Fatalf("step %s attempts %d at %d changed %v, want %s attempts %d at %d (inv %+v)", s.Kind, s.Inv.Attempts, s.At, s.Changed, c.step, c.attempts, c.at, s.Inv)
			}
			if c.step != StepResolve {
				return
			}
			cmd := s.Cmd
			if cmd.Type != wire.TypeResolve || cmd.Outcome != c.outcome || cmd.CallID != c.subj.CallID || cmd.Tenant != "acme" || cmd.Key != "k1" {
				t.Errorf("command %+v", cmd)
			}
			if c.out.Status == tools.Succeeded && !reflect.DeepEqual(cmd.Result, c.out.Result) || c.out.Status != tools.Succeeded && (cmd.Err == nil || cmd.Err.Code != c.out.Code) {
				t.Errorf("command carries result %v error %+v for %+v", cmd.Result, cmd.Err, c.out)
			}
			if s.Inv.Sent == nil || s.Inv.Sent.ID != cmd.ID || s.Inv.Sent.Outcome != c.outcome || s.Inv.Sent.At != t0 {
				t.Errorf("sent %+v", s.Inv.Sent)
			}
		})
	}
}

// A retry may answer a result larger than the executor keeps. The resolve
// then says succeeded without it, with the executor's result_not_stored
// code, instead of carrying it and being rejected by the executor (which
// would leave the key in doubt although the tool had answered). A result
// within the bound is carried whole.
func TestReconcilerResolveCarriesNoResultOverTheStoredBound(t *testing.T) {
	big := tools.Outcome{Status: tools.Succeeded, Result: map[string]any{"blob": strings.Repeat("x", wire.MaxResultBytes)}}
	s := Judge(t0, subj(tools.NativeKey, PhaseCall), *inv(nil), StepRetry, big, testPolicy)
	if s.Kind != StepResolve || s.Cmd.Outcome != codes.StatusSucceeded || s.Cmd.Result != nil || s.Cmd.Err == nil ||
		s.Cmd.Err.Code != "result_not_stored" {
		t.Fatalf("step %s, command %+v", s.Kind, s.Cmd)
	}
	if b, err := wire.EncodeIntent(s.Cmd.intent("reconciler")); err != nil || len(b) > wire.MaxMessageBytes {
		t.Fatalf("the command does not fit a message: %d bytes, %v", len(b), err)
	}
	fits := tools.Outcome{Status: tools.Succeeded, Result: map[string]any{"blob": strings.Repeat("x", wire.MaxResultBytes-64)}}
	s = Judge(t0, subj(tools.Probe, PhaseCompensation), Investigation{Phase: PhaseCompensation, CallID: "K"}, StepProbe, fits, testPolicy)
	if s.Kind != StepResolve || s.Cmd.Outcome != codes.StatusCompensated || s.Cmd.Result == nil || s.Cmd.Err != nil {
		t.Fatalf("a result within the bound: step %s, command outcome %s error %+v", s.Kind, s.Cmd.Outcome, s.Cmd.Err)
	}
}

func TestReconcilerBackoff(t *testing.T) {
	p := Policy{BackoffBase: time.Second, BackoffCap: 10 * time.Second}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for i, w := range want {
		if got := Backoff(i+1, p); got != w {
			t.Errorf("Backoff(%d) = %s, want %s", i+1, got, w)
		}
	}
	if got := Backoff(1000, p); got != 10*time.Second {
		t.Errorf("Backoff(1000) = %s", got)
	}
}

// Command ids are deterministic per subject, type and round, and differ
// across them: a resent compensate is the same command to the executor.
func TestReconcilerCommandID(t *testing.T) {
	s := subj(tools.Compensatable, PhaseCall)
	id := commandID(s, wire.TypeCompensate, 0)
	if id != commandID(s, wire.TypeCompensate, 0) || !strings.HasPrefix(id, "rc-") || len(id) > wire.MaxIDBytes {
		t.Fatalf("id %q", id)
	}
	other := s
	other.CallID = "B"
	seen := map[string]bool{id: true}
	for _, x := range []string{commandID(other, wire.TypeCompensate, 0), commandID(s, wire.TypeResolve, 0),
		commandID(s, wire.TypeResolve, 1), commandID(subj(tools.Compensatable, PhaseCompensation), wire.TypeCompensate, 0)} {
		if seen[x] {
			t.Errorf("id %q repeats", x)
		}
		seen[x] = true
	}
}

func TestReconcilerSubjectOf(t *testing.T) {
	specs := map[string]tools.Spec{
		"pay":    {Name: "pay", Class: tools.Compensatable, CompensateWith: "refund", PendingTTL: time.Minute},
		"refund": {Name: "refund", Class: tools.NativeKey, PendingTTL: 10 * time.Second},
	}
	lookup := func(n string) (tools.Spec, bool) { s, ok := specs[n]; return s, ok }
	rec := &saga.Record{Tenant: "acme", Key: "k1", Tool: "pay", Status: saga.StatusStarted, CalledAt: 1000, PendingUntil: 61_000,
		Origin: saga.Waiter{IntentID: "A"}, Waiters: []saga.Waiter{{IntentID: "B"}}, DownstreamKey: "tk2_a"}
	s, ok := SubjectOf(rec, lookup)
	want := Subject{Tenant: "acme", Key: "k1", Phase: PhaseCall, CallID: "A", Tool: "pay", Class: tools.Compensatable,
		DownstreamKey: "tk2_a", CompensateWith: "refund", Status: saga.StatusStarted, CalledAt: 1000, Deadline: 61_000, Waiters: 1}
	if !ok || s != want {
		t.Errorf("call: %+v, want %+v", s, want)
	}
	comp := rec.Clone()
	comp.Status, comp.Comp = saga.StatusCompensating, &saga.Compensation{Tool: "refund", Origin: saga.Waiter{IntentID: "K"}, StartedAt: 70_000}
	s, ok = SubjectOf(comp, lookup)
	if !ok || s.Phase != PhaseCompensation || s.CallID != "K" || s.Tool != "refund" || s.Class != tools.NativeKey || s.Deadline != 80_000 || s.CalledAt != 70_000 {
		t.Errorf("compensation: %+v", s)
	}
	unknown := rec.Clone()
	unknown.Tool = "gone"
	if s, ok := SubjectOf(unknown, lookup); !ok || s.Class != "" {
		t.Errorf("unconfigured tool: %+v", s)
	}
	settled := rec.Clone()
	settled.Status = saga.StatusSucceeded
	if _, ok := SubjectOf(settled, lookup); ok {
		t.Error("a settled key has a subject")
	}
	comp.Comp.PrevStatus = saga.StatusStarted
	if callIdentity(rec) != "A" || callIdentity(comp) != "A" || compensationIdentity(comp) != "K" || compensationIdentity(rec) != "" ||
		callIdentity(settled) != "" || callIdentity(nil) != "" || compensationIdentity(nil) != "" {
		t.Errorf("identities: call %q %q %q, compensation %q %q", callIdentity(rec), callIdentity(comp), callIdentity(settled),
			compensationIdentity(rec), compensationIdentity(comp))
	}
	comp.Comp.PrevStatus = saga.StatusSucceeded // an agent undoing a success: no call in doubt
	if callIdentity(comp) != "" {
		t.Errorf("the compensation of a succeeded call keeps a call investigation alive")
	}
}

func TestReconcilerInvestigationCodec(t *testing.T) {
	in := &Investigation{Phase: PhaseCall, CallID: "A", Attempts: 2, StartedAt: t0, NextAt: t0 + 5, Reason: "probe: timeout",
		Sent: &Sent{Type: wire.TypeResolve, ID: "rc-1", Outcome: "succeeded", At: t0}}
	b, err := encodeInvestigation(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeInvestigation(b)
	if err != nil || !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip: %+v, %v", out, err)
	}
	for _, bad := range []*Investigation{{CallID: "A"}, {Phase: PhaseCall}, {Phase: PhaseCall, CallID: "A", Attempts: -1},
		{Phase: PhaseCall, CallID: "A", Sent: &Sent{Type: "resolve"}}} {
		if _, err := encodeInvestigation(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("encode %+v: %v", bad, err)
		}
	}
	if _, err := decodeInvestigation([]byte{0xc1}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("decode garbage: %v", err)
	}
}

func TestReconcilerMergeAndState(t *testing.T) {
	s := subj(tools.Irreversible, PhaseCall)
	logRow := rowOf(t0+10, s, nil)
	if logRow.State != "escalated" || logRow.Investigated {
		t.Errorf("an irreversible key past its deadline: %+v", logRow)
	}
	if w := rowOf(t0-1, s, nil); w.State != "within_ttl" {
		t.Errorf("within the ttl: %+v", w)
	}
	if w := rowOf(t0, subj(tools.Probe, PhaseCall), nil); w.State != "probe" {
		t.Errorf("a probe key: %+v", w)
	}
	live := rowOf(t0+10, subj(tools.Probe, PhaseCall), inv(func(i *Investigation) {
		i.Attempts, i.Sent = 1, &Sent{Type: wire.TypeResolve, Outcome: "succeeded", ID: "rc-9", At: t0}
	}))
	live.Class = "probe"
	other := logRow
	other.Key, other.CalledAt = "k0", logRow.CalledAt-1
	got := Merge([]Row{logRow, other}, []Row{live})
	if len(got) != 2 || got[0].Key != "k0" || got[1].State != "command_sent" || got[1].Attempts != 1 || !got[1].Investigated ||
		got[1].Command != "resolve succeeded rc-9" || got[0].Investigated {
		t.Errorf("merged %+v", got)
	}
}
