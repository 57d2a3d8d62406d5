package txn

import (
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fence makes every transaction that writes events for partition p carry a
// TxnOffsetCommit for partition p, even a tick that polled nothing from p
// (one that only records outcomes).
//
// Why: the session commits only offsets that moved. A transaction with no
// offsets is not checked against the group generation, so a zombie (a
// member paused past its session timeout) could commit an outcome into a
// partition that now has another owner. Re-committing the current offset
// costs one partition entry and makes the broker reject the transaction
// with ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID once the member is stale.
// It also makes a new owner's stable offset fetch (KIP-447) wait for this
// transaction, which the restore relies on.
func (s *Session) fence(touched map[int32]bool) func(*kmsg.TxnOffsetCommitRequest) error {
	committed := s.gs.Client().CommittedOffsets()
	n := s.cfg.Names
	return func(req *kmsg.TxnOffsetCommitRequest) error {
		for p := range touched {
			if hasPartition(req, n.Intents, p) || hasPartition(req, n.Control, p) {
				continue
			}
			for _, topic := range []string{n.Intents, n.Control} {
				if eo, ok := committed[topic][p]; ok && eo.Offset >= 0 {
					addPartition(req, topic, p, eo)
					break
				}
			}
		}
		return nil
	}
}

func hasPartition(req *kmsg.TxnOffsetCommitRequest, topic string, p int32) bool {
	for _, t := range req.Topics {
		if t.Topic != topic {
			continue
		}
		for _, rp := range t.Partitions {
			if rp.Partition == p {
				return true
			}
		}
	}
	return false
}

func addPartition(req *kmsg.TxnOffsetCommitRequest, topic string, p int32, eo kgo.EpochOffset) {
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = p, eo.Offset, eo.Epoch
	rp.Metadata = &req.MemberID
	for i := range req.Topics {
		if req.Topics[i].Topic == topic {
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
			return
		}
	}
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
}
