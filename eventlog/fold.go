package eventlog

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/overlay"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/state"
)

// RestoreStats describes one restore.
type RestoreStats struct {
	From, To int64 // offsets
	Events   int
	Duration time.Duration
}

// RestoreOptions tune RestoreInto.
type RestoreOptions struct {
	Seeds      []string
	Topic      string        // the events topic
	SettleWait time.Duration // how long open transactions may take to settle; default DefaultSettleWait
	FlushEvery int           // events per intermediate batch; default DefaultFlushEvery
	ClientOpts []kgo.Opt
	// PartitionOf names a key's partition; needed to clear a partition's
	// stale view after a gap (gap.go).
	PartitionOf func(tenant, key string) int32
	// Progress, when set, is called every progressEvery records read: a
	// long restore is a loop that turns (the executor's liveness). It
	// must not block.
	Progress func()
}

// progressEvery is how many records a restore reads between two calls of
// RestoreOptions.Progress.
const progressEvery = 1024

const (
	// DefaultSettleWait bounds the wait for the transactions open on the
	// partition when the restore began: well past any transaction timeout.
	DefaultSettleWait = 60 * time.Second
	// DefaultFlushEvery bounds the records a restore holds in memory
	// before an intermediate (unsynced) batch: about 5 MB of overlay for
	// records of a kilobyte. Why not more: an executor restores two
	// partitions at once, and with 20,000 a 1,000,000-key take-over
	// peaked at 271 MB of RSS against a budget of 256 (5,000: 229 MB,
	// docs/PERFORMANCE.md); larger batches did not fold faster.
	DefaultFlushEvery = 5000
)

// RestoreInto brings the store's view of one events partition up to date:
// from its checkpoint to the target of Target, folding every committed
// event with saga.Apply through an overlay.Overlay. When the log no longer
// starts at or below the checkpoint it begins at a complete snapshot round
// instead, or refuses with a *GapError (gap.go). Intermediate batches are
// not synced; the last one is, with the final checkpoint, so a crash
// mid-restore only repeats work.
//
// The log start can move after the gap check, before the read or while it
// runs: the read then stops where it was (Read, ErrOffsetGone), and the
// gap check decides again from the checkpoint the view reached, at most
// maxReadAttempts times; a restore never folds past events it did not
// read.
func RestoreInto(ctx context.Context, st *state.Store, adm *kadm.Client, partition int32, o RestoreOptions) (RestoreStats, error) {
	start := time.Now()
	if o.SettleWait <= 0 {
		o.SettleWait = DefaultSettleWait
	}
	if o.FlushEvery <= 0 {
		o.FlushEvery = DefaultFlushEvery
	}
	for attempt := 1; ; attempt++ {
		stats, err := restoreOnce(ctx, st, adm, partition, o)
		if !errors.Is(err, ErrOffsetGone) || attempt == maxReadAttempts {
			stats.Duration = time.Since(start)
			return stats, err
		}
	}
}

// restoreOnce is one attempt of RestoreInto.
func restoreOnce(ctx context.Context, st *state.Store, adm *kadm.Client, partition int32, o RestoreOptions) (RestoreStats, error) {
	from, err := st.Checkpoint(o.Topic, partition)
	if err != nil {
		return RestoreStats{}, err
	}
	to, err := Target(ctx, adm, o.Topic, partition, o.SettleWait)
	if err != nil {
		return RestoreStats{}, err
	}
	viewed := from
	if from, err = bridgeGap(ctx, st, adm, partition, from, to, o); err != nil {
		return RestoreStats{}, err
	}
	f := newFolder(st, o.Topic, partition, o.FlushEvery, viewed == 0 || from != viewed)
	next, err := Read(ctx, o.Seeds, o.Topic, partition, from, to, withProgress(f.apply, o.Progress), o.ClientOpts...)
	if err != nil {
		return RestoreStats{}, fmt.Errorf("eventlog: restore %s/%d: %w", o.Topic, partition, err)
	}
	if err := f.flush(max(next, from), state.Sync); err != nil {
		return RestoreStats{}, err
	}
	return RestoreStats{From: from, To: next, Events: f.events}, nil
}

// withProgress calls progress, when set, before every progressEvery-th
// record apply takes.
func withProgress(apply Applier, progress func()) Applier {
	if progress == nil {
		return apply
	}
	n := 0
	return func(offset int64, rec *kgo.Record) error {
		if n++; n%progressEvery == 1 {
			progress()
		}
		return apply(offset, rec)
	}
}

// folder folds a partition of the log through an overlay and writes it
// to the store in batches, each with the checkpoint it reached.
type folder struct {
	st         *state.Store
	topic      string
	partition  int32
	flushEvery int
	ov         *overlay.Overlay
	base       *flushedBase
	events     int
	pending    int
	next       int64
}

// newFolder folds into st. fresh says the partition has no record in the
// view yet (a restore from offset 0, or after a gap cleared it).
func newFolder(st *state.Store, topic string, p int32, every int, fresh bool) *folder {
	base := &flushedBase{st: st}
	if fresh {
		// A partition with no checkpoint has no record in the view: every
		// record is written in one batch with its partition's checkpoint,
		// and a key belongs to one partition. So the only keys of this
		// partition that can be in the store are those this restore has
		// flushed; any other key needs no lookup (which, in a tree the
		// restore keeps growing, was half of its CPU). The store's key
		// filter gives the same answer once its open scan has ended, but
		// a restore may start before that (a restart with a gap to clear),
		// and a map lookup costs less than a Get that the filter ends.
		base.flushed, base.seed = map[uint64]struct{}{}, maphash.MakeSeed()
	}
	return &folder{st: st, topic: topic, partition: p, flushEvery: every, ov: overlay.New(base), base: base}
}

func (f *folder) apply(offset int64, r *kgo.Record) error {
	ev, err := Decode(r.Value)
	if err != nil {
		// A bad event cannot be folded; skipping it silently could lose a
		// started fence, so the restore stops and says where.
		return fmt.Errorf("offset %d: %w", offset, err)
	}
	if err := f.ov.Fold(f.partition, ev); err != nil {
		return err
	}
	f.events++
	f.pending++
	f.next = offset + 1
	if f.pending >= f.flushEvery {
		return f.flush(f.next, state.NoSync)
	}
	return nil
}

func (f *folder) flush(next int64, d state.Durability) error {
	b := f.st.NewBatch()
	err := f.ov.Write(Writer{b}, f.topic, map[int32]int64{f.partition: next}, func(en *overlay.Entry) error {
		f.base.stored(en.Cur)
		return nil
	})
	if err != nil {
		b.Discard()
		return err
	}
	f.ov.Reset()
	f.pending = 0
	return b.Commit(d)
}

// flushedBase reads the store, except, in a fresh restore, for keys no
// batch of this restore has stored: those cannot be there.
type flushedBase struct {
	st      *state.Store
	flushed map[uint64]struct{} // fresh restore: hashes of the keys flushed so far; nil: look every key up
	seed    maphash.Seed
}

func (b *flushedBase) Get(tenant, key string) (*saga.Record, error) {
	if b.flushed != nil {
		if _, maybe := b.flushed[b.hash(tenant, key)]; !maybe {
			return nil, nil // never flushed, and the view had nothing older
		}
	}
	return b.st.Get(tenant, key)
}

// stored notes a record a batch of this restore writes. Only stored keys
// are added, and none is ever removed: a hash shared with a stored key
// must keep its lookup.
func (b *flushedBase) stored(rec *saga.Record) {
	if b.flushed != nil && rec != nil {
		b.flushed[b.hash(rec.Tenant, rec.Key)] = struct{}{}
	}
}

func (b *flushedBase) hash(tenant, key string) uint64 {
	var h maphash.Hash
	h.SetSeed(b.seed)
	h.WriteString(tenant)
	h.WriteByte(0)
	h.WriteString(key)
	return h.Sum64()
}
