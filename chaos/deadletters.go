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
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(names.DeadLetter),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Dead letters are written in transactions: the last offset below
		// the stable end is a commit marker, which only comes through kept.
		kgo.KeepControlRecords())
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, names.DeadLetter)
	if err != nil {
		return nil, fmt.Errorf("chaos: end of %s: %w", names.DeadLetter, err)
	}
	left := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
		}
	})
	out := map[deadLetterAt]*wire.DeadLetter{}
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("chaos: reading %s: %w", names.DeadLetter, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				if d, err := wire.DecodeDeadLetter(r.Value); err == nil && d.Topic == names.Intents {
					out[deadLetterAt{d.Partition, d.Offset}] = d
				}
			}
			if end, ok := left[r.Partition]; ok && r.Offset+1 >= end {
				delete(left, r.Partition)
			}
		})
	}
	return out, nil
}
