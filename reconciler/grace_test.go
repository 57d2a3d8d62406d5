package reconciler

import (
	"context"
	"testing"
	"time"

	"github.com/atmostonce/toolexec/tools"
)

func TestEscalateAfter(t *testing.T) {
	for _, c := range []struct {
		name                   string
		deadline, quiet, after int64
	}{
		{"no outage since the deadline: grace after the deadline", 1000, 500, 1000 + 90_000},
		{"an outage ended after the deadline: grace after its end", 1000, 5000, 5000 + 90_000},
	} {
		if got := escalateAfter(c.deadline, c.quiet, 90*time.Second); got != c.after {
			t.Errorf("%s: %d, want %d", c.name, got, c.after)
		}
	}
}

// An irreversible key past its deadline is not escalated while a member
// may still deliver its answer: within FactGrace of the end of the last
// outage, or before the view folded the log as it stood then. It is
// listed as awaiting facts meanwhile, and escalated once both hold.
func TestReconcilerEscalatesOnlyAfterTheGrace(t *testing.T) {
	reg := tools.NewRegistry()
	if err := reg.Register(tools.Spec{Name: "page", Class: tools.Irreversible, URL: "http://127.0.0.1:1/page"},
		tools.Func(func(context.Context, tools.Request) tools.Outcome { return tools.Outcome{Status: tools.Unknown} })); err != nil {
		t.Fatal(err)
	}
	r := scanReconciler(t, reg, 10)        // now: 1,000,000 unix ms; FactGrace: the default, 90 s
	putInDoubt(t, r, "acme", "k1", "page") // deadline: 11
	o := r.owned[0]
	r.noteMeasured(false) // the cluster stops answering...
	r.noteMeasured(true)  // ...and answers again now
	if r.quietSince != 1_000_000 {
		t.Fatalf("quietSince %d after an outage ended at 1,000,000", r.quietSince)
	}
	scan := func(now, measuredAt int64) (escalated bool, state string) {
		t.Helper()
		r.cfg.Now = func() time.Time { return time.UnixMilli(now) }
		o.prevStableAt, o.prevStable = measuredAt, o.next
		if err := r.scan(context.Background()); err != nil {
			t.Fatal(err)
		}
		rows := r.Rows()
		if len(rows) != 1 {
			t.Fatalf("%d rows", len(rows))
		}
		return len(escalatedKeys(t, r.store)) == 1, rows[0].State
	}
	const end = 1_000_000 + 90_000
	for _, c := range []struct {
		name            string
		now, measuredAt int64
		escalated       bool
		state           string
	}{
		{"within the grace after the outage", end - 1, end - 1, false, "awaiting_facts"},
		{"past it, on a view that folded only an older measurement", end + 500, end - 1, false, "awaiting_facts"},
		{"past it, on a view fresh since its end", end + 500, end, true, "escalated"},
	} {
		escalated, state := scan(c.now, c.measuredAt)
		if escalated != c.escalated || state != c.state {
			t.Fatalf("%s: escalated %v (%s), want %v (%s)", c.name, escalated, state, c.escalated, c.state)
		}
	}
	if v := counterValue(t, r.m.Escalations.WithLabelValues("page", "irreversible")); v != 1 {
		t.Fatalf("escalations_total %v, want 1", v)
	}
}
