package saga_test

import (
	"fmt"
	"testing"

	"github.com/atmostonce/toolexec/saga"
)

// BenchmarkDecideApply measures the per-intent cost of the saga in the
// partition core's Step: Decide, then Apply of every event of the decision (on a
// clone of the view's record where there is one, as the tick's overlay does).
func BenchmarkDecideApply(b *testing.B) {
	env := saga.Env{Now: t0, Policy: policies}

	b.Run("new key", func(b *testing.B) {
		ins := make([]saga.Input, 1024)
		for i := range ins {
			ins[i] = call(fmt.Sprintf("A%d", i), "x")
			ins[i].Key = fmt.Sprintf("k%d", i)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			d := saga.Decide(nil, ins[i%len(ins)], env)
			var rec *saga.Record
			for _, ev := range d.Events {
				rec = saga.Apply(rec, ev)
			}
			if d.Verdict != saga.VerdictExecute || rec == nil {
				b.Fatalf("verdict %s", d.Verdict)
			}
		}
	})

	b.Run("replay", func(b *testing.B) {
		var view *saga.Record
		for _, ev := range saga.Decide(nil, call("A", "x"), env).Events {
			view = saga.Apply(view, ev)
		}
		for _, ev := range saga.Complete(view, saga.Completion{CallID: "A", Status: saga.StatusSucceeded, Result: []byte("ok")}, env).Events {
			view = saga.Apply(view, ev)
		}
		dup := call("B", "x")
		b.ReportAllocs()
		for b.Loop() {
			d := saga.Decide(view, dup, env)
			rec := view.Clone()
			for _, ev := range d.Events {
				rec = saga.Apply(rec, ev)
			}
			if d.Verdict != saga.VerdictReplay || len(d.Answers) != 1 {
				b.Fatalf("verdict %s", d.Verdict)
			}
		}
	})

	b.Run("coalesce and complete", func(b *testing.B) {
		var view *saga.Record
		for _, ev := range saga.Decide(nil, call("A", "x"), env).Events {
			view = saga.Apply(view, ev)
		}
		inFlight := env
		inFlight.InFlight = true
		dup := call("B", "x")
		done := saga.Completion{CallID: "A", Status: saga.StatusSucceeded, Result: []byte("ok")}
		b.ReportAllocs()
		for b.Loop() {
			rec := view.Clone()
			for _, ev := range saga.Decide(rec, dup, inFlight).Events {
				rec = saga.Apply(rec, ev)
			}
			d := saga.Complete(rec, done, env)
			for _, ev := range d.Events {
				rec = saga.Apply(rec, ev)
			}
			if len(d.Answers) != 2 {
				b.Fatalf("answers %d", len(d.Answers))
			}
		}
	})
}

// BenchmarkRefold measures a restore: the fold of a key's log from nothing.
func BenchmarkRefold(b *testing.B) {
	env := saga.Env{Now: t0, InFlight: true, Policy: policies}
	var rec *saga.Record
	var log []saga.Event
	step := func(d saga.Decision) {
		for _, ev := range d.Events {
			log = append(log, ev)
			rec = saga.Apply(rec, ev)
		}
	}
	step(saga.Decide(rec, call("A", "x"), env))
	for i := 0; i < 16; i++ {
		step(saga.Decide(rec, call(fmt.Sprintf("W%d", i), "x"), env))
	}
	step(saga.Complete(rec, saga.Completion{CallID: "A", Status: saga.StatusSucceeded}, env))
	for i := 0; i < 16; i++ {
		step(saga.Decide(rec, call(fmt.Sprintf("R%d", i), "x"), env))
	}
	b.ReportAllocs()
	for b.Loop() {
		if refold(log) == nil {
			b.Fatal("nil fold")
		}
	}
}
