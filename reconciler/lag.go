package reconciler

import (
	"context"
	"time"
)

// measureLag compares each owned partition's fold position with the log's
// last stable offset: the lag metric, and the "caught up" mark that lets a
// partition be scanned. A partition is caught up once its position reached
// the stable offset seen after its assignment; it stays so until it is
// revoked (a later lag is only noise: see scan). A failed measurement
// changes nothing but the outage it marks (grace.go).
func (r *Reconciler) measureLag(ctx context.Context) {
	if len(r.owned) == 0 {
		r.ready.Store(r.joined.Load())
		return
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	offs, err := r.adm.ListCommittedOffsets(lctx, r.cfg.Names.Events)
	if err != nil {
		r.cfg.Logger.Debug("reconciler: list offsets", "err", err)
		r.noteMeasured(false)
		return
	}
	all, measured := true, true
	for p, o := range r.owned {
		lo, ok := offs.Lookup(r.cfg.Names.Events, p)
		if !ok || lo.Err != nil {
			all, measured = all && o.caughtUp, false
			continue
		}
		o.prevStable, o.prevStableAt = o.stable, o.stableAt
		o.stable, o.stableAt = lo.Offset, r.now()
		r.m.setLag(p, lo.Offset-o.next)
		if o.next >= lo.Offset {
			o.caughtUp = true
		}
		all = all && o.caughtUp
	}
	r.noteMeasured(measured)
	r.ready.Store(r.joined.Load() && all)
}

// freshSince reports whether the view has folded every event committed
// before a moment at or after at: the log's stable offset as measured by
// the scan before this one (the fold keeps up with that one even while
// the log grows), taken no earlier than at.
//
// Why a retry waits for it: a native_key retry invokes the
// tool. The executor may have settled the call meanwhile (not_executed:
// its own attempt was never sent, its pending_ttl spent), and a view that
// has not folded that outcome yet would retry anyway: the tool acts under
// the call's downstream key while the log says the call never reached it,
// the key is free, and the next call acts again under a new key.
func (o *partition) freshSince(at int64) bool {
	return o.prevStableAt >= at && o.next >= o.prevStable
}
