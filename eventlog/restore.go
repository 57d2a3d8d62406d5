package eventlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/topics"
	"github.com/atmostonce/toolexec/wire"
)

// ErrRestoreTimeout is returned when the partition's open transactions did
// not settle in time.
var ErrRestoreTimeout = errors.New("eventlog: open transactions did not settle")

// ErrOffsetGone is wrapped by a read's error when the log no longer holds
// the next offset the read needs: its start moved past it (retention,
// DeleteRecords) while the read ran. The records in between were not
// read; the caller decides again from what it has.
var ErrOffsetGone = errors.New("eventlog: the log no longer holds the offset the read needs")

// maxReadAttempts bounds how often a read that met a moved log start is
// begun again (RestoreInto, ReadFromStart): each attempt begins at the
// start just listed, so another move needs retention to strike again
// within one read.
const maxReadAttempts = 3

// Applier receives each committed event of a restore in log order.
type Applier func(offset int64, rec *kgo.Record) error

// Target returns the offset a restore of topic/partition must reach: the
// high watermark at the time of the call, once the last stable offset has
// caught up with it.
//
// Why not simply the last stable offset: a commit's markers are written to
// each partition after EndTxn returns, so right after a rebalance the
// previous owner's last committed transaction may still be open on the
// events partition. Reading only to the LSO would miss it and the new
// owner could decide a key twice. Waiting until the LSO reaches the high
// watermark seen at the start means every transaction that was open then
// has committed or aborted. A zombie's later transaction cannot commit: it
// carries an offset commit for this partition, fenced by the generation.
func Target(ctx context.Context, adm *kadm.Client, topic string, partition int32, wait time.Duration) (int64, error) {
	hwm, err := endOffset(ctx, adm, topic, partition, false)
	if err != nil {
		return 0, err
	}
	deadline := time.Now().Add(wait)
	for backoff := 10 * time.Millisecond; ; backoff = min(backoff*2, 500*time.Millisecond) {
		lso, err := endOffset(ctx, adm, topic, partition, true)
		if err != nil {
			return 0, err
		}
		if lso >= hwm {
			return hwm, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%w: %s/%d LSO %d < HWM %d after %s", ErrRestoreTimeout, topic, partition, lso, hwm, wait)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(backoff):
		}
	}
}

func endOffset(ctx context.Context, adm *kadm.Client, topic string, partition int32, committed bool) (int64, error) {
	var (
		offs kadm.ListedOffsets
		err  error
	)
	if committed {
		offs, err = adm.ListCommittedOffsets(ctx, topic)
	} else {
		offs, err = adm.ListEndOffsets(ctx, topic)
	}
	if err != nil {
		return 0, fmt.Errorf("eventlog: list offsets of %s: %w", topic, err)
	}
	o, ok := offs.Lookup(topic, partition)
	if !ok {
		return 0, fmt.Errorf("eventlog: no offsets for %s/%d", topic, partition)
	}
	if o.Err != nil {
		return 0, fmt.Errorf("eventlog: offsets of %s/%d: %w", topic, partition, o.Err)
	}
	return o.Offset, nil
}

// Read reads the committed records of topic/partition from `from` until
// the first offset at or past `to`, calling apply for each. It returns the
// next offset to read (at least `to` on success). Aborted records and
// transaction markers are skipped by the read-committed consumer.
//
// It reads every offset from `from` on or fails: when the log no longer
// holds the next offset it needs (a fetch out of range, or a fetch that
// reports the log start past it), it returns an error wrapping
// ErrOffsetGone with the offset it reached. Why: franz-go's default on an
// out-of-range fetch is to resume at the log start, silently; a restore
// whose log start moved after its gap check (or while it read) would fold
// what was left and lose a key, and a duplicate of the key would run
// again.
func Read(ctx context.Context, seeds []string, topic string, partition int32, from, to int64, apply Applier, extra ...kgo.Opt) (int64, error) {
	if from >= to {
		return from, nil
	}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(from)}}),
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		// 4 MiB a fetch: two restores at once each buffer this much
		// (16 MiB took the take-over's RSS past its budget, with
		// DefaultFlushEvery).
		kgo.FetchMaxBytes(4 << 20),
		// Markers come back as control records: every transaction ends
		// with one, so the read always reaches its target even when the
		// last data below it was aborted and filtered out.
		kgo.KeepControlRecords(),
	}, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return from, fmt.Errorf("eventlog: restore client: %w", err)
	}
	defer cl.Close()
	return readLoop(ctx, cl, from, to, apply)
}

func readLoop(ctx context.Context, cl *kgo.Client, next, to int64, apply Applier) (int64, error) {
	for next < to {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return next, err
		}
		if err := fetchErr(fs); err != nil {
			return next, err
		}
		if err := startPast(fs, next); err != nil {
			return next, err
		}
		var aerr error
		fs.EachRecord(func(r *kgo.Record) {
			if aerr != nil {
				return
			}
			if r.Offset >= to {
				// Records come in offset order: one at or past the target
				// means everything below it was delivered. This is how a
				// read ends when the last records below the target were
				// aborted (filtered out) and their abort marker was written
				// past the target, after the target was taken.
				next = max(next, to)
				return
			}
			next = r.Offset + 1
			if !r.Attrs.IsControl() {
				aerr = apply(r.Offset, r)
			}
		})
		if aerr != nil {
			return next, aerr
		}
	}
	return next, nil
}

func fetchErr(fs kgo.Fetches) error {
	var err error
	fs.EachError(func(t string, p int32, e error) {
		switch {
		case err != nil:
		case errors.Is(e, kerr.OffsetOutOfRange):
			err = fmt.Errorf("%w: fetch %s/%d: %w", ErrOffsetGone, t, p, e)
		default:
			err = fmt.Errorf("eventlog: fetch %s/%d: %w", t, p, e)
		}
	})
	return err
}

// startPast returns an error wrapping ErrOffsetGone when a fetch reports
// its partition's log start past next: the offsets in between are gone,
// and a broker that answered from the start instead of out of range must
// not make the read skip them.
func startPast(fs kgo.Fetches, next int64) error {
	var err error
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if err == nil && p.LogStartOffset > next {
			err = fmt.Errorf("%w: %s/%d starts at %d, the read needs %d", ErrOffsetGone, p.Topic, p.Partition, p.LogStartOffset, next)
		}
	})
	return err
}

// ReadFromStart reads the committed records of topic/partition from the
// log start to `to`, as Read does. begin runs before each attempt: when
// the log start moves past the read, what the caller gathered lacks the
// records it never saw, so it drops it, and the read begins again at the
// new start (at most maxReadAttempts times). A scan from the start is
// whole again there: the executor's snapshot rounds restate every live
// record before retention can take its events.
func ReadFromStart(ctx context.Context, seeds []string, adm *kadm.Client, topic string, partition int32, to int64,
	begin func(), apply Applier, extra ...kgo.Opt) error {
	for attempt := 1; ; attempt++ {
		start, err := startOffset(ctx, adm, topic, partition)
		if err != nil {
			return err
		}
		begin()
		_, err = Read(ctx, seeds, topic, partition, start, to, apply, extra...)
		if !errors.Is(err, ErrOffsetGone) || attempt == maxReadAttempts {
			return err
		}
	}
}

// RoundKey is the Kafka key of round events: a routing key always has a
// tenant of [a-z0-9_-] before its "/", so no key can look like it.
const RoundKey = "~round"

// EncodeRecord builds the Kafka record of ev for the events partition.
func EncodeRecord(names topics.Names, partition int32, evBytes []byte, tenant, key, traceparent string) *kgo.Record {
	rk := wire.RoutingKey(tenant, key)
	if tenant == "" && key == "" {
		rk = RoundKey
	}
	r := &kgo.Record{
		Topic: names.Events, Partition: partition,
		Key: []byte(rk), Value: evBytes,
	}
	if traceparent != "" {
		r.Headers = []kgo.RecordHeader{{Key: "traceparent", Value: []byte(traceparent)}}
	}
	return r
}
