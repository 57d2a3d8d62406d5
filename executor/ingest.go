package executor

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/topics"
)

// input decides one polled record. Bad input is answered and
// dead-lettered here and never stops the partition.
func (t *tick) input(r *kgo.Record) error {
	t.inputs++
	src := topics.FromIntents
	if r.Topic == t.e.cfg.Names.Control {
		src = topics.FromControl
	}
	in, rej := topics.DecodeIntent(r.Value, r.Key, src)
	if rej != nil {
		t.reject(r, rej)
		return nil
	}
	si, rej := t.e.toInput(in, r)
	if rej != nil {
		t.reject(r, rej)
		return nil
	}
	en := &entry{p: si.Owner} // a forward never reads or writes the view
	if si.Owner == si.Partition {
		var err error
		if en, err = t.load(si.Owner, si.Tenant, si.Key); err != nil {
			return err
		}
	}
	d := saga.Decide(en.cur, si, t.env(topics.RoutingKey(si.Tenant, si.Key)))
	return t.act(r, en, si, d)
}

// toInput turns a decoded intent into a saga input: canonical arguments,
// a usable reply address, and the owning partition.
func (e *Executor) toInput(in *topics.Intent, r *kgo.Record) (saga.Input, *topics.Reject) {
	_, canon, err := topics.CanonicalArgs(in.Args)
	if err != nil {
		return saga.Input{}, rejectFrom(in, topics.ReasonInvalidArgs, err.Error())
	}
	if in.ReplyTo != "" {
		if reason := e.replies.check(in.ReplyTo); reason != "" {
			return saga.Input{}, rejectFrom(in, topics.ReasonBadReplyTo, reason)
		}
	}
	si := saga.Input{
		IntentID: in.ID, Tenant: in.Tenant, Key: in.Key, Tool: in.Tool,
		ArgsHash: topics.ArgsHash(canon), Args: canon, ReplyTo: in.ReplyTo,
		Traceparent: header(r, "traceparent"), DeadlineMs: in.DeadlineMs,
		By: in.By, Reason: in.Reason, CallID: in.CallID, Force: in.Force,
		Partition: r.Partition, Owner: topics.Partition(in.RoutingKey(), e.layout.Partitions),
	}
	if in.Scope != nil {
		si.RunID, si.ThreadID = in.Scope.RunID, in.Scope.ThreadID
	}
	return si, fillType(&si, in)
}

func fillType(si *saga.Input, in *topics.Intent) *topics.Reject {
	switch in.Type {
	case topics.TypeCall:
		si.Type = saga.InputCall
	case topics.TypeCompensate:
		si.Type = saga.InputCompensate
	case topics.TypeResolve:
		si.Type = saga.InputResolve
		return fillResolve(si, in)
	}
	return nil
}

func fillResolve(si *saga.Input, in *topics.Intent) *topics.Reject {
	st, _ := saga.ParseStatus(in.Outcome)
	si.Outcome = st
	if in.Result != nil {
		b, err := msgpack.Marshal(in.Result)
		if err != nil || len(b) > topics.MaxResolveResult {
			return rejectFrom(in, topics.ReasonInvalidField, "field result cannot be stored (too large or not encodable)")
		}
		si.Result = b
	}
	if in.Error != nil {
		si.Err = &saga.Error{Code: in.Error.Code, Message: in.Error.Message}
	}
	return nil
}

func rejectFrom(in *topics.Intent, reason, detail string) *topics.Reject {
	return &topics.Reject{Reason: reason, Detail: detail, ID: in.ID, Tenant: in.Tenant, Key: in.Key, Tool: in.Tool, ReplyTo: in.ReplyTo, Type: in.Type}
}

// act carries out a decision on a polled record.
func (t *tick) act(r *kgo.Record, en *entry, si saga.Input, d saga.Decision) error {
	switch d.Verdict {
	case saga.VerdictForward:
		t.forward(r, si.Owner)
		t.verdicts[d.Verdict.String()]++
		return nil
	case saga.VerdictReject:
		t.deadLetter(r, d.Reason, d.Detail, si.IntentID, si.Tenant, si.Key)
	}
	if err := t.emit(en, d, si.Traceparent); err != nil {
		return err
	}
	if d.Call != nil {
		t.startCall(en.p, *d.Call)
	}
	return nil
}

func (t *tick) startCall(p int32, c saga.Call) {
	rk := topics.RoutingKey(c.Tenant, c.Key)
	j := job{call: c, partition: p, rk: rk, epoch: t.e.owned[p].epoch}
	if c.Kind == saga.CallReadOnly {
		t.e.reads[c.CallID] = inflightCall{partition: p, epoch: j.epoch}
	} else {
		t.e.inflight[rk] = inflightCall{partition: p, epoch: j.epoch}
	}
	t.started = append(t.started, j)
}

// complete records a finished call, unless its partition moved since it
// was dispatched: then its key is in doubt for the new owner (a read is
// called again by it) and the outcome is dropped (counted, logged), never
// written by a non-owner.
func (t *tick) complete(c completion) error {
	t.e.m.Calls.WithLabelValues(c.job.call.Tool, c.outcome.Status.String()).Inc()
	t.e.m.CallDuration.WithLabelValues(c.job.call.Tool).Observe(c.dur.Seconds())
	if o, ok := t.e.owned[c.job.partition]; !ok || o.epoch != c.job.epoch {
		t.e.m.OutcomesLost.Inc()
		t.e.cfg.Logger.Warn("outcome not recorded: partition moved; the key is in doubt for its owner", "key", c.job.rk, "status", c.outcome.Status.String())
		return nil
	}
	if c.job.call.Kind == saga.CallReadOnly {
		return t.completeRead(c)
	}
	t.recorded = append(t.recorded, c)
	t.done[c.job.rk] = true
	en, err := t.load(c.job.partition, c.job.call.Tenant, c.job.call.Key)
	if err != nil {
		return err
	}
	d := saga.Complete(en.cur, toCompletion(c), t.env(c.job.rk))
	return t.emit(en, d, c.job.call.Traceparent)
}

// sweep expires settled keys past their retention, a bounded number per
// tick, for the partitions this member owns.
func (t *tick) sweep() error {
	if time.Since(t.e.lastSweep) < t.e.cfg.SweepInterval {
		return nil
	}
	t.e.lastSweep = time.Now()
	keys, err := t.e.store.Expired(t.now, 1000)
	if err != nil {
		return err
	}
	for _, k := range keys {
		p := topics.Partition(topics.RoutingKey(k[0], k[1]), t.e.layout.Partitions)
		if o, ok := t.e.owned[p]; !ok || !o.restored {
			continue
		}
		en, err := t.load(p, k[0], k[1])
		if err != nil {
			return err
		}
		d := saga.Expire(en.cur, t.env(topics.RoutingKey(k[0], k[1])))
		if d.Verdict == saga.VerdictStale {
			continue
		}
		if err := t.emit(en, d, ""); err != nil {
			return err
		}
	}
	return nil
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}
