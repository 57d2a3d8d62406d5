package reconciler

import (
	"context"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ownershipChange is what a group callback reports, queued (handoff) for
// the loop to apply after its next poll: the loop owns the partition map
// and must not share it with franz-go's group goroutine.
type ownershipChange struct {
	partitions []int32
	assigned   bool
}

func (r *Reconciler) onAssigned(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	r.changes.Push(ownershipChange{partitions: slices.Clone(m[r.cfg.Names.Events]), assigned: true})
	r.joined.Store(true)
}

func (r *Reconciler) onRevoked(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	r.changes.Push(ownershipChange{partitions: slices.Clone(m[r.cfg.Names.Events])})
	r.ready.Store(false)
}

// resumeOffsets starts every assigned partition at the view's checkpoint,
// whatever the group has committed. Runs on the group goroutine; the store
// is safe for concurrent use.
func (r *Reconciler) resumeOffsets(_ context.Context, offs map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	topic := r.cfg.Names.Events
	for p := range offs[topic] {
		next, err := r.store.Checkpoint(topic, p)
		if err != nil {
			return nil, err
		}
		// Epoch -1: the offset is ours, not one the broker handed out, so
		// franz-go must not run its truncation check against it.
		offs[topic][p] = kgo.NewOffset().At(next).WithEpoch(-1)
	}
	return offs, nil
}

// applyOwnership applies the queued group changes. Loop only.
func (r *Reconciler) applyOwnership(ctx context.Context) error {
	for _, ch := range r.changes.Take() {
		for _, p := range ch.partitions {
			if !ch.assigned {
				delete(r.owned, p)
				r.m.Lag.DeleteLabelValues(strconv.Itoa(int(p)))
				continue
			}
			next, err := r.store.Checkpoint(r.cfg.Names.Events, p)
			if err != nil {
				return err
			}
			if next, err = r.bridgeGap(ctx, p, next); err != nil {
				return err
			}
			r.epochs++
			r.owned[p] = &partition{epoch: r.epochs, next: next}
		}
	}
	r.m.Owned.Set(float64(len(r.owned)))
	return nil
}

// ownedPartitions lists the owned partitions in order, so scans and logs
// are deterministic.
func (r *Reconciler) ownedPartitions() []int32 {
	ps := make([]int32, 0, len(r.owned))
	for p := range r.owned {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}
