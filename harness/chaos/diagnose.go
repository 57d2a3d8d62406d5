package chaos

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/atmostonce/toolexec/topics"
)

// diagnose logs, when the run did not settle, what a reader needs first:
// per partition of the executors' group, the committed offset of intents
// and control against their end, and whether a stable offset fetch
// (KIP-447, what a new owner does) is refused, which stalls the partition.
func diagnose(ctx context.Context, brokers []string, names topics.Names, group string, logf func(string, ...any), opts ...kgo.Opt) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)...)
	if err != nil {
		return
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	ends := map[string]map[int32]int64{}
	for _, topic := range []string{names.Intents, names.Control} {
		ends[topic] = endOffsets(ctx, cl, topic)
	}
	for _, stable := range []bool{false, true} {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group, req.RequireStable = group, stable
		for topic, ps := range ends {
			t := kmsg.NewOffsetFetchRequestTopic()
			t.Topic = topic
			for p := range ps {
				t.Partitions = append(t.Partitions, p)
			}
			req.Topics = append(req.Topics, t)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			logf("diagnose: offset fetch: %v", err)
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				end := ends[t.Topic][p.Partition]
				switch {
				case p.ErrorCode != 0:
					logf("diagnose: %s/%d stable=%v: %v (end %d): the partition's new owner cannot start", t.Topic, p.Partition, stable, kerr.ErrorForCode(p.ErrorCode), end)
				case !stable && end-p.Offset > 0 && p.Offset >= 0:
					logf("diagnose: %s/%d committed %d, end %d: %d records not processed", t.Topic, p.Partition, p.Offset, end, end-p.Offset)
				}
			}
		}
	}
}

func endOffsets(ctx context.Context, cl *kgo.Client, topic string) map[int32]int64 {
	out := map[int32]int64{}
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = 1
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	mreq.Topics = append(mreq.Topics, mt)
	mresp, err := mreq.RequestWith(ctx, cl)
	if err != nil || len(mresp.Topics) == 0 {
		return out
	}
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = topic
	for _, p := range mresp.Topics[0].Partitions {
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp = p.Partition, -1
		t.Partitions = append(t.Partitions, lp)
	}
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return out
	}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			out[p.Partition] = p.Offset
		}
	}
	return out
}
