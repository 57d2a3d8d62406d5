package executor

import (
	"container/list"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/atmostonce/toolexec/overlay"
	"github.com/atmostonce/toolexec/saga"
)

// hotRecords keeps the records the loop materialised last, so that the
// next tick that reads one (the outcome of a call started a tick ago, a
// duplicate soon after its original) skips Pebble's Get and the record's
// decode (two Gets per call, the second for a key written one
// tick earlier).
//
// It mirrors the store exactly for the keys it holds, and is never staler
// than the view:
//   - it is filled only where the view is materialised, after the batch
//     committed, with the very records the batch put (put, drop);
//   - it forgets a partition whenever anything else writes that
//     partition's records or the view's state is unsure: before and after
//     every restore (which also clears a gapped partition), at a
//     revocation, after a view write that failed, and after every aborted
//     transaction (forgetAll; aborts are rare);
//   - it never says that a key does not exist: a miss reads Pebble. A
//     negative entry that outlived a restore would be a false "new key",
//     which is a second call.
//
// The records it returns are shared: callers must not modify them (the
// overlay keeps the stored record as Prev, read-only, and folds a clone).
// Not safe for concurrent use: the loop owns it.
type hotRecords struct {
	byKey map[overlay.Key]*list.Element
	lru   *list.List // of *hotRecord, most recently written in front
	bytes int
	hit   prometheus.Counter // lookups answered here
	miss  prometheus.Counter // lookups that read Pebble
}

type hotRecord struct {
	k    overlay.Key
	p    int32
	rec  *saga.Record
	size int
}

const (
	// hotRecordsMax bounds the records kept: more than the calls a
	// member runs at once (MaxInFlight, 1,024 by default) plus a few
	// seconds of settled keys at the member's rate, where duplicates
	// mostly arrive; a map entry and a list element per record.
	hotRecordsMax = 16384
	// hotRecordsMaxBytes bounds their estimated size (hotSize): records
	// may carry results up to a Kafka record (1 MiB), and the member's
	// memory is budgeted (256 MB with a million keys).
	hotRecordsMaxBytes = 16 << 20
	// hotRecordOverhead is the estimated size of a record's fixed fields,
	// strings and map and list entries, beyond its byte slices.
	hotRecordOverhead = 512
	// hotWaiterBytes is the estimated size of one waiter.
	hotWaiterBytes = 160
)

func newHotRecords(lookups *prometheus.CounterVec) *hotRecords {
	return &hotRecords{byKey: map[overlay.Key]*list.Element{}, lru: list.New(),
		hit: lookups.WithLabelValues("hit"), miss: lookups.WithLabelValues("miss")}
}

// get returns the record of k if it is held (shared: do not modify).
func (h *hotRecords) get(k overlay.Key) (*saga.Record, bool) {
	el, ok := h.byKey[k]
	if !ok {
		h.miss.Inc()
		return nil, false
	}
	h.hit.Inc()
	return el.Value.(*hotRecord).rec, true
}

// put holds rec as the stored record of k on partition p; the caller
// has just committed it to the store and gives up rec.
//
// In the steady state it allocates nothing: a key held already is
// updated in place, and a full map reuses the element of the record it
// evicts.
func (h *hotRecords) put(p int32, k overlay.Key, rec *saga.Record) {
	size := hotSize(rec)
	if size > hotRecordsMaxBytes/4 {
		h.drop(k)
		return // one large result would push out many small records
	}
	el, ok := h.byKey[k]
	switch {
	case ok:
		h.bytes -= el.Value.(*hotRecord).size
		h.lru.MoveToFront(el)
	case h.lru.Len() >= hotRecordsMax:
		el = h.lru.Back()
		delete(h.byKey, el.Value.(*hotRecord).k)
		h.bytes -= el.Value.(*hotRecord).size
		h.lru.MoveToFront(el)
		h.byKey[k] = el
	default:
		el = h.lru.PushFront(&hotRecord{})
		h.byKey[k] = el
	}
	*el.Value.(*hotRecord) = hotRecord{k: k, p: p, rec: rec, size: size}
	h.bytes += size
	for h.bytes > hotRecordsMaxBytes {
		h.remove(h.lru.Back())
	}
}

// drop forgets k (its record was deleted, or is not known).
func (h *hotRecords) drop(k overlay.Key) {
	if el, ok := h.byKey[k]; ok {
		h.remove(el)
	}
}

// forgetPartition forgets every record of p.
func (h *hotRecords) forgetPartition(p int32) {
	for el := h.lru.Front(); el != nil; {
		next := el.Next()
		if el.Value.(*hotRecord).p == p {
			h.remove(el)
		}
		el = next
	}
}

// forgetAll forgets every record.
func (h *hotRecords) forgetAll() {
	clear(h.byKey)
	h.lru.Init()
	h.bytes = 0
}

func (h *hotRecords) remove(el *list.Element) {
	hr := h.lru.Remove(el).(*hotRecord)
	delete(h.byKey, hr.k)
	h.bytes -= hr.size
}

// hotSize estimates the memory rec holds.
func hotSize(rec *saga.Record) int {
	n := hotRecordOverhead + len(rec.Args) + len(rec.Result) + len(rec.ArgsHash) + len(rec.Waiters)*hotWaiterBytes +
		len(rec.Tenant) + len(rec.Key) + len(rec.Tool) + len(rec.ResolvedBy) + len(rec.DownstreamKey) +
		len(rec.Origin.IntentID) + len(rec.Origin.ReplyTo) + len(rec.Origin.Traceparent)
	if rec.Comp != nil {
		n += len(rec.Comp.Result)
	}
	if rec.Err != nil {
		n += len(rec.Err.Message)
	}
	return n
}

// materialised takes the records of a view write that committed: the
// current record of each entry the write put, the stored one (Prev) of
// each it did not (overlay.Entry.Changed).
func (h *hotRecords) materialised(ov *overlay.Overlay) {
	ov.Entries(func(en *overlay.Entry) {
		rec := en.Cur
		if !en.Changed() {
			rec = en.Prev
		}
		if rec == nil {
			h.drop(en.K)
			return
		}
		h.put(en.P, en.K, rec)
	})
}
