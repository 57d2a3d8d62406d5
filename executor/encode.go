package executor

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/executor/partition"
	"github.com/atmostonce/toolexec/executor/txn"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/topics"
	"github.com/atmostonce/toolexec/wire"
)

// Encode: the core's Decisions becomes the records of one transaction. Every
// record is tagged with the origin it was produced for, and checked
// against the size a broker accepts before it is produced: a record that
// cannot be produced fails the tick, and its origin is isolated on the
// redo (partition/poison.go).

// txnRecords are the records of one tick's transaction (the session's
// Transaction), each with the origin it was produced for.
type txnRecords struct {
	txn.Transaction
	origins map[*kgo.Record]partition.Origin
}

// encoder turns the core's Decisions into the records of one transaction.
// Safe for concurrent use (spread runs it on every core): it holds only
// the configuration, the layout found at start, and the reply topics'
// cache, which has its own lock.
type encoder struct {
	names       topics.Names
	replies     *replyTopics
	deadLetters int32                  // the dead-letter topic's partitions
	dlCount     *prometheus.CounterVec // dead letters by reason
	log         *slog.Logger
}

// errRecordTooLarge is a record caught before it was produced.
var errRecordTooLarge = errors.New("executor: record too large to produce")

// encode turns rd into records. Its error is an event the saga should
// never have produced (it fails its pair assertion): fatal.
//
// Events and answers are encoded on every core (spread.go), each into its
// own slot; they are then queued in the core's order, so the transaction
// carries the same records in the same order as when one goroutine
// encoded them.
func (e *encoder) encode(rd *partition.Decisions, polled []*kgo.Record) (*txnRecords, error) {
	tr := &txnRecords{origins: map[*kgo.Record]partition.Origin{}}
	tr.Touched, tr.Polled = rd.Touched(), polled
	e.resolveReplyTopics(rd.Answers)
	nev := len(rd.Events)
	recs := make([]*kgo.Record, nev+len(rd.Answers))
	var errMu sync.Mutex
	var firstErr error
	spread(len(recs), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if i >= nev {
				recs[i] = e.encodeAnswer(&rd.Answers[i-nev])
				continue
			}
			r, err := e.encodeEvent(&rd.Events[i])
			if err != nil {
				errMu.Lock()
				firstErr = cmp.Or(firstErr, err)
				errMu.Unlock()
			}
			recs[i] = r
		}
	})
	if firstErr != nil {
		return nil, firstErr
	}
	for i, r := range recs {
		if i < nev {
			tr.produce(r, rd.Events[i].Origin)
		} else {
			tr.produce(r, rd.Answers[i-nev].Origin)
		}
	}
	for _, dl := range rd.DeadLetters {
		e.encodeDeadLetter(tr, dl, polled[dl.In])
	}
	for _, f := range rd.Forwards {
		tr.produce(forward(polled[f.In], f.Owner), f.Origin)
	}
	return tr, nil
}

// encodeEvent encodes one event as its record. It runs on several
// goroutines at once and touches nothing but its event.
func (e *encoder) encodeEvent(ev *partition.Event) (*kgo.Record, error) {
	b, err := eventlog.Encode(&ev.Ev)
	if err != nil {
		return nil, fmt.Errorf("%w: saga produced an invalid event: %w", ErrFatal, err)
	}
	return eventlog.EncodeRecord(e.names, ev.P, b, ev.Ev.Tenant, ev.Ev.Key, ev.Traceparent), nil
}

// encodeAnswer encodes one answer, to its reply_to when that can take it,
// else to the results topic with the reason (a reply_to that is
// missing or was deleted while the answer was owed, or an answer of an
// isolated origin). It runs on several goroutines at once: the reply
// topics' cache has its own lock.
func (e *encoder) encodeAnswer(a *partition.Answer) *kgo.Record {
	res := &wire.Result{
		IntentID: a.To.IntentID, Type: a.To.Type, Tenant: a.Tenant, Key: a.Key, Tool: a.Tool, Status: a.Status,
		WasReplay: a.WasReplay, OriginalIntentID: a.OriginalIntentID, OriginalCalledAt: a.OriginalCalledAt,
		CompletedAt: a.CompletedAt, PreviousStatus: a.PreviousStatus, Attempt: a.Attempt, ReplyToError: a.ReplyToError,
		ApprovalUntil: a.ApprovalUntil,
		RetryAfterMs:  a.RetryAfterMs,
	}
	if len(a.Result) > 0 {
		res.Result = msgpack.RawMessage(a.Result)
	}
	if a.Err != nil {
		res.Error = &wire.ErrorInfo{Code: a.Err.Code, Message: a.Err.Message, Refusal: a.Err.Refusal}
	}
	key := a.RecordKey
	if !a.RawKey {
		key = []byte(wire.RoutingKey(a.Tenant, a.Key))
	}
	topic, partitions := e.replyTopic(res, a.To.ReplyTo)
	return e.resultRecord(res, topic, partitions, a.To.Traceparent, key)
}

// resolveReplyTopics looks up, in one request, the reply topics of the
// answers not known yet: those of waiters stored in records, which no
// intent of the tick named.
func (e *encoder) resolveReplyTopics(answers []partition.Answer) {
	names := map[string]bool{}
	for i := range answers {
		if to := answers[i].To.ReplyTo; to != "" {
			names[to] = true
		}
	}
	if len(names) > 0 {
		e.replies.resolve(names)
	}
}

// replyTopic is where res goes, and its partition count: its reply_to
// when that can take it, else the results topic, with the reason in the
// answer. One read of what is known: the count that let the reply_to
// take the answer is the one its record is partitioned by.
func (e *encoder) replyTopic(res *wire.Result, replyTo string) (string, int32) {
	results := func() (string, int32) { return e.names.Results, e.replies.partitions(e.names.Results) }
	if replyTo == "" || res.ReplyToError != "" {
		return results()
	}
	n, why := e.replies.check(replyTo)
	if why != "" {
		res.ReplyToError = why
		return results()
	}
	return replyTo, n
}

func (e *encoder) resultRecord(res *wire.Result, topic string, partitions int32, traceparent string, key []byte) *kgo.Record {
	b, err := wire.EncodeResult(res)
	if err != nil {
		e.log.Error("cannot encode result; answering with an error instead", "intent", res.IntentID, "err", err)
		res.Result, res.Status = nil, codes.StatusFailed
		res.Error = &wire.ErrorInfo{Code: "result_not_encodable", Message: err.Error()}
		b, _ = wire.EncodeResult(res)
	}
	if len(key) > maxAnswerKeyBytes {
		key = key[:maxAnswerKeyBytes] // a rejected record's own Kafka key, which may be anything
	}
	r := &kgo.Record{Topic: topic, Partition: wire.Partition(string(key), partitions), Key: key, Value: b}
	if traceparent != "" {
		r.Headers = []kgo.RecordHeader{{Key: "traceparent", Value: []byte(traceparent)}}
	}
	return r
}

// encodeDeadLetter keeps the original bytes (a bounded prefix) with the
// reason: nothing is dropped silently.
func (e *encoder) encodeDeadLetter(tr *txnRecords, d partition.DeadLetter, r *kgo.Record) {
	e.dlCount.WithLabelValues(d.Reason).Inc()
	dl := &wire.DeadLetter{Reason: d.Reason, Detail: d.Detail, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
		IntentID: d.ID, Tenant: d.Tenant, Key: d.Key, At: d.At}
	wire.DeadLetterValue(dl, r.Value)
	dl.Headers = deadLetterHeaders(r.Headers)
	if d.Bare {
		// Even the isolated answer failed: keep only the facts.
		dl.Value, dl.Headers = nil, nil
	}
	b, err := wire.EncodeDeadLetter(dl)
	if err != nil {
		dl.Value, dl.Detail = nil, fmt.Sprintf("%s (original value not encodable: %v)", d.Detail, err)
		b, _ = wire.EncodeDeadLetter(dl)
	}
	rk := r.Key
	if len(rk) > wire.MaxDeadLetterPrefix {
		rk = rk[:wire.MaxDeadLetterPrefix]
	}
	n := e.deadLetters
	tr.produce(&kgo.Record{Topic: e.names.DeadLetter, Partition: wire.Partition(string(rk), n), Key: rk, Value: b}, d.Origin)
}

// deadLetterHeaders keeps a bounded copy of a record's headers.
func deadLetterHeaders(hs []kgo.RecordHeader) map[string]string {
	if len(hs) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, h := range hs {
		if len(out) == wire.MaxDeadLetterHeaders {
			break
		}
		k, v := h.Key, h.Value
		if len(k) > wire.MaxDeadLetterHeaderValue {
			k = k[:wire.MaxDeadLetterHeaderValue]
		}
		if len(v) > wire.MaxDeadLetterHeaderValue {
			v = v[:wire.MaxDeadLetterHeaderValue]
		}
		out[k] = string(v)
	}
	return out
}

// forward re-produces a record that landed on the wrong partition to its
// owner, in the same transaction that commits its offset: it is neither
// lost nor duplicated, and it is never executed where it landed.
func forward(r *kgo.Record, owner int32) *kgo.Record {
	return &kgo.Record{Topic: r.Topic, Partition: owner, Key: r.Key, Value: r.Value,
		Headers: append(append([]kgo.RecordHeader(nil), r.Headers...),
			kgo.RecordHeader{Key: "x-forwarded-from", Value: fmt.Appendf(nil, "%s/%d/%d", r.Topic, r.Partition, r.Offset)})}
}

// checkSnapshot is the core's CheckSnapshot: a snapshot event must
// encode and fit one record.
func checkSnapshot(ev *saga.Event) error {
	b, err := eventlog.Encode(ev)
	if err != nil {
		return err
	}
	if len(b) > maxRecordBytes {
		return fmt.Errorf("%w: a snapshot of %d bytes, the limit is %d", errRecordTooLarge, len(b), maxRecordBytes)
	}
	return nil
}

// recordSize is the size of r as it counts against a broker's limit,
// without the batch overhead that maxRecordBytes leaves room for.
func recordSize(r *kgo.Record) int {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// produce queues r in the transaction, tagged with its origin. A record
// too large to be accepted is not queued: the tick fails as if the broker
// had refused it, and its origin is isolated on the redo.
func (tr *txnRecords) produce(r *kgo.Record, o partition.Origin) {
	tr.origins[r] = o
	if n := recordSize(r); n > maxRecordBytes {
		tr.Fail(r, fmt.Errorf("%w: %d bytes to %s, the limit is %d", errRecordTooLarge, n, r.Topic, maxRecordBytes))
		return
	}
	tr.Records = append(tr.Records, r)
}
