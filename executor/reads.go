package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/topics"
)

// Read-only calls and their obligation to answer (saga/read.go). The view
// keeps one aux entry per read taken on and not yet answered; a member
// that restores a partition calls again every read of it that no call of
// its own serves: those are the reads of an owner that died or lost the
// partition mid-call.

// resumeReadsLimit bounds the reads taken on at once per partition; the
// rest wait for the next restore of the partition.
const resumeReadsLimit = 10000

// idleRestoreAfter is how long a newly assigned partition that has
// received no record waits before it is restored anyway, so that the
// reads its previous owner left are answered without new traffic. The
// wait lets the previous owner's last transaction settle first.
const idleRestoreAfter = 2 * time.Second

func (t *tick) pendingRead(p int32, ev *saga.Event) {
	k := string(eventlog.ReadKeyOf(p, ev))
	if ev.Kind == saga.EvReadStarted {
		t.reads[k] = ev
	} else {
		t.reads[k] = nil
	}
}

// completeRead records a read's outcome and answers it, unless the log
// already holds its answer.
//
// Why: after a transaction end whose outcome is unknown, the next tick
// records the same completions again. A key's record tells such a replay
// apart (saga.Complete finds it settled), but a read keeps no record, so
// it was answered a second time whenever the unknown end had in fact
// committed (found by the chaos harness: 54 reads answered twice after a
// broker bounce). The pending-read entry, restored from the log first, is
// that record: present means not answered yet.
func (t *tick) completeRead(c completion) error {
	p := c.job.partition
	if err := t.e.ensureRestored(t.ctx, p); err != nil {
		return err
	}
	pending, err := t.readPending(p, c.job.call)
	if err != nil {
		return err
	}
	if !pending {
		t.e.forgetCall(c.job)
		t.e.cfg.Logger.Info("read outcome dropped: the log already holds its answer", "key", c.job.rk, "intent", c.job.call.CallID)
		return nil
	}
	t.recorded = append(t.recorded, c)
	d := saga.CompleteRead(c.job.call, toCompletion(c), t.env(c.job.rk))
	return t.emit(&entry{p: p}, d, c.job.call.Traceparent)
}

// readPending reports whether the read c on p is taken on and not
// answered, as of this tick.
func (t *tick) readPending(p int32, c saga.Call) (bool, error) {
	k := eventlog.ReadKey(p, c.Tenant, c.Key, c.CallID)
	if ev, ok := t.reads[string(k)]; ok {
		return ev != nil, nil
	}
	v, err := t.e.store.Aux(k)
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrFatal, err)
	}
	return v != nil, nil
}

// forgetStarted undoes the in-flight marks of a tick's calls that were
// never dispatched (its transaction did not commit).
func (e *Executor) forgetStarted(t *tick) {
	for _, j := range t.started {
		e.forgetCall(j)
	}
}

func (e *Executor) forgetCall(j job) {
	if j.call.Kind == saga.CallReadOnly {
		delete(e.reads, readID(j.rk, j.call.CallID))
		return
	}
	delete(e.inflight, j.rk)
}

// resumeReads dispatches the pending reads of p that no call of this
// member serves, once per assignment, right after p is restored. Their
// read_started events are already committed, so they need no transaction
// before the call.
func (e *Executor) resumeReads(p int32, o *ownership) {
	if o.readsResumed {
		return
	}
	o.readsResumed = true
	evs, err := eventlog.PendingReads(e.store, p, resumeReadsLimit)
	if err != nil {
		e.cfg.Logger.Error("pending reads unreadable; they wait for the next restore", "partition", p, "err", err)
		o.readsResumed = false
		return
	}
	var jobs []job
	for _, ev := range evs {
		rk := topics.RoutingKey(ev.Tenant, ev.Key)
		if _, mine := e.reads[readID(rk, ev.IntentID)]; mine {
			continue
		}
		c := saga.ReadCall(*ev, "")
		e.reads[readID(rk, c.CallID)] = inflightCall{partition: p, epoch: o.epoch}
		jobs = append(jobs, job{call: *c, partition: p, rk: rk, epoch: o.epoch})
	}
	if len(jobs) > 0 {
		e.cfg.Logger.Info("calling again the reads a previous owner left unanswered", "partition", p, "reads", len(jobs))
		e.m.ReadsResumed.Add(float64(len(jobs)))
		e.disp.submit(jobs...)
	}
}

// restoreIdle restores one owned partition that no record has made the
// loop restore yet, so its leftover reads are taken on. One per tick, and
// a restore that cannot settle within a second (the previous owner's
// transaction is still open) is tried again later: it never fails the
// tick and delays it by a bounded amount.
func (e *Executor) restoreIdle(ctx context.Context) {
	now := time.Now()
	for p, o := range e.owned {
		if o.restored || now.Sub(o.since) < idleRestoreAfter || now.Sub(o.lastTry) < idleRestoreAfter {
			continue
		}
		o.lastTry = now
		if err := e.restore(ctx, p, time.Second); err != nil {
			e.cfg.Logger.Debug("idle restore deferred", "partition", p, "err", err)
		}
		return
	}
}

// readID names a read-only call in flight: its routing key and intent id.
// An intent id alone is not unique across tenants (issue 12).
func readID(rk, intentID string) string { return rk + "\x00" + intentID }
