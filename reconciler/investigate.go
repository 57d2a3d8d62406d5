package reconciler

import (
	"context"
	"fmt"
	"time"

	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/state"
	"github.com/atmostonce/toolexec/wire"
)

// examine plans and carries out the next step for one record in doubt.
func (r *Reconciler) examine(ctx context.Context, now int64, p int32, rec *saga.Record, g *gauges, rows *[]Row) error {
	subj, ok := SubjectOf(rec, r.lookup)
	if !ok {
		return nil
	}
	if now < subj.Deadline {
		g.started[subj.Tool]++
		// An executor call may still be running: not ours yet. A key known
		// to be in doubt is listed (an answer was lost); one merely started
		// is most likely a call in flight.
		if subj.Status == saga.StatusUnknown || subj.Status == saga.StatusCompensationUnknown {
			*rows = append(*rows, rowOf(now, subj, nil))
		}
		return nil
	}
	inv, err := r.investigation(subj)
	if err != nil {
		return err
	}
	step := Plan(now, subj, inv, r.cfg.Policy)
	if step.Kind == StepEscalate && !r.mayEscalate(now, p, subj) {
		g.add(now, subj, false)
		row := rowOf(now, subj, inv)
		row.State = "awaiting_facts" // a member may still deliver its answer (grace.go)
		*rows = append(*rows, row)
		return nil
	}
	g.add(now, subj, step.Inv.Escalated)
	*rows = append(*rows, rowOf(now, subj, &step.Inv))
	rk := wire.RoutingKey(subj.Tenant, subj.Key)
	if r.running[rk] {
		return nil // a retry or probe of it is on its way
	}
	if step.Kind == StepRetry && !r.owned[p].freshSince(subj.Deadline) {
		return nil // the view may not have folded the call's outcome yet: the next scan
	}
	if err := r.carryOut(ctx, p, rec, subj, step); err != nil {
		return err
	}
	if step.Inv.Escalated {
		r.owned[p].rememberEscalated(rk, subj, step.Inv)
	}
	return nil
}

// investigation loads what is remembered of subj's investigation; nil
// when nothing is, or when it belongs to an earlier subject of the key.
func (r *Reconciler) investigation(subj Subject) (*Investigation, error) {
	b, err := r.store.Aux(investigationKey(subj.Tenant, subj.Key, subj.Phase))
	if err != nil || b == nil {
		return nil, err
	}
	inv, err := decodeInvestigation(b)
	if err != nil {
		// Rebuildable knowledge: start the investigation afresh rather than
		// stop every other one.
		r.cfg.Logger.Error("reconciler: investigation unreadable; starting it again", "key", wire.RoutingKey(subj.Tenant, subj.Key), "err", err)
		return nil, nil
	}
	if !inv.matches(subj) {
		return nil, nil
	}
	return inv, nil
}

// carryOut does what step says. The investigation is stored (synced)
// before anything leaves the process, so a crash after a command was
// produced finds it remembered.
func (r *Reconciler) carryOut(ctx context.Context, p int32, rec *saga.Record, subj Subject, step Step) error {
	switch step.Kind {
	case StepRetry, StepProbe:
		return r.startJob(p, rec, subj, step)
	case StepCompensate, StepResolve:
		return r.send(ctx, subj, step)
	case StepEscalate:
		if !r.mayEscalate(r.now(), p, subj) {
			// A round judged the subject hopeless before the grace ended:
			// remembered unescalated, the next scan escalates it (Plan,
			// the attempts being spent) once the grace allows.
			inv := step.Inv
			inv.Escalated = false
			return r.remember(subj, &inv)
		}
		return r.escalate(subj, step)
	}
	if step.Changed {
		return r.remember(subj, &step.Inv)
	}
	return nil
}

func (r *Reconciler) startJob(p int32, rec *saga.Record, subj Subject, step Step) error {
	j := job{subj: subj, inv: step.Inv, kind: step.Kind, args: rec.Args, traceparent: rec.Origin.Traceparent,
		partition: p, epoch: r.owned[p].epoch}
	if !r.work.submit(j) {
		return nil // every slot is busy: the next scan tries again
	}
	r.running[j.routingKey()] = true
	return nil
}

// finish judges a finished retry or probe, unless its answer is stale: the
// partition moved, or the key's subject changed while it was asked.
func (r *Reconciler) finish(ctx context.Context, res result) error {
	rk := res.job.routingKey()
	delete(r.running, rk)
	if res.crash != nil {
		return res.crash
	}
	if o, ok := r.owned[res.job.partition]; !ok || o.epoch != res.job.epoch {
		return nil
	}
	rec, err := r.store.Get(res.job.subj.Tenant, res.job.subj.Key)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrFatal, err)
	}
	subj, ok := SubjectOf(rec, r.lookup)
	if !ok || subj.Phase != res.job.subj.Phase || subj.CallID != res.job.subj.CallID {
		return nil
	}
	step := Judge(r.now(), subj, res.job.inv, res.job.kind, res.out, r.cfg.Policy)
	r.m.Investigations.WithLabelValues(subj.Tool, string(subj.Class), judged(step, res)).Inc()
	if judged(step, res) == "ambiguous" {
		r.noteAnswer(res)
	}
	r.cfg.Logger.Info("reconciler: investigated", "key", rk, "tool", subj.Tool, "how", res.job.kind.String(),
		"answer", res.out.Status.String(), "code", res.out.Code, "next", step.Kind.String(), "attempts", step.Inv.Attempts)
	return r.carryOut(ctx, res.job.partition, rec, subj, step)
}

// judged is the outcome label of an investigation round.
func judged(step Step, res result) string {
	switch step.Kind {
	case StepResolve:
		return step.Cmd.Outcome
	case StepEscalate:
		return "escalated"
	}
	return "ambiguous"
}

// send remembers the command, then produces it. A failed produce leaves
// it remembered as sent: after CommandTimeout the round counts as failed
// and Plan sends again (the same id for a compensate).
func (r *Reconciler) send(ctx context.Context, subj Subject, step Step) error {
	if err := r.remember(subj, &step.Inv); err != nil {
		return err
	}
	rk := wire.RoutingKey(subj.Tenant, subj.Key)
	if err := r.cfg.Hooks.at(PointCommandRecorded, rk); err != nil {
		return err
	}
	if step.Kind == StepCompensate {
		r.m.Investigations.WithLabelValues(subj.Tool, string(subj.Class), "compensate").Inc()
	}
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := produceCommand(pctx, r.cl, r.cfg.Names, r.nControl, step.Cmd.intent(r.cfg.By)); err != nil {
		r.m.CommandErrors.WithLabelValues(step.Cmd.Type).Inc()
		r.cfg.Logger.Error("reconciler: command not sent; retried after the command timeout", "key", rk, "type", step.Cmd.Type, "err", err)
		return nil
	}
	if err := r.cfg.Hooks.at(PointCommandSent, rk); err != nil {
		return err
	}
	r.m.CommandsSent.WithLabelValues(step.Cmd.Type).Inc()
	r.cfg.Logger.Info("reconciler: command sent", "key", rk, "type", step.Cmd.Type, "id", step.Cmd.ID,
		"outcome", step.Cmd.Outcome, "call_id", subj.CallID, "reason", step.Cmd.Reason)
	return nil
}

func (r *Reconciler) escalate(subj Subject, step Step) error {
	if err := r.remember(subj, &step.Inv); err != nil {
		return err
	}
	r.m.Escalations.WithLabelValues(subj.Tool, string(subj.Class)).Inc()
	r.m.Investigations.WithLabelValues(subj.Tool, string(subj.Class), "escalated").Inc()
	r.cfg.Logger.Warn("reconciler: key escalated; an operator must settle it with `reconciler resolve`",
		"key", wire.RoutingKey(subj.Tenant, subj.Key), "tool", subj.Tool, "class", string(subj.Class),
		"phase", subj.Phase.String(), "call_id", subj.CallID, "status", subj.Status.String(),
		"since", time.UnixMilli(subj.CalledAt).UTC().Format(time.RFC3339), "reason", step.Inv.Reason)
	return nil
}

// remember stores inv, synced.
func (r *Reconciler) remember(subj Subject, inv *Investigation) error {
	v, err := encodeInvestigation(inv)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrFatal, err)
	}
	b := r.store.NewBatch()
	if err := b.PutAux(investigationKey(subj.Tenant, subj.Key, inv.Phase), v); err != nil {
		b.Discard()
		return fmt.Errorf("%w: %w", ErrFatal, err)
	}
	if err := b.Commit(state.Sync); err != nil {
		return fmt.Errorf("%w: %w", ErrFatal, err)
	}
	return nil
}
