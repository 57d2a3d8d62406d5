package executor

import (
	"github.com/atmostonce/toolexec/internal/tracing"

	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/executor/partition"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/wire"
)

// Prepare: everything a tick needs before the core decides, none of
// which needs the core's state. Polled records are decoded, validated,
// canonicalised and routed (per record, so a later change can spread it
// over cores), finished calls are converted to the saga's vocabulary, and
// the reply_to topics the intents name are looked up in one request.

// prepared is one tick's input: the batch the core steps, and the polled
// records in the same order (dead letters and forwards copy their bytes).
type prepared struct {
	batch   partition.Batch
	records []*kgo.Record
}

// prepare decodes the polled records, on every core (spread.go), and
// looks up their reply topics.
func (e *Executor) prepare(fs kgo.Fetches) *prepared {
	pr := &prepared{}
	if n := fs.NumRecords(); n > 0 {
		pr.records = make([]*kgo.Record, 0, n)
	}
	fs.EachRecord(func(r *kgo.Record) { pr.records = append(pr.records, r) })
	pr.batch.Inputs = make([]partition.Input, len(pr.records))
	spread(len(pr.records), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			pr.batch.Inputs[i] = e.decode(pr.records[i])
		}
	})
	replyTo := map[string]bool{}
	for i := range pr.batch.Inputs {
		if to := pr.batch.Inputs[i].Salvage.ReplyTo; to != "" {
			replyTo[to] = true // an answer, a rejection's too, may go there
		}
	}
	if len(replyTo) > 0 {
		e.replies.resolve(replyTo)
	}
	return pr
}

// decode turns one polled record into the core's input: the saga's input
// when it is valid, else the reason it is not, and always what could be
// read of it (to answer it on its own if it must be isolated). It runs on
// several goroutines at once: it reads only the record, the immutable
// configuration and the layout (changed by the loop only between ticks).
func (e *Executor) decode(r *kgo.Record) partition.Input {
	in := partition.Input{Origin: partition.Origin{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset},
		Traceparent: header(r, "traceparent"), RecordKey: r.Key}
	src := wire.FromIntents
	if r.Topic == e.cfg.Names.Control {
		src = wire.FromControl
	}
	ti, rej := wire.DecodeIntent(r.Value, r.Key, src)
	if rej != nil {
		in.Reject, in.Salvage = rej, *rej
		return in
	}
	in.Salvage = wire.Reject{ID: ti.ID, Tenant: ti.Tenant, Key: ti.Key, Tool: ti.Tool, ReplyTo: ti.ReplyTo, Type: ti.Type}
	si, rej := e.toInput(ti, r, in.Traceparent)
	if rej != nil {
		in.Reject = rej
		return in
	}
	in.Intent = si
	return in
}

// toInput turns a decoded intent into a saga input: canonical arguments,
// bounded headers, a reply address that is not ours, and the owning
// partition.
//
// A reply_to topic that does not exist is no reason to refuse the intent:
// its answer goes to the results topic with the reason (encode.go).
func (e *Executor) toInput(in *wire.Intent, r *kgo.Record, traceparent string) (saga.Input, *wire.Reject) {
	_, canon, err := wire.CanonicalArgs(in.Args)
	if err != nil {
		return saga.Input{}, rejectFrom(in, codes.ReasonInvalidArgs, err.Error())
	}
	if rej := checkRecordHeaders(r); rej != nil {
		return saga.Input{}, rejectFrom(in, rej.Reason, rej.Detail)
	}
	if in.ReplyTo != "" && e.cfg.Names.Internal(in.ReplyTo) {
		return saga.Input{}, rejectFrom(in, codes.ReasonBadReplyTo, "reply_to names an internal topic of the executor")
	}
	si := saga.Input{
		IntentID: in.ID, Tenant: in.Tenant, Key: in.Key, Tool: in.Tool,
		ArgsHash: wire.ArgsHash(canon), Args: canon, ReplyTo: in.ReplyTo,
		Traceparent: traceparent, DeadlineMs: in.DeadlineMs,
		By: in.By, Reason: in.Reason, CallID: in.CallID, Force: in.Force,
		Partition: r.Partition, Owner: e.partitionOf(in.Tenant, in.Key),
	}
	if in.Scope != nil {
		si.RunID, si.ThreadID = in.Scope.RunID, in.Scope.ThreadID
	}
	return si, fillType(&si, in)
}

// checkRecordHeaders bounds the headers the executor copies: the trace
// headers into events and answers, all of them into a forward.
func checkRecordHeaders(r *kgo.Record) *wire.Reject {
	if rej := wire.CheckHeaders(header(r, "traceparent"), header(r, "tracestate")); rej != nil {
		return rej
	}
	n := 0
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	if n > wire.MaxForwardHeaderBytes {
		return &wire.Reject{Reason: codes.ReasonOversized, Detail: fmt.Sprintf("the record's headers are %d bytes, the limit is %d", n, wire.MaxForwardHeaderBytes)}
	}
	return nil
}

func fillType(si *saga.Input, in *wire.Intent) *wire.Reject {
	switch in.Type {
	case wire.TypeCall:
		si.Type = saga.InputCall
	case wire.TypeCompensate:
		si.Type = saga.InputCompensate
	case wire.TypeResolve:
		si.Type = saga.InputResolve
		return fillResolve(si, in)
	}
	return nil
}

func fillResolve(si *saga.Input, in *wire.Intent) *wire.Reject {
	st, _ := saga.ParseStatus(in.Outcome)
	si.Outcome = st
	if in.Result != nil {
		b, err := msgpack.Marshal(in.Result)
		if err != nil || len(b) > wire.MaxResultBytes {
			return rejectFrom(in, codes.ReasonInvalidField, fmt.Sprintf("field result cannot be stored: not encodable, or over %d bytes", wire.MaxResultBytes))
		}
		si.Result = b
	}
	if in.Error != nil {
		si.Err = &saga.Error{Code: in.Error.Code, Message: in.Error.Message}
	}
	return nil
}

func rejectFrom(in *wire.Intent, reason, detail string) *wire.Reject {
	return &wire.Reject{Reason: reason, Detail: detail, ID: in.ID, Tenant: in.Tenant, Key: in.Key, Tool: in.Tool, ReplyTo: in.ReplyTo, Type: in.Type}
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// collectCompletions hands every finished call the dispatcher holds to
// the core, without blocking.
func (e *Executor) collectCompletions() {
	for {
		select {
		case c := <-e.disp.out:
			e.finished(c)
		default:
			return
		}
	}
}

// finished counts a finished call and hands it to the core.
func (e *Executor) finished(c completion) {
	e.m.Calls.WithLabelValues(c.job.Tool, c.outcome.Status.String()).Inc()
	tracing.Observe(e.m.CallDuration.WithLabelValues(c.job.Tool), c.dur.Seconds(), c.traceID)
	e.core.Finished(toCompletion(c.job, c.outcome))
}

// toCompletion converts a tool outcome to the saga's vocabulary. A result
// that cannot be encoded is still a success: the effect happened.
func toCompletion(j partition.Call, out tools.Outcome) partition.Completion {
	sc := saga.Completion{CallID: j.CallID, Compensation: j.Kind == saga.CallCompensation, Attempts: out.Attempts}
	switch out.Status {
	case tools.Succeeded:
		sc.Status = saga.StatusSucceeded
	case tools.Failed:
		sc.Status = saga.StatusFailed
	case tools.NotExecuted:
		sc.Status = saga.StatusNotExecuted
	default:
		sc.Status = saga.StatusUnknown
	}
	if out.Status != tools.Succeeded || out.Code == codes.ErrResultNotStored {
		sc.Err = &saga.Error{Code: out.Code, Message: out.Message}
	}
	if out.Result != nil {
		b, err := encodeToolResult(out.Result)
		if err != nil || len(b) > wire.MaxResultBytes {
			sc.Err = &saga.Error{Code: codes.ErrResultNotStored, Message: "the tool's result is too large or not encodable; the call succeeded"}
		} else {
			sc.Result = b
		}
	}
	return partition.Completion{Call: j, Outcome: sc, HadResult: out.Result != nil}
}
