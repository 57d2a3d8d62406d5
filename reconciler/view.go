package reconciler

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/overlay"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/state"
	"github.com/atmostonce/toolexec/wire"
)

// fold folds every polled event of an owned partition into the view: one
// synced Pebble batch per partition, holding the records, the new
// checkpoint, and the deletion of investigations whose subject is gone.
// The view is the same fold of the same log as the executor's (saga.Apply),
// so it can lag but never disagree.
func (r *Reconciler) fold(fs kgo.Fetches) error {
	var err error
	fs.EachPartition(func(fp kgo.FetchTopicPartition) {
		o, ok := r.owned[fp.Partition]
		if err != nil || !ok || fp.Topic != r.cfg.Names.Events {
			return
		}
		if fp.LogStartOffset > o.next {
			if err = r.startPassed(fp.Partition, o, fp.LogStartOffset); err != nil {
				return
			}
		}
		if len(fp.Records) > 0 {
			err = r.foldPartition(fp.Partition, o, fp.Records)
		}
	})
	return err
}

func (r *Reconciler) foldPartition(p int32, o *partition, recs []*kgo.Record) error {
	f := &pollFold{st: r.store, errs: &r.errs, ov: overlay.New(r.store), returned: map[overlay.Key][]string{}, now: r.now(), policy: r.cfg.Policy}
	next := o.next
	for _, rec := range recs {
		if rec.Offset < o.next {
			continue // folded before (a re-fetch after a rebalance)
		}
		next = rec.Offset + 1
		if rec.Attrs.IsControl() {
			continue
		}
		if err := f.apply(p, rec); err != nil {
			// Skipping a bad event could hide a key in doubt; the executor's
			// restore stops on it too.
			return fmt.Errorf("%w: %s/%d offset %d: %w", ErrFatal, rec.Topic, p, rec.Offset, err)
		}
	}
	if next == o.next {
		return nil
	}
	if err := f.commit(r.cfg.Names.Events, p, next); err != nil {
		return fmt.Errorf("%w: %w", ErrFatal, err)
	}
	o.next = next
	o.forget(f.touched())
	return nil
}

// pollFold is one partition's overlay of the records a poll touched.
type pollFold struct {
	st   *state.Store
	errs *toolErrors // outcomes that did not succeed are noted here
	ov   *overlay.Overlay
	// returned lists, per key, the compensations of its call in doubt that
	// came back without reaching their tool in this poll (compround.go).
	returned map[overlay.Key][]string
	now      int64
	policy   Policy
}

// apply folds one event. Round and read events are about the partition
// or one read-only call, never a key's record: the reconciler keeps no
// pending reads.
func (f *pollFold) apply(p int32, rec *kgo.Record) error {
	ev, err := eventlog.Decode(rec.Value)
	if err != nil {
		return err
	}
	if ev.Kind == saga.EvRound || ev.Kind.IsRead() {
		return nil
	}
	en, err := f.ov.Load(p, ev.Tenant, ev.Key)
	if err != nil {
		return err
	}
	round, compensating := compensationOf(en.Cur)
	f.ov.Apply(en, *ev)
	f.errs.noteOutcome(ev, errorTool(ev, en.Cur))
	f.ov.Trim(en, slimSettled)
	if compensating && round.returnedFrom(en.Cur) {
		k := overlay.Key{Tenant: ev.Tenant, Key: ev.Key}
		f.returned[k] = append(f.returned[k], round.String())
	}
	return nil
}

// slimSettled drops the result of a settled record: the reconciler never
// answers anyone, and a result may be half a megabyte. Everything a later
// event needs stays (the arguments: a compensation in doubt is retried
// with them).
func slimSettled(rec *saga.Record) *saga.Record {
	if rec != nil && rec.Status.Settled() {
		rec.Result = nil
	}
	return rec
}

// commit writes the overlay and the checkpoint in one synced batch. An
// investigation whose subject the key no longer has in doubt (it settled,
// a new call started, another compensation did) is obsolete and goes in
// the same batch: a restart can never act on it. A compensation that came
// back without reaching its tool is a failed round of its call's
// investigation, counted in the same batch.
func (f *pollFold) commit(topic string, p int32, next int64) error {
	b := f.st.NewBatch()
	err := f.ov.Write(eventlog.Writer{Batch: b}, topic, map[int32]int64{p: next}, func(en *overlay.Entry) error {
		return f.commitKey(b, en)
	})
	if err != nil {
		b.Discard()
		return err
	}
	return b.Commit(state.Sync)
}

func (f *pollFold) commitKey(b *state.Batch, en *overlay.Entry) error {
	prev, cur := en.Prev, en.Cur
	tenant, key := en.K.Tenant, en.K.Key
	if id := compensationIdentity(prev); id != "" && id != compensationIdentity(cur) {
		if err := b.DeleteAux(investigationKey(tenant, key, PhaseCompensation)); err != nil {
			return err
		}
	}
	switch id := callIdentity(prev); {
	case id != "" && id != callIdentity(cur):
		return b.DeleteAux(investigationKey(tenant, key, PhaseCall))
	case len(f.returned[en.K]) > 0 && callIdentity(cur) != "":
		return f.countReturned(b, tenant, key, cur, f.returned[en.K])
	}
	return nil
}

// touched lists the routing keys of the records this poll changed.
func (f *pollFold) touched() []string {
	out := make([]string, 0, f.ov.Len())
	f.ov.Entries(func(en *overlay.Entry) {
		tenant, key := en.K.Tenant, en.K.Key
		out = append(out, wire.RoutingKey(tenant, key))
	})
	return out
}
