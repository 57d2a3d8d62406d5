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
// changes nothing.
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
		return
	}
	all := true
	for p, o := range r.owned {
		lo, ok := offs.Lookup(r.cfg.Names.Events, p)
		if !ok || lo.Err != nil {
			all = all && o.caughtUp
			continue
		}
		r.m.setLag(p, lo.Offset-o.next)
		if o.next >= lo.Offset {
			o.caughtUp = true
		}
		all = all && o.caughtUp
	}
	r.ready.Store(r.joined.Load() && all)
}
