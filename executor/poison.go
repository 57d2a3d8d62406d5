package executor

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/atmostonce/toolexec/executor/partition"
	"github.com/atmostonce/toolexec/topics"
)

// notePoison reports the records an aborted tick could not produce to the
// core, which isolates their origins on the redo (partition/poison.go).
// Only an error about the record itself counts (recordAtFault); a record
// to a reply_to topic that is gone first only makes the member forget the
// topic: the redo answers on the results topic.
func (e *Executor) notePoison(tr *txnRecords) {
	for _, f := range tr.Failures() {
		topic, origin := f.Record.Topic, tr.origins[f.Record]
		if !recordAtFault(f.Err, topic, e.cfg.Names) {
			continue // the broker or the link failed, not the record: redo as usual
		}
		gone := topic != "" && !e.cfg.Names.Internal(topic) && isMissingTopic(f.Err)
		if !e.core.Poisoned(origin, gone) {
			e.replies.forget(topic)
			e.cfg.Logger.Warn("a reply_to topic is gone; its answers go to the results topic", "topic", topic, "origin", originString(origin))
			continue
		}
		e.m.Unproducible.Inc()
		e.cfg.Logger.Warn("a record could not be produced; its input is answered on its own when it comes back",
			"origin", originString(origin), "topic", topic, "err", f.Err)
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
// records are redone as usual. Why the distinction matters: isolated for
// a broker's restart, an intent would be answered `unproducible` (or,
// isolated twice, not at all).
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

func originString(o partition.Origin) string {
	if o.Call != "" {
		return "call " + o.Call
	}
	return fmt.Sprintf("%s/%d@%d", o.Topic, o.Partition, o.Offset)
}
