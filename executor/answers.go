package executor

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/topics"
)

// answer queues one result record for the tick's transaction.
func (t *tick) answer(a saga.Answer) {
	res := &topics.Result{
		IntentID: a.To.IntentID, Type: a.To.Type, Tenant: a.Tenant, Key: a.Key, Tool: a.Tool, Status: a.Status,
		WasReplay: a.WasReplay, OriginalIntentID: a.OriginalIntentID, OriginalCalledAt: a.OriginalCalledAt,
		CompletedAt: a.CompletedAt, PreviousStatus: a.PreviousStatus, Attempt: a.Attempt,
	}
	if len(a.Result) > 0 {
		res.Result = msgpack.RawMessage(a.Result)
	}
	if a.Err != nil {
		res.Error = &topics.ErrorInfo{Code: a.Err.Code, Message: a.Err.Message}
	}
	t.produceResult(res, a.To.ReplyTo, a.To.Traceparent, []byte(topics.RoutingKey(a.Tenant, a.Key)))
}

func (t *tick) produceResult(res *topics.Result, replyTo, traceparent string, key []byte) {
	b, err := topics.EncodeResult(res)
	if err != nil {
		t.e.cfg.Logger.Error("cannot encode result; answering with an error instead", "intent", res.IntentID, "err", err)
		res.Result, res.Status = nil, topics.StatusFailed
		res.Error = &topics.ErrorInfo{Code: "result_not_encodable", Message: err.Error()}
		b, _ = topics.EncodeResult(res)
	}
	topic := t.e.cfg.Names.Results
	if replyTo != "" && t.e.replies.check(replyTo) == "" {
		topic = replyTo
	}
	r := &kgo.Record{Topic: topic, Partition: topics.Partition(string(key), t.e.replies.partitions(topic)), Key: key, Value: b}
	if traceparent != "" {
		r.Headers = []kgo.RecordHeader{{Key: "traceparent", Value: []byte(traceparent)}}
	}
	t.out = append(t.out, r)
}

// reject answers an input that could not be decided, where it can be
// answered, and dead-letters it with the reason.
func (t *tick) reject(r *kgo.Record, rej *topics.Reject) {
	t.deadLetter(r, rej.Reason, rej.Detail, rej.ID, rej.Tenant, rej.Key)
	t.verdicts["reject"]++
	if !rej.Answerable() {
		return
	}
	key := r.Key
	if topics.ValidTenant(rej.Tenant) && rej.Key != "" {
		key = []byte(topics.RoutingKey(rej.Tenant, rej.Key))
	}
	res := &topics.Result{IntentID: rej.ID, Type: rej.Type, Tenant: rej.Tenant, Key: rej.Key, Tool: rej.Tool,
		Status: topics.StatusRejected, Error: &topics.ErrorInfo{Code: rej.Reason, Message: rej.Detail}}
	t.produceResult(res, rej.ReplyTo, header(r, "traceparent"), key)
}

// deadLetter keeps the original bytes with the reason: nothing is dropped
// silently.
func (t *tick) deadLetter(r *kgo.Record, reason, detail, id, tenant, key string) {
	t.e.m.DeadLetters.WithLabelValues(reason).Inc()
	dl := &topics.DeadLetter{Reason: reason, Detail: detail, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
		IntentID: id, Tenant: tenant, Key: key, Value: r.Value, At: t.now}
	if len(r.Headers) > 0 {
		dl.Headers = map[string]string{}
		for _, h := range r.Headers {
			dl.Headers[h.Key] = string(h.Value)
		}
	}
	b, err := topics.EncodeDeadLetter(dl)
	if err != nil {
		dl.Value, dl.Detail = nil, fmt.Sprintf("%s (original value not encodable: %v)", detail, err)
		b, _ = topics.EncodeDeadLetter(dl)
	}
	n := t.e.layout.DeadLetterPartitions
	t.out = append(t.out, &kgo.Record{Topic: t.e.cfg.Names.DeadLetter, Partition: topics.Partition(string(r.Key), n), Key: r.Key, Value: b})
}

// forward re-produces a record that landed on the wrong partition to its
// owner, in the same transaction that commits its offset: it is neither
// lost nor duplicated, and it is never executed where it landed.
func (t *tick) forward(r *kgo.Record, owner int32) {
	fr := &kgo.Record{Topic: r.Topic, Partition: owner, Key: r.Key, Value: r.Value,
		Headers: append(append([]kgo.RecordHeader(nil), r.Headers...),
			kgo.RecordHeader{Key: "x-forwarded-from", Value: fmt.Appendf(nil, "%s/%d/%d", r.Topic, r.Partition, r.Offset)})}
	t.out = append(t.out, fr)
}

func wireStatus(s saga.Status) string {
	switch s {
	case saga.StatusSucceeded:
		return topics.StatusSucceeded
	case saga.StatusFailed:
		return topics.StatusFailed
	case saga.StatusNotExecuted:
		return topics.StatusNotExecuted
	}
	return topics.StatusPending
}

// toCompletion converts a tool outcome to the saga's vocabulary. A result
// that cannot be encoded is still a success: the effect happened.
func toCompletion(c completion) saga.Completion {
	sc := saga.Completion{CallID: c.job.call.CallID, Compensation: c.job.call.Kind == saga.CallCompensation, Attempts: c.outcome.Attempts}
	switch c.outcome.Status {
	case tools.Succeeded:
		sc.Status = saga.StatusSucceeded
	case tools.Failed:
		sc.Status = saga.StatusFailed
	case tools.NotExecuted:
		sc.Status = saga.StatusNotExecuted
	default:
		sc.Status = saga.StatusUnknown
	}
	if c.outcome.Status != tools.Succeeded {
		sc.Err = &saga.Error{Code: c.outcome.Code, Message: c.outcome.Message}
	}
	if c.outcome.Result != nil {
		b, err := msgpack.Marshal(c.outcome.Result)
		if err != nil || len(b) > topics.MaxMessageBytes/2 {
			sc.Err = &saga.Error{Code: "result_not_stored", Message: "the tool's result is too large or not encodable; the call succeeded"}
		} else {
			sc.Result = b
		}
	}
	return sc
}
