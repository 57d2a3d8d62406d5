package topicadmin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/atmostonce/toolexec/kafkaretry"
)

// endOffsetsWait bounds EndOffsets' retries.
const endOffsetsWait = 30 * time.Second

// errUnlisted: ListOffsets answered without the topic's partitions.
var errUnlisted = errors.New("partitions not listed yet")

// EndOffsets returns the end offsets of every partition of topic, asking
// again (with backoff, up to endOffsetsWait or ctx's end) while the
// brokers cannot answer for one of them. Why: on a cluster, a partition
// whose leader just died has no leader for the seconds an election takes
// (the dial fails, or NOT_LEADER_OR_FOLLOWER), and a topic just created
// may not be listed yet; a caller that gave up there failed a call that
// a moment later would have worked. A non-retriable error (authorization)
// ends at once.
func EndOffsets(ctx context.Context, adm *kadm.Client, topic string) (kadm.ListedOffsets, error) {
	deadline := time.Now().Add(endOffsetsWait)
	for backoff := 20 * time.Millisecond; ; backoff = min(2*backoff, time.Second) {
		ends, retry, err := endOffsetsOnce(ctx, adm, topic)
		if err == nil {
			return ends, nil
		}
		if !retry || time.Now().Add(backoff).After(deadline) {
			return nil, fmt.Errorf("topicadmin: %s end offsets: %w", topic, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("topicadmin: %s end offsets: %w (after %w)", topic, ctx.Err(), err)
		case <-time.After(backoff):
		}
	}
}

func endOffsetsOnce(ctx context.Context, adm *kadm.Client, topic string) (ends kadm.ListedOffsets, retry bool, err error) {
	ends, err = adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, ctx.Err() == nil && kafkaretry.Retriable(err), err
	}
	if len(ends[topic]) == 0 {
		return nil, true, errUnlisted
	}
	retry = true
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil && err == nil {
			err, retry = o.Err, kafkaretry.Retriable(o.Err)
		}
	})
	if err != nil {
		return nil, retry, err
	}
	return ends, false, nil
}
