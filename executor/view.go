package executor

import (
	"bytes"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/internal/invariants"
	"github.com/atmostonce/toolexec/overlay"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/state"
)

// storeView is the partition core's View of the member's Pebble store,
// with the records the loop materialised last held in memory (hot).
type storeView struct {
	st     *state.Store
	events string // the events topic, whose checkpoints the view keeps
	hot    *hotRecords
}

// Get returns the stored record of (tenant, key): the hot copy when it is
// held (shared: the overlay only reads it and folds a clone), else
// Pebble's.
func (v storeView) Get(tenant, key string) (*saga.Record, error) {
	if rec, ok := v.hot.get(overlay.Key{Tenant: tenant, Key: key}); ok {
		v.checkHot(rec)
		return rec, nil
	}
	return v.st.Get(tenant, key)
}

// checkHot (invariants only): a hot record is the stored one, byte for
// byte. A difference means a write of the store that did not go through
// materialise, or a hot copy a restore did not forget: a stale decision.
func (v storeView) checkHot(hot *saga.Record) {
	if !invariants.Enabled {
		return
	}
	stored, err := v.st.Get(hot.Tenant, hot.Key)
	invariants.Check(err == nil, "hot record %s/%s: store read: %v", hot.Tenant, hot.Key, err)
	a, errA := msgpack.Marshal(hot)
	b, errB := msgpack.Marshal(stored)
	invariants.Check(errA == nil && errB == nil && bytes.Equal(a, b), "hot record %s/%s differs from the stored one:\n hot    %+v\n stored %+v", hot.Tenant, hot.Key, hot, stored)
}

func (v storeView) ReadPending(id overlay.ReadID) (bool, error) {
	return eventlog.ReadPending(v.st, id)
}

func (v storeView) PendingReads(p int32, limit int) ([]*saga.Event, error) {
	return eventlog.PendingReads(v.st, p, limit)
}

func (v storeView) Expired(now int64, limit int) ([][2]string, error) {
	return v.st.Expired(now, limit)
}

func (v storeView) ScanRecords(afterTenant, afterKey string, limit int, fn func(*saga.Record) error) (int, error) {
	return v.st.ScanRecords(afterTenant, afterKey, limit, fn)
}

func (v storeView) Checkpoint(p int32) (int64, error) { return v.st.Checkpoint(v.events, p) }

func (v storeView) CountInDoubt(p int32) (int, error) { return v.st.CountInDoubt(p) }

func (v storeView) InDoubtAfter(p int32, afterTenant, afterKey string, limit int) ([][2]string, error) {
	ds, err := v.st.InDoubtAfter(p, afterTenant, afterKey, limit)
	out := make([][2]string, len(ds))
	for i, d := range ds {
		out[i] = [2]string{d.Tenant, d.Key}
	}
	return out, err
}
