package eventlog

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/state"
)

// Gaps between the view and the log.
//
// The event log is deleted by time (and an operator may move a partition's
// start with DeleteRecords). A view whose checkpoint lies below the log
// start has lost the events in between; a member with an empty data dir
// has lost everything below it. Folding what is left would make every key
// whose events are gone vanish, and a duplicate of such a key would run
// the tool again: for an irreversible tool, a second effect. So a restore
// that finds a gap refuses to guess, unless the log itself proves that
// what is left is complete: a snapshot round (EvRound, written by the
// executor, executor/partition/snapshot.go) that began at or after the log start
// restated every record the partition held, and a fold from the round's
// start is then the whole view.

// ErrGap is wrapped by GapError.
var ErrGap = errors.New("eventlog: the log no longer holds events the view needs")

// GapError is a restore refused because events between the view's
// checkpoint and the log start are gone and no complete snapshot round
// covers them.
type GapError struct {
	Topic      string
	Partition  int32
	Checkpoint int64 // the view's next offset
	LogStart   int64
}

func (e *GapError) Error() string {
	return fmt.Sprintf("%s/%d: the view is at offset %d but the log starts at %d and holds no snapshot round begun at or after it; "+
		"the partition is not decided (docs/DESIGN.md, gaps)", e.Topic, e.Partition, e.Checkpoint, e.LogStart)
}

func (e *GapError) Unwrap() error { return ErrGap }

// startOffset is the partition's log start offset.
func startOffset(ctx context.Context, adm *kadm.Client, topic string, p int32) (int64, error) {
	offs, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("eventlog: list start offsets of %s: %w", topic, err)
	}
	o, ok := offs.Lookup(topic, p)
	if !ok {
		return 0, fmt.Errorf("eventlog: no start offset for %s/%d", topic, p)
	}
	if o.Err != nil {
		return 0, fmt.Errorf("eventlog: start offset of %s/%d: %w", topic, p, o.Err)
	}
	return o.Offset, nil
}

// bridgeGap decides where a restore from the view's checkpoint `from`
// must begin. Without a gap that is `from`. With one, it is the start of
// the latest complete snapshot round in the log, after the view's records
// of the partition were cleared (they may have changed in the lost
// events); without such a round it is a *GapError.
func bridgeGap(ctx context.Context, st *state.Store, adm *kadm.Client, p int32, from, to int64, o RestoreOptions) (int64, error) {
	start, err := startOffset(ctx, adm, o.Topic, p)
	if err != nil {
		return 0, err
	}
	if from >= start {
		return from, nil
	}
	round, err := latestRound(ctx, o, p, start, to)
	if err != nil {
		return 0, err
	}
	if round < 0 {
		return 0, &GapError{Topic: o.Topic, Partition: p, Checkpoint: from, LogStart: start}
	}
	if from > 0 {
		if err := clearPartition(st, p, o); err != nil {
			return 0, err
		}
	}
	return round, nil
}

// latestRound reads [start, to) of the partition for round events and
// returns the largest RoundFrom at or after start, or -1 when there is
// none. Only round records (RoundKey) are decoded.
func latestRound(ctx context.Context, o RestoreOptions, p int32, start, to int64) (int64, error) {
	best := int64(-1)
	_, err := Read(ctx, o.Seeds, o.Topic, p, start, to, func(offset int64, r *kgo.Record) error {
		if string(r.Key) != RoundKey {
			return nil
		}
		ev, err := Decode(r.Value)
		if err != nil {
			return fmt.Errorf("offset %d: %w", offset, err)
		}
		if ev.Kind == saga.EvRound && ev.RoundFrom >= start && ev.RoundFrom > best {
			best = ev.RoundFrom
		}
		return nil
	}, o.ClientOpts...)
	if err != nil {
		return 0, fmt.Errorf("eventlog: look for a snapshot round in %s/%d: %w", o.Topic, p, err)
	}
	return best, nil
}

// clearPartition deletes the view's records and pending reads of p and
// its checkpoint, in one synced batch: a stale view of a partition with a
// gap could hold a key that was settled and expired in the lost events.
func clearPartition(st *state.Store, p int32, o RestoreOptions) error {
	if o.PartitionOf == nil {
		return fmt.Errorf("eventlog: clearing partition %d needs RestoreOptions.PartitionOf", p)
	}
	b := st.NewBatch()
	_, err := st.ScanRecords("", "", math.MaxInt, func(rec *saga.Record) error {
		if o.PartitionOf(rec.Tenant, rec.Key) != p {
			return nil
		}
		return b.Put(p, rec, nil)
	})
	if err == nil {
		err = st.ScanAux(ReadPrefix(p), math.MaxInt, func(k, _ []byte) error { return b.DeleteAux(k) })
	}
	if err == nil {
		err = b.SetCheckpoint(o.Topic, p, 0)
	}
	if err != nil {
		b.Discard()
		return fmt.Errorf("eventlog: clear partition %d: %w", p, err)
	}
	return b.Commit(state.Sync)
}
