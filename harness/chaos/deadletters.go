package chaos

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/topics"
	"github.com/atmostonce/toolexec/wire"
)

// deadLetterAt names the record a dead letter is about: its partition and
// offset on the intents topic.
type deadLetterAt struct {
	Partition int32
	Offset    int64
}

// readDeadLetters reads the dead-letter topic to its stable end and
// returns the dead letters of intents records, by where the record was.
func readDeadLetters(ctx context.Context, brokers []string, names topics.Names) (map[deadLetterAt]*wire.DeadLetter, error) {
	out := map[deadLetterAt]*wire.DeadLetter{}
	err := readToEnd(ctx, brokers, names.DeadLetter, func(r *kgo.Record) {
		if d, err := wire.DecodeDeadLetter(r.Value); err == nil && d.Topic == names.Intents {
			out[deadLetterAt{d.Partition, d.Offset}] = d
		}
	})
	return out, err
}

// readToEnd calls fn for every committed record of topic, each partition
// read to the stable end it had when the read began.
func readToEnd(ctx context.Context, brokers []string, topic string, fn func(*kgo.Record), opts ...kgo.Opt) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// A topic written in transactions ends in a commit marker below
		// its stable end, which only comes through kept.
		kgo.KeepControlRecords()}, opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("chaos: end of %s: %w", topic, err)
	}
	left := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
		}
	})
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("chaos: reading %s: %w", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				fn(r)
			}
			if end, ok := left[r.Partition]; ok && r.Offset+1 >= end {
				delete(left, r.Partition)
			}
		})
	}
	return nil
}
