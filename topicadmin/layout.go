package topicadmin

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/internal/msgpack/mpread"
	"github.com/atmostonce/toolexec/topics"
	"github.com/atmostonce/toolexec/wire"
)

// The routing partition count.
//
// The owner partition of a key is murmur2(key) % n. Kafka lets an operator
// add partitions, a routine operation; with n read afresh at every start,
// every key would then route to a partition whose log has no record of it
// and run again, and during a rolling restart old and new members would
// disagree. So n is recorded once, when the topics are first seen, in a
// compacted single-partition topic <prefix>meta, and every member
// compares the topics with it: a member that finds more partitions than
// were recorded refuses to decide (executor/layout.go) instead of
// re-routing. Partitions cannot be removed again, so the documented way
// to more partitions is a new set of topics (docs/DESIGN.md).

// layoutKey is the meta record's Kafka key.
const layoutKey = "layout"

// layoutRecord is the meta topic's value for layoutKey.
type layoutRecord struct {
	V          int   `msgpack:"v"`
	Partitions int32 `msgpack:"partitions"`
	At         int64 `msgpack:"at"`
}

// ErrNoLayout: the meta topic holds no layout record yet.
var ErrNoLayout = errors.New("topicadmin: no layout recorded")

// ensureMeta creates the meta topic: one partition, compacted, so that
// its one record is never deleted by time.
func ensureMeta(ctx context.Context, adm *kadm.Client, n topics.Names, s Settings) error {
	cfg := map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}
	if s.MinInsyncReplicas > 0 {
		cfg["min.insync.replicas"] = kadm.StringPtr(strconv.Itoa(s.MinInsyncReplicas))
	}
	_, err := adm.CreateTopic(ctx, 1, s.ReplicationFactor, cfg, n.Meta)
	switch {
	case err == nil, errors.Is(err, kerr.TopicAlreadyExists):
		return nil
	case errors.Is(err, kerr.TopicAuthorizationFailed):
		return mustExist(ctx, adm, []string{n.Meta}) // a least-privilege member: an admin made it
	}
	return fmt.Errorf("topicadmin: create %s: %w", n.Meta, err)
}

// RoutingPartitions returns the partition count keys are routed by: the
// one recorded in the meta topic or, when none is recorded yet, found,
// which it records. opts reach the cluster (seeds, security); the client
// it makes is not transactional.
func RoutingPartitions(ctx context.Context, opts []kgo.Opt, n topics.Names, found int32) (int32, error) {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, fmt.Errorf("topicadmin: meta client: %w", err)
	}
	defer cl.Close()
	rec, err := readLayout(ctx, cl, n)
	if err == nil {
		return rec.Partitions, nil
	}
	if !errors.Is(err, ErrNoLayout) {
		return 0, err
	}
	if err := writeLayout(ctx, cl, n, found); err != nil {
		return 0, err
	}
	return found, nil
}

func readLayout(ctx context.Context, cl *kgo.Client, n topics.Names) (layoutRecord, error) {
	end, err := metaEnd(ctx, kadm.NewClient(cl), n.Meta)
	if err != nil {
		return layoutRecord{}, err
	}
	if end == 0 {
		return layoutRecord{}, ErrNoLayout
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{n.Meta: {0: kgo.NewOffset().AtStart()}})
	var last *layoutRecord
	for next := int64(0); next < end; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return layoutRecord{}, err
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, e error) { ferr = e })
		if ferr != nil {
			return layoutRecord{}, fmt.Errorf("topicadmin: read %s: %w", n.Meta, ferr)
		}
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			var lr layoutRecord
			if string(r.Key) == layoutKey && mpread.Unmarshal(r.Value, &lr) == nil && lr.Partitions > 0 {
				last = &lr
			}
		})
	}
	if last == nil {
		return layoutRecord{}, ErrNoLayout
	}
	return *last, nil
}

// metaEnd returns the end offset of the meta topic's one partition, after
// EndOffsets' retries: just after ensureMeta created the topic, a broker
// may not list its partition yet, and a member that gave up there exited
// at its start (seen in CI, on a loaded machine).
func metaEnd(ctx context.Context, adm *kadm.Client, meta string) (int64, error) {
	ends, err := EndOffsets(ctx, adm, meta)
	if err != nil {
		return 0, err
	}
	o, ok := ends.Lookup(meta, 0)
	if !ok {
		return 0, fmt.Errorf("topicadmin: %s end offsets: %w", meta, errUnlisted)
	}
	return o.Offset, nil
}

func writeLayout(ctx context.Context, cl *kgo.Client, n topics.Names, partitions int32) error {
	v, err := msgpack.Marshal(layoutRecord{V: wire.Version, Partitions: partitions, At: time.Now().UnixMilli()})
	if err != nil {
		return err
	}
	r := &kgo.Record{Topic: n.Meta, Partition: 0, Key: []byte(layoutKey), Value: v}
	if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		return fmt.Errorf("topicadmin: record the layout in %s: %w", n.Meta, err)
	}
	return nil
}
