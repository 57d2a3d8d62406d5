package executor

import (
	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/state"
	"github.com/atmostonce/toolexec/view"
)

// storeView is the partition core's View of the member's Pebble store.
type storeView struct {
	st     *state.Store
	events string // the events topic, whose checkpoints the view keeps
}

func (v storeView) Get(tenant, key string) (*saga.Record, error) { return v.st.Get(tenant, key) }

func (v storeView) ReadPending(id view.ReadID) (bool, error) { return eventlog.ReadPending(v.st, id) }

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
