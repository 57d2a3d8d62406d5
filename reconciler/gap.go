package reconciler

import (
	"context"
	"fmt"

	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/state"
	"github.com/atmostonce/toolexec/wire"
)

// clearChunk bounds the records one batch of clearPartition deletes.
const clearChunk = 4096

// bridgeGap returns the offset the view of partition p resumes from: its
// checkpoint next, or, when the event log no longer holds the events
// after it (the log's retention, or an operator's DeleteRecords, moved
// the log start past it), the log start, after the view of p was cleared.
//
// Why clear: the lost events may have
// settled a key the view still holds in doubt, and expired it. Folding
// what is left onto the stale view would keep that key in doubt for ever,
// and the reconciler would retry its call under a downstream key the
// tool may long have forgotten: a second effect. A view rebuilt from the
// log start holds every key with an event there; the executor's snapshot
// rounds restate every live record before retention can take its events
// (executor/snapshot.go), so a key in doubt shows again at the latest by
// the next round's restatement. A view that never folded p (next 0) has
// nothing stale and starts at the log start anyway.
func (r *Reconciler) bridgeGap(ctx context.Context, p int32, next int64) (int64, error) {
	if next == 0 {
		return 0, nil
	}
	start, err := r.logStart(ctx, p)
	if err != nil {
		r.cfg.Logger.Warn("reconciler: the log start is unknown; resuming at the checkpoint", "partition", p, "checkpoint", next, "err", err)
		return next, nil
	}
	if next >= start {
		return next, nil
	}
	r.cfg.Logger.Warn("reconciler: the event log no longer holds events the view needs; rebuilding the partition's view from the log start",
		"partition", p, "checkpoint", next, "log_start", start)
	r.m.ViewGaps.Inc()
	if err := r.clearPartition(p, start); err != nil {
		return 0, fmt.Errorf("%w: clear partition %d: %w", ErrFatal, p, err)
	}
	return start, nil
}

// startPassed handles a fetch that reports the log start of p past the
// view's next offset: the events in between are gone, unfolded. The view
// of p is rebuilt from that start, as bridgeGap does at an assignment.
//
// Why at the fetch and not only at the assignment: the log start can move
// after bridgeGap looked (franz-go then resumes at the new start, as this
// group's reset offset asks, without a word), and a reconciler that lags
// behind the log's retention while it follows meets the same move. Folding
// on would leave the view stale, the hazard bridgeGap describes.
func (r *Reconciler) startPassed(p int32, o *partition, start int64) error {
	if o.next > 0 {
		r.cfg.Logger.Warn("reconciler: the event log's start moved past the view while it was read; rebuilding the partition's view from the log start",
			"partition", p, "next", o.next, "log_start", start)
		r.m.ViewGaps.Inc()
		if err := r.clearPartition(p, start); err != nil {
			return fmt.Errorf("%w: clear partition %d: %w", ErrFatal, p, err)
		}
	}
	r.epochs++
	*o = partition{epoch: r.epochs, next: start}
	return nil
}

// logStart is the log start offset of events partition p.
func (r *Reconciler) logStart(ctx context.Context, p int32) (int64, error) {
	if r.startOffset != nil {
		return r.startOffset(ctx, p)
	}
	offs, err := r.adm.ListStartOffsets(ctx, r.cfg.Names.Events)
	if err != nil {
		return 0, err
	}
	o, ok := offs.Lookup(r.cfg.Names.Events, p)
	if !ok {
		return 0, fmt.Errorf("no start offset for %s/%d", r.cfg.Names.Events, p)
	}
	return o.Offset, o.Err
}

// clearPartition deletes the view's records of partition p and their
// investigations, a chunk per synced batch, then sets p's checkpoint to
// next. The checkpoint goes last: a crash in between leaves it below the
// log start, and the next assignment clears again.
func (r *Reconciler) clearPartition(p int32, next int64) error {
	after := doubtPos{}
	for {
		var doomed []*saga.Record
		n, err := r.store.ScanRecords(after.tenant, after.key, clearChunk, func(rec *saga.Record) error {
			after = doubtPos{tenant: rec.Tenant, key: rec.Key}
			if wire.Partition(wire.RoutingKey(rec.Tenant, rec.Key), r.nControl) == p {
				doomed = append(doomed, rec)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := r.deleteRecords(p, doomed); err != nil {
			return err
		}
		if n < clearChunk {
			break
		}
	}
	b := r.store.NewBatch()
	if err := b.SetCheckpoint(r.cfg.Names.Events, p, next); err != nil {
		b.Discard()
		return err
	}
	return b.Commit(state.Sync)
}

func (r *Reconciler) deleteRecords(p int32, recs []*saga.Record) error {
	if len(recs) == 0 {
		return nil
	}
	b := r.store.NewBatch()
	for _, rec := range recs {
		err := b.Put(p, rec, nil)
		if err == nil {
			err = b.DeleteAux(investigationKey(rec.Tenant, rec.Key, PhaseCall))
		}
		if err == nil {
			err = b.DeleteAux(investigationKey(rec.Tenant, rec.Key, PhaseCompensation))
		}
		if err != nil {
			b.Discard()
			return err
		}
	}
	return b.Commit(state.Sync)
}
