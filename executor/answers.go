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
	topic := t.replyTopic(res, replyTo)
	b, err := topics.EncodeResult(res)
	if err != nil {
		t.e.cfg.Logger.Error("cannot encode result; answering with an error instead", "intent", res.IntentID, "err", err)
		res.Result, res.Status = nil, topics.StatusFailed
		res.Error = &topics.ErrorInfo{Code: "result_not_encodable", Message: err.Error()}
		b, _ = topics.EncodeResult(res)
	}
	if len(key) > maxAnswerKeyBytes {
		key = key[:maxAnswerKeyBytes] // a rejected record's own Kafka key, which may be anything
	}
	r := &kgo.Record{Topic: topic, Partition: topics.Partition(string(key), t.e.replies.partitions(topic)), Key: key, Value: b}
	if traceparent != "" {
		r.Headers = []kgo.RecordHeader{{Key: "traceparent", Value: []byte(traceparent)}}
	}
	t.produce(r)
}

// maxAnswerKeyBytes bounds an answer's Kafka key: a routing key is at
// most a 64-byte tenant, "/" and a 256-byte key.
const maxAnswerKeyBytes = 64 + 1 + topics.MaxKeyBytes

// replyTopic is where res goes: its reply_to when that can take it, else
// the results topic, with the reason in the answer (issue 12: a reply_to
// that is missing or was deleted while the answer was owed). An origin
// isolated after a failure always answers on the results topic.
func (t *tick) replyTopic(res *topics.Result, replyTo string) string {
	if replyTo == "" {
		return t.e.cfg.Names.Results
	}
	if t.e.poison.isolated(t.origin) > 0 {
		res.ReplyToError = "an earlier answer to " + replyTo + " could not be produced; answered on the results topic"
		return t.e.cfg.Names.Results
	}
	if why := t.e.replies.check(replyTo); why != "" {
		res.ReplyToError = why
		return t.e.cfg.Names.Results
	}
	return replyTo
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
		IntentID: id, Tenant: tenant, Key: key, At: t.now}
	topics.DeadLetterValue(dl, r.Value)
	dl.Headers = deadLetterHeaders(r.Headers)
	if t.e.poison.isolated(t.origin) > 1 {
		// Even the isolated answer failed: keep only the facts.
		dl.Value, dl.Headers = nil, nil
	}
	b, err := topics.EncodeDeadLetter(dl)
	if err != nil {
		dl.Value, dl.Detail = nil, fmt.Sprintf("%s (original value not encodable: %v)", detail, err)
		b, _ = topics.EncodeDeadLetter(dl)
	}
	rk := r.Key
	if len(rk) > topics.MaxDeadLetterPrefix {
		rk = rk[:topics.MaxDeadLetterPrefix]
	}
	n := t.e.layout.DeadLetterPartitions
	t.produce(&kgo.Record{Topic: t.e.cfg.Names.DeadLetter, Partition: topics.Partition(string(rk), n), Key: rk, Value: b})
}

// deadLetterHeaders keeps a bounded copy of a record's headers.
func deadLetterHeaders(hs []kgo.RecordHeader) map[string]string {
	if len(hs) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, h := range hs {
		if len(out) == topics.MaxDeadLetterHeaders {
			break
		}
		k, v := h.Key, h.Value
		if len(k) > topics.MaxDeadLetterHeaderValue {
			k = k[:topics.MaxDeadLetterHeaderValue]
		}
		if len(v) > topics.MaxDeadLetterHeaderValue {
			v = v[:topics.MaxDeadLetterHeaderValue]
		}
		out[k] = string(v)
	}
	return out
}

// forward re-produces a record that landed on the wrong partition to its
// owner, in the same transaction that commits its offset: it is neither
// lost nor duplicated, and it is never executed where it landed.
func (t *tick) forward(r *kgo.Record, owner int32) {
	fr := &kgo.Record{Topic: r.Topic, Partition: owner, Key: r.Key, Value: r.Value,
		Headers: append(append([]kgo.RecordHeader(nil), r.Headers...),
			kgo.RecordHeader{Key: "x-forwarded-from", Value: fmt.Appendf(nil, "%s/%d/%d", r.Topic, r.Partition, r.Offset)})}
	t.produce(fr)
}

// codeResultNotStored: the call succeeded, its result is not kept (too
// large, not encodable, or its answer could not be produced).
const codeResultNotStored = "result_not_stored"

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
	if c.outcome.Status != tools.Succeeded || c.outcome.Code == codeResultNotStored {
		sc.Err = &saga.Error{Code: c.outcome.Code, Message: c.outcome.Message}
	}
	if c.outcome.Result != nil {
		b, err := msgpack.Marshal(c.outcome.Result)
		if err != nil || len(b) > topics.MaxResultBytes {
			sc.Err = &saga.Error{Code: codeResultNotStored, Message: "the tool's result is too large or not encodable; the call succeeded"}
		} else {
			sc.Result = b
		}
	}
	return sc
}
