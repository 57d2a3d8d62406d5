package executor

import (
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/executor/partition"
	"github.com/atmostonce/toolexec/internal/msgpack/mpwrite"
	"github.com/atmostonce/toolexec/internal/tracing"
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
	poll    partition.Poll
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
	pr.poll.Inputs = make([]partition.Input, len(pr.records))
	spread(len(pr.records), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			pr.poll.Inputs[i] = e.dec.decode(pr.records[i])
		}
	})
	replyTo := map[string]bool{}
	for i := range pr.poll.Inputs {
		if to := pr.poll.Inputs[i].Salvage.ReplyTo; to != "" {
			replyTo[to] = true // an answer, a rejection's too, may go there
		}
	}
	if len(replyTo) > 0 {
		e.replies.resolve(replyTo)
	}
	return pr
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

// encodeToolResult encodes a tool's result as msgpack.Marshal does: by
// hand when it has the shapes a JSON body decodes to, else by
// reflection.
func encodeToolResult(v any) ([]byte, error) {
	if b, ok := mpwrite.AppendJSONValue(v); ok {
		return b, nil
	}
	return msgpack.Marshal(v)
}
