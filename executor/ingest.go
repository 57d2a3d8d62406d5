package executor

import (
	"fmt"
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
	if t.e.poison.isolated(t.origin) > 0 {
		t.isolate(r, src)
		return nil
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

// isolate answers an input whose records could not be produced before,
// on its own: rejected `unproducible` on the results topic and
// dead-lettered with a prefix of its value (after a second failure, bare:
// deadLetter). Its offset commits with the rest of the tick (poison.go).
func (t *tick) isolate(r *kgo.Record, src topics.Source) {
	rej := &topics.Reject{}
	if in, r2 := topics.DecodeIntent(r.Value, r.Key, src); r2 != nil {
		rej = r2
	} else {
		rej = rejectFrom(in, "", "")
	}
	rej.Reason = topics.ReasonUnproducible
	rej.Detail = "a record produced for this input was refused by the broker (too large, or its topic is gone); the input was not decided"
	t.reject(r, rej)
}

// toInput turns a decoded intent into a saga input: canonical arguments,
// bounded headers, a reply address that is not ours, and the owning
// partition.
//
// A reply_to topic that does not exist is no reason to refuse the intent:
// its answer goes to the results topic with the reason (replyTopic).
func (e *Executor) toInput(in *topics.Intent, r *kgo.Record) (saga.Input, *topics.Reject) {
	_, canon, err := topics.CanonicalArgs(in.Args)
	if err != nil {
		return saga.Input{}, rejectFrom(in, topics.ReasonInvalidArgs, err.Error())
	}
	if rej := checkRecordHeaders(r); rej != nil {
		return saga.Input{}, rejectFrom(in, rej.Reason, rej.Detail)
	}
	if in.ReplyTo != "" && e.cfg.Names.Internal(in.ReplyTo) {
		return saga.Input{}, rejectFrom(in, topics.ReasonBadReplyTo, "reply_to names an internal topic of the executor")
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

// checkRecordHeaders bounds the headers the executor copies: the trace
// headers into events and answers, all of them into a forward.
func checkRecordHeaders(r *kgo.Record) *topics.Reject {
	if rej := topics.CheckHeaders(header(r, "traceparent"), header(r, "tracestate")); rej != nil {
		return rej
	}
	n := 0
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	if n > topics.MaxForwardHeaderBytes {
		return &topics.Reject{Reason: topics.ReasonOversized, Detail: fmt.Sprintf("the record's headers are %d bytes, the limit is %d", n, topics.MaxForwardHeaderBytes)}
	}
	return nil
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
		if err != nil || len(b) > topics.MaxResultBytes {
			return rejectFrom(in, topics.ReasonInvalidField, fmt.Sprintf("field result cannot be stored: not encodable, or over %d bytes", topics.MaxResultBytes))
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
		t.e.reads[readID(rk, c.CallID)] = inflightCall{partition: p, epoch: j.epoch}
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
	if t.e.poison.isolated(t.origin) > 0 {
		c = withoutResult(c)
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

// withoutResult is a completion whose records could not be produced,
// recorded again without its result: the outcome itself must not be lost.
func withoutResult(c completion) completion {
	if c.outcome.Result != nil {
		c.outcome.Result = nil
		c.outcome.Code, c.outcome.Message = codeResultNotStored, "the answer carrying the tool's result could not be produced; the call's outcome stands"
	}
	return c
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}
