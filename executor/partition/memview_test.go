package partition_test

import (
	"fmt"
	"sort"
	"strings"

	"github.com/atmostonce/toolexec/overlay"
	"github.com/atmostonce/toolexec/saga"
)

// memView is the core's View and the overlays' Writer in memory: what the
// member's Pebble store holds, for the interaction tests.
type memView struct {
	records     map[overlay.Key]*saga.Record
	part        map[overlay.Key]int32
	reads       map[overlay.ReadID]*saga.Event
	checkpoints map[int32]int64
}

func newMemView() *memView {
	return &memView{records: map[overlay.Key]*saga.Record{}, part: map[overlay.Key]int32{}, reads: map[overlay.ReadID]*saga.Event{},
		checkpoints: map[int32]int64{}}
}

func (v *memView) Get(tenant, key string) (*saga.Record, error) {
	return v.records[overlay.Key{Tenant: tenant, Key: key}].Clone(), nil
}

func (v *memView) ReadPending(id overlay.ReadID) (bool, error) {
	_, ok := v.reads[id]
	return ok, nil
}

func (v *memView) PendingReads(p int32, limit int) ([]*saga.Event, error) {
	var out []*saga.Event
	for _, id := range v.readIDs() {
		if id.P == p && len(out) < limit {
			out = append(out, v.reads[id])
		}
	}
	return out, nil
}

func (v *memView) Expired(now int64, limit int) ([][2]string, error) {
	var out [][2]string
	for _, k := range v.keys() {
		r := v.records[k]
		if at := r.SweepAt(); at > 0 && now >= at && len(out) < limit {
			out = append(out, [2]string{k.Tenant, k.Key})
		}
	}
	return out, nil
}

func (v *memView) ScanRecords(afterTenant, afterKey string, limit int, fn func(*saga.Record) error) (int, error) {
	n := 0
	for _, k := range v.keys() {
		if afterTenant+"\x00"+afterKey >= k.Tenant+"\x00"+k.Key && (afterTenant != "" || afterKey != "") {
			continue
		}
		if n == limit {
			break
		}
		if err := fn(v.records[k].Clone()); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func (v *memView) Checkpoint(p int32) (int64, error) { return v.checkpoints[p], nil }

func (v *memView) CountInDoubt(p int32) (int, error) {
	n := 0
	for k, r := range v.records {
		if v.part[k] == p && r.Status.InDoubt() {
			n++
		}
	}
	return n, nil
}

func (v *memView) InDoubtAfter(p int32, afterTenant, afterKey string, limit int) ([][2]string, error) {
	var out [][2]string
	for _, k := range v.keys() {
		if v.part[k] != p || !v.records[k].Status.InDoubt() || (afterTenant != "" && k.Tenant+"\x00"+k.Key <= afterTenant+"\x00"+afterKey) {
			continue
		}
		if len(out) == limit {
			break
		}
		out = append(out, [2]string{k.Tenant, k.Key})
	}
	return out, nil
}

func (v *memView) Put(p int32, prev, rec *saga.Record) error {
	if rec == nil {
		if prev != nil {
			k := overlay.Key{Tenant: prev.Tenant, Key: prev.Key}
			delete(v.records, k)
			delete(v.part, k)
		}
		return nil
	}
	k := overlay.Key{Tenant: rec.Tenant, Key: rec.Key}
	v.records[k], v.part[k] = rec.Clone(), p
	return nil
}

func (v *memView) PutRead(id overlay.ReadID, ev *saga.Event) error {
	v.reads[id] = ev
	return nil
}

func (v *memView) DeleteRead(id overlay.ReadID) error {
	delete(v.reads, id)
	return nil
}

func (v *memView) SetCheckpoint(_ string, p int32, next int64) error {
	v.checkpoints[p] = next
	return nil
}

func (v *memView) keys() []overlay.Key {
	ks := make([]overlay.Key, 0, len(v.records))
	for k := range v.records {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].Tenant+"\x00"+ks[i].Key < ks[j].Tenant+"\x00"+ks[j].Key })
	return ks
}

func (v *memView) readIDs() []overlay.ReadID {
	ids := make([]overlay.ReadID, 0, len(v.reads))
	for id := range v.reads {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return fmt.Sprint(ids[i]) < fmt.Sprint(ids[j]) })
	return ids
}

// String lists the records (status, call, waiters) and pending reads.
func (v *memView) String() string {
	var sb strings.Builder
	for _, k := range v.keys() {
		r := v.records[k]
		fmt.Fprintf(&sb, "p%d %s/%s %s call=%s attempt=%d waiters=%d\n", v.part[k], k.Tenant, k.Key, r.Status, r.Origin.IntentID, r.Attempt, len(r.Waiters))
	}
	for _, id := range v.readIDs() {
		fmt.Fprintf(&sb, "p%d pending read %s/%s id=%s\n", id.P, id.Tenant, id.Key, id.IntentID)
	}
	p := make([]int, 0, len(v.checkpoints))
	for k := range v.checkpoints {
		p = append(p, int(k))
	}
	sort.Ints(p)
	for _, q := range p {
		fmt.Fprintf(&sb, "checkpoint p%d %d\n", q, v.checkpoints[int32(q)])
	}
	if sb.Len() == 0 {
		return "empty\n"
	}
	return sb.String()
}
