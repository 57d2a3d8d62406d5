package reconciler

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/tools"
)

// probeRecorder is a probe tool that remembers the downstream keys it was
// asked about, and answers that it never saw them.
type probeRecorder struct {
	mu    sync.Mutex
	asked []string
}

func (p *probeRecorder) Invoke(context.Context, tools.Request) tools.Outcome {
	return tools.Outcome{Status: tools.Unknown, Code: "not_for_invoking"}
}

func (p *probeRecorder) Probe(_ context.Context, dk string) tools.Outcome {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, dk)
	return tools.Outcome{Status: tools.NotExecuted, Code: "probe_not_found"}
}

// A key settled not_executed and then called again has a new call under a
// new downstream key. Its investigation must ask about that call: under
// the per-key key it would find the first call (which never acted) and
// settle the second one not_executed although it may have acted, freeing
// the key for a third call.
func TestReconcilerProbesTheCallInDoubtUnderItsOwnDownstreamKey(t *testing.T) {
	st := viewStore(t)
	r := &Reconciler{store: st, cfg: Config{Now: time.Now}, owned: map[int32]*partition{0: {epoch: 1}}}
	r.cfg.Names.Events = "ev"
	w := func(id string, at int64) *saga.Waiter { return &saga.Waiter{IntentID: id, Type: "call", At: at} }
	first := saga.Event{Kind: saga.EvStarted, Tenant: "acme", Key: "k1", At: 1, IntentID: "A", Tool: "deploy",
		ArgsHash: []byte{1}, Args: []byte{0x80}, PendingTTL: 10, RetentionMs: 1000, Attempt: 1, Waiter: w("A", 1), DownstreamKey: "tk2_first"}
	unknown := saga.Event{Kind: saga.EvOutcome, Tenant: "acme", Key: "k1", At: 2, IntentID: "A", CallID: "A", Status: saga.StatusUnknown}
	notExecuted := saga.Event{Kind: saga.EvResolved, Tenant: "acme", Key: "k1", At: 20, IntentID: "R", CallID: "A",
		Status: saga.StatusNotExecuted, By: "reconciler"}
	second := saga.Event{Kind: saga.EvStarted, Tenant: "acme", Key: "k1", At: 30, IntentID: "B", Tool: "deploy",
		ArgsHash: []byte{1}, Args: []byte{0x80}, PendingTTL: 10, RetentionMs: 1000, Attempt: 2, Waiter: w("B", 30), DownstreamKey: "tk2_second"}
	unknown2 := saga.Event{Kind: saga.EvOutcome, Tenant: "acme", Key: "k1", At: 31, IntentID: "B", CallID: "B", Status: saga.StatusUnknown}
	viewFold(t, r, viewRecord(t, 0, first), viewRecord(t, 1, unknown), viewRecord(t, 2, notExecuted),
		viewRecord(t, 3, second), viewRecord(t, 4, unknown2))

	rec, err := st.Get("acme", "k1")
	if err != nil {
		t.Fatal(err)
	}
	probe := &probeRecorder{}
	reg := tools.NewRegistry()
	if err := reg.Register(tools.Spec{Name: "deploy", Class: tools.Probe, URL: "http://127.0.0.1:1/deploy",
		ProbeURL: "http://127.0.0.1:1/deploy/status"}, probe); err != nil {
		t.Fatal(err)
	}
	subj, ok := SubjectOf(rec, RegistryLookup(reg))
	if !ok || subj.CallID != "B" || subj.DownstreamKey != "tk2_second" {
		t.Fatalf("subject %+v, want call B under tk2_second", subj)
	}
	wk := newWorkers(Config{Tools: reg, MaxConcurrent: 1}, func() {})
	defer wk.stop()
	wk.invoke(job{subj: subj, kind: StepProbe}, "", "")
	if len(probe.asked) != 1 || probe.asked[0] != "tk2_second" {
		t.Fatalf("the probe was asked about %v, want [tk2_second] (the per-key key is %s)", probe.asked,
			saga.DownstreamKey("", "acme", "deploy", "k1"))
	}
}

// A record from before keys were per call keeps the per-key key its call
// was made with; a compensation is investigated under its own key, and
// becomes the reconciler's at the PendingUntil its started event recorded.
func TestReconcilerSubjectDownstreamKeys(t *testing.T) {
	lookup := func(n string) (tools.Spec, bool) {
		return tools.Spec{Name: n, Class: tools.NativeKey, PendingTTL: time.Minute}, true
	}
	legacy := &saga.Record{Tenant: "acme", Key: "k1", Tool: "pay", Status: saga.StatusUnknown, Origin: saga.Waiter{IntentID: "A"}}
	if s, _ := SubjectOf(legacy, lookup); s.DownstreamKey != saga.DownstreamKey("", "acme", "pay", "k1") {
		t.Errorf("legacy call: %q", s.DownstreamKey)
	}
	comp := &saga.Record{Tenant: "acme", Key: "k1", Tool: "pay", Status: saga.StatusCompensationUnknown, Origin: saga.Waiter{IntentID: "A"},
		DownstreamKey: "tk2_call", Comp: &saga.Compensation{Tool: "refund", Origin: saga.Waiter{IntentID: "K"}, StartedAt: 1000,
			PendingUntil: 5000, DownstreamKey: "tk2_comp"}}
	if s, _ := SubjectOf(comp, lookup); s.DownstreamKey != "tk2_comp" || s.Deadline != 5000 {
		t.Errorf("compensation: key %q deadline %d, want tk2_comp and 5000", s.DownstreamKey, s.Deadline)
	}
	comp.Comp.DownstreamKey, comp.Comp.PendingUntil = "", 0
	if s, _ := SubjectOf(comp, lookup); s.DownstreamKey != saga.DownstreamKey("", "acme", "refund", "k1") || s.Deadline != 61_000 {
		t.Errorf("legacy compensation: key %q deadline %d", s.DownstreamKey, s.Deadline)
	}
}
