package executor

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/atmostonce/toolexec/executor/partition"
)

// notePoison reports the records an aborted tick could not produce to the
// core, which isolates their origins on the redo (partition/poison.go). A
// record to a reply_to topic that is gone first only makes the member
// forget the topic: the redo answers on the results topic.
func (e *Executor) notePoison(tr *txnRecords) {
	for _, f := range tr.failedRecs {
		gone := f.topic != "" && !e.cfg.Names.Internal(f.topic) && isMissingTopic(f.err)
		if !e.core.Poisoned(f.origin, gone) {
			e.replies.forget(f.topic)
			e.cfg.Logger.Warn("a reply_to topic is gone; its answers go to the results topic", "topic", f.topic, "origin", originString(f.origin))
			continue
		}
		e.m.Unproducible.Inc()
		e.cfg.Logger.Warn("a record could not be produced; its input is answered on its own when it comes back",
			"origin", originString(f.origin), "topic", f.topic, "err", f.err)
	}
}

func isMissingTopic(err error) bool {
	return errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID)
}

func originString(o partition.Origin) string {
	if o.Call != "" {
		return "call " + o.Call
	}
	return fmt.Sprintf("%s/%d@%d", o.Topic, o.Partition, o.Offset)
}
