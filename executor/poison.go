package executor

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/topics"
)

// Isolation of records that cannot be produced (issue 12).
//
// A tick carries every owned partition in one transaction, so one record
// the broker refuses aborts the whole tick; its inputs are then polled and
// decided again, and, before this file existed, refused again, for ever:
// one oversized header stopped a member with nothing shown in doubt. Now
// every produced record knows its origin (the polled record or the
// finished call it answers), records that cannot fit are caught before
// they are produced, and an origin whose record failed is remembered:
// when its input comes back it is answered `rejected unproducible` and
// dead-lettered alone, and the rest of the tick commits. So an input can
// make a member abort at most once (twice for an answer to a reply_to
// topic that vanished: the first failure only forgets the topic, and the
// redo answers on the results topic).

// maxRecordBytes bounds a record the executor produces, key, value and
// headers together: under a topic's default max.message.bytes (1 MiB +
// 12 bytes) less the batch and record overhead, so a record that passes
// is never refused for its size by a broker with default settings.
const maxRecordBytes = topics.MaxMessageBytes - 1<<10

// maxPoisoned bounds the origins remembered; the oldest is forgotten
// first. An origin is needed only until its input is polled again, right
// after the abort.
const maxPoisoned = 1024

// origin is what a produced record was produced for.
type origin struct {
	// The polled record (topic, partition, offset), or for a finished
	// call its call id (topic "", partition -1).
	topic     string
	partition int32
	offset    int64
	callID    string
}

func inputOrigin(r *kgo.Record) origin {
	return origin{topic: r.Topic, partition: r.Partition, offset: r.Offset}
}

func callOrigin(callID string) origin { return origin{partition: -1, callID: callID} }

func (o origin) String() string {
	if o.callID != "" {
		return "call " + o.callID
	}
	return fmt.Sprintf("%s/%d@%d", o.topic, o.partition, o.offset)
}

// poisoned remembers the origins whose records failed. Loop-owned.
type poisoned struct {
	m     map[origin]*poisonMark
	order []origin
}

type poisonMark struct {
	replyTopic int // failures that only made the member forget a reply_to topic
	isolate    int // failures after which the origin is answered on its own
}

func newPoisoned() *poisoned { return &poisoned{m: map[origin]*poisonMark{}} }

func (p *poisoned) mark(o origin) *poisonMark {
	if m, ok := p.m[o]; ok {
		return m
	}
	if len(p.order) >= maxPoisoned {
		delete(p.m, p.order[0])
		p.order = p.order[1:]
	}
	m := &poisonMark{}
	p.m[o], p.order = m, append(p.order, o)
	return m
}

// isolated is how often o had to be isolated: 0 means decide it as usual,
// 1 or more answer it on its own (2 or more: its dead letter bare).
func (p *poisoned) isolated(o origin) int {
	if m, ok := p.m[o]; ok {
		return m.isolate
	}
	return 0
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

// errRecordTooLarge is a record caught before it was produced.
var errRecordTooLarge = errors.New("executor: record too large to produce")

// produce queues r in the tick's transaction, tagged with the origin the
// tick is working for. A record too large to be accepted is not queued:
// the tick fails as if the broker had refused it, and its origin is
// isolated on the redo.
func (t *tick) produce(r *kgo.Record) {
	if n := recordSize(r); n > maxRecordBytes {
		t.fail(r, t.origin, fmt.Errorf("%w: %d bytes to %s, the limit is %d", errRecordTooLarge, n, r.Topic, maxRecordBytes))
		return
	}
	t.origins[r] = t.origin
	t.out = append(t.out, r)
}

// fail notes a record of origin o that cannot be produced.
func (t *tick) fail(r *kgo.Record, o origin, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.produceErr == nil {
		t.produceErr = fmt.Errorf("produce to %s/%d: %w", r.Topic, r.Partition, err)
	}
	t.failedRecs = append(t.failedRecs, failedRecord{topic: r.Topic, origin: o, err: err})
}

type failedRecord struct {
	topic  string
	origin origin
	err    error
}

// notePoison remembers the origins of the records an aborted tick could
// not produce. A record to a reply_to topic that is gone first only makes
// the member forget the topic: the redo answers on the results topic.
func (e *Executor) notePoison(t *tick) {
	for _, f := range t.failedRecs {
		if !recordAtFault(f.err, f.topic, e.cfg.Names) {
			continue // the broker or the link failed, not the record: redo as usual
		}
		m := e.poison.mark(f.origin)
		if f.topic != "" && !e.cfg.Names.Internal(f.topic) && isMissingTopic(f.err) && m.replyTopic == 0 {
			m.replyTopic++
			e.replies.forget(f.topic)
			e.cfg.Logger.Warn("a reply_to topic is gone; its answers go to the results topic", "topic", f.topic, "origin", f.origin.String())
			continue
		}
		m.isolate++
		e.m.Unproducible.Inc()
		e.cfg.Logger.Warn("a record could not be produced; its input is answered on its own when it comes back",
			"origin", f.origin.String(), "topic", f.topic, "err", f.err)
	}
}

func isMissingTopic(err error) bool {
	return errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID)
}

// recordAtFault reports whether a produce error is about the record
// itself, so that producing it again would fail again: too large, refused
// as invalid, or sent to a reply_to topic that is gone or not ours to
// write. Every other error (the broker restarting, a lost connection, a
// fenced producer, a timeout) fails whatever the tick held and passes; its
// records are redone as usual. Why the distinction matters: a chaos run
// with broker bounces found intents isolated for a broker's restart, and
// answered `unproducible` (or, isolated twice, not at all).
func recordAtFault(err error, topic string, n topics.Names) bool {
	switch {
	case errors.Is(err, errRecordTooLarge), errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge),
		errors.Is(err, kerr.InvalidRecord), errors.Is(err, kerr.CorruptMessage), errors.Is(err, kerr.InvalidTopicException):
		return true
	case topic == "" || n.Internal(topic) || topic == n.Results:
		return false // our own topics: a missing or refused one is the deployment's fault, not the record's
	}
	return isMissingTopic(err) || errors.Is(err, kerr.TopicAuthorizationFailed)
}
