package eventlog

import (
	"context"
	"fmt"
	"hash/maphash"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

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
	SettleWait time.Duration // how long open transactions may take to settle; default 60s
	FlushEvery int           // events per intermediate batch; default 20000
	ClientOpts []kgo.Opt
	// PartitionOf names a key's partition; needed to clear a partition's
	// stale view after a gap (gap.go).
	PartitionOf func(tenant, key string) int32
}

// RestoreInto brings the store's view of one events partition up to date:
// from its checkpoint to the target of Target, folding every committed
// event with saga.Apply. When the log no longer starts at or below the
// checkpoint it begins at a complete snapshot round instead, or refuses
// with a *GapError (gap.go). Intermediate batches are not synced; the last one
// is, with the final checkpoint, so a crash mid-restore only repeats work.
func RestoreInto(ctx context.Context, st *state.Store, adm *kadm.Client, partition int32, o RestoreOptions) (RestoreStats, error) {
	start := time.Now()
	if o.SettleWait <= 0 {
		o.SettleWait = 60 * time.Second
	}
	if o.FlushEvery <= 0 {
		o.FlushEvery = 20000
	}
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
	f := newFolder(st, o.Topic, partition, o.FlushEvery)
	if viewed == 0 || from != viewed {
		// A partition with no checkpoint has no record in the view: every
		// record is written in one batch with its partition's checkpoint,
		// and a key belongs to one partition. So the only keys of this
		// partition that can be in the store are those this restore has
		// flushed; any other key needs no lookup (which, in a tree the
		// restore keeps growing, was half of its CPU).
		f.flushed = map[uint64]struct{}{}
	}
	next, err := Read(ctx, o.Seeds, o.Topic, partition, from, to, f.apply, o.ClientOpts...)
	if err != nil {
		return RestoreStats{}, fmt.Errorf("eventlog: restore %s/%d: %w", o.Topic, partition, err)
	}
	if err := f.flush(max(next, from), state.Sync); err != nil {
		return RestoreStats{}, err
	}
	return RestoreStats{From: from, To: next, Events: f.events, Duration: time.Since(start)}, nil
}

// folder applies events to a bounded overlay of touched records and writes
// them to the store in batches.
type folder struct {
	st         *state.Store
	topic      string
	partition  int32
	flushEvery int
	flushed    map[uint64]struct{} // restore from 0: hashes of the keys flushed so far; nil: look every key up
	seed       maphash.Seed
	events     int
	pending    int
	next       int64
	prev       map[string]*saga.Record // as stored before this batch
	cur        map[string]*saga.Record
	reads      map[string]*saga.Event // pending reads by aux key; nil: answered
}

func newFolder(st *state.Store, topic string, p int32, every int) *folder {
	return &folder{st: st, topic: topic, partition: p, flushEvery: every, seed: maphash.MakeSeed(),
		prev: map[string]*saga.Record{}, cur: map[string]*saga.Record{}, reads: map[string]*saga.Event{}}
}

func (f *folder) apply(offset int64, r *kgo.Record) error {
	ev, err := Decode(r.Value)
	if err != nil {
		// A bad event cannot be folded; skipping it silently could lose a
		// started fence, so the restore stops and says where.
		return fmt.Errorf("offset %d: %w", offset, err)
	}
	if ev.Kind.IsRead() {
		f.foldRead(ev)
	} else if err := f.foldRecord(ev); err != nil {
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

func (f *folder) foldRecord(ev *saga.Event) error {
	rk := ev.Tenant + "\x00" + ev.Key
	rec, err := f.load(rk, ev.Tenant, ev.Key)
	if err != nil {
		return err
	}
	f.cur[rk] = saga.Apply(rec, *ev)
	return nil
}

func (f *folder) foldRead(ev *saga.Event) {
	k := string(ReadKeyOf(f.partition, ev))
	if ev.Kind == saga.EvReadStarted {
		f.reads[k] = ev
	} else {
		f.reads[k] = nil
	}
}

func (f *folder) load(rk, tenant, key string) (*saga.Record, error) {
	if rec, ok := f.cur[rk]; ok {
		return rec, nil
	}
	if f.flushed != nil {
		if _, maybe := f.flushed[maphash.String(f.seed, rk)]; !maybe {
			f.prev[rk] = nil // never flushed, and the view had nothing older
			return nil, nil
		}
	}
	rec, err := f.st.Get(tenant, key)
	if err != nil {
		return nil, err
	}
	f.prev[rk] = rec
	return rec.Clone(), nil
}

func (f *folder) flush(next int64, d state.Durability) error {
	b := f.st.NewBatch()
	for rk, rec := range f.cur {
		if err := b.Put(f.partition, f.prev[rk], rec); err != nil {
			b.Discard()
			return err
		}
		if f.flushed != nil && rec != nil {
			// Only stored keys are added, and none is ever removed: a
			// hash shared with a stored key must keep its lookup.
			f.flushed[maphash.String(f.seed, rk)] = struct{}{}
		}
	}
	if err := PutReads(b, f.reads); err != nil {
		b.Discard()
		return err
	}
	if err := b.SetCheckpoint(f.topic, f.partition, next); err != nil {
		b.Discard()
		return err
	}
	f.prev, f.cur, f.reads, f.pending = map[string]*saga.Record{}, map[string]*saga.Record{}, map[string]*saga.Event{}, 0
	return b.Commit(d)
}
