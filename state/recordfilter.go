package state

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble"
)

// recordFilter is the store's keyFilter and its life. It must never say
// "no record" for a key the store holds: Get would answer nil, and a key
// that completed would be called a second time. So:
//   - a commit adds its keys before Pebble applies the batch, so whoever
//     can read the record can also see its bits;
//   - until a scan of the records has filled a filter, there is none, and
//     every lookup reads Pebble (Open starts that scan in the background);
//   - a scan runs while commits go on: under gate, it publishes the
//     filter it fills (next) and opens its iterator in one step, so a
//     commit either applied before the iterator (the scan sees its keys)
//     or adds them to next itself; and the finished filter replaces cur
//     under gate too, so no commit adds to the old one alone.
//
// Deleted keys keep their bits; once more keys were deleted since the
// last scan than are left (and at least filterRebuildMin), a commit
// starts a scan that builds it anew. Growth alone never does: a restore
// of a million keys would otherwise rescan again and again, each scan
// pinning the memtables it reads (measured: +30 MB of peak RSS and
// +0.5 s of take-over).
type recordFilter struct {
	seed maphash.Seed
	// gate is read-held by a commit from adding its keys until Pebble
	// applied the batch, and write-held to start a scan and to publish
	// its filter.
	gate sync.RWMutex
	cur  atomic.Pointer[keyFilter] // nil until a scan finished
	next atomic.Pointer[keyFilter] // the filter a scan is filling
	live atomic.Int64              // record keys the last scan counted
	// created and deleted count the record keys commits created and
	// deleted since the last scan began: live+created-deleted estimates
	// the keys held, deleted the bits held for nothing.
	created, deleted atomic.Int64
	scans            atomic.Int64 // scans published, for tests

	life     sync.Mutex // guards stopped and the start of scans
	stopped  bool
	scanning bool // a scan goroutine runs; guarded by life
	stop     chan struct{}
	wg       sync.WaitGroup
}

const (
	// filterScanCheck is how many keys a scan reads between checks of stop.
	filterScanCheck = 4096
	// filterRebuildMin is the fewest deleted keys worth a rebuild: a
	// scan reads every record, and the bits of fewer keys cost under
	// 160 KiB.
	filterRebuildMin = 1 << 17
)

func newRecordFilter() *recordFilter {
	return &recordFilter{seed: maphash.MakeSeed(), stop: make(chan struct{})}
}

func (f *recordFilter) hash(recordKey []byte) uint64 { return maphash.Bytes(f.seed, recordKey) }

// absent reports that the store certainly holds no record under
// recordKey.
func (f *recordFilter) absent(recordKey []byte) bool {
	cur := f.cur.Load()
	return cur != nil && !cur.mayContain(f.hash(recordKey))
}

// admit adds a batch's record keys to the filters; the caller holds gate
// read-locked until Pebble applied the batch.
func (f *recordFilter) admit(hashes []uint64) {
	for _, kf := range [2]*keyFilter{f.cur.Load(), f.next.Load()} {
		if kf == nil {
			continue
		}
		for _, h := range hashes {
			kf.add(h)
		}
	}
}

// churn counts a committed batch's created and deleted record keys.
func (f *recordFilter) churn(created, deleted int64) {
	if created != 0 {
		f.created.Add(created)
	}
	if deleted != 0 {
		f.deleted.Add(deleted)
	}
}

// outgrown reports whether more keys were deleted since the last scan
// than are left, and at least filterRebuildMin.
func (f *recordFilter) outgrown() bool {
	if f.cur.Load() == nil {
		return false
	}
	deleted := f.deleted.Load()
	return deleted >= filterRebuildMin && deleted > f.live.Load()+f.created.Load()-deleted
}

// startScan starts a scan of s's records that builds a new filter,
// unless one runs or the store is closing.
func (f *recordFilter) startScan(s *Store) {
	f.life.Lock()
	defer f.life.Unlock()
	if f.stopped || f.scanning {
		return
	}
	f.scanning = true
	f.wg.Add(1)
	go f.scan(s)
}

// close stops a running scan and waits for it.
func (f *recordFilter) close() {
	f.life.Lock()
	if !f.stopped {
		f.stopped = true
		close(f.stop)
	}
	f.life.Unlock()
	f.wg.Wait()
}

// scan fills a new filter with every record key and makes it cur. On an
// error or a close, cur stays as it was (perhaps none).
func (f *recordFilter) scan(s *Store) {
	defer f.wg.Done()
	defer func() {
		f.life.Lock()
		f.scanning = false
		f.life.Unlock()
	}()
	if err := s.acquire(); err != nil {
		return
	}
	defer s.mu.RUnlock()
	nf, it, err := f.begin(s)
	if err != nil {
		return
	}
	n, ok := f.fill(nf, it)
	if err := it.Close(); err != nil || !ok {
		f.next.Store(nil)
		return
	}
	f.publish(nf, n)
}

// begin publishes an empty filter as next and opens the iterator that
// fills it, in one step under gate. The caller holds s.mu read-locked.
func (f *recordFilter) begin(s *Store) (*keyFilter, *pebble.Iterator, error) {
	nf := newKeyFilter(2 * f.live.Load())
	f.gate.Lock()
	defer f.gate.Unlock()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{spaceRecord}, UpperBound: []byte{spaceRecord + 1}})
	if err != nil {
		return nil, nil, err
	}
	f.next.Store(nf)
	f.created.Store(0) // the iterator sees every key committed so far
	f.deleted.Store(0)
	return nf, it, nil
}

// publish makes the filled filter cur, under gate: a commit adds to both
// or to the new one alone.
func (f *recordFilter) publish(nf *keyFilter, keys int64) {
	f.gate.Lock()
	defer f.gate.Unlock()
	f.cur.Store(nf)
	f.next.Store(nil)
	f.live.Store(keys)
	f.scans.Add(1)
}

// fill adds every key it yields to kf; false when stopped or failed.
func (f *recordFilter) fill(kf *keyFilter, it *pebble.Iterator) (int64, bool) {
	var n int64
	for ok := it.First(); ok; ok = it.Next() {
		kf.add(f.hash(it.Key()))
		n++
		if n%filterScanCheck == 0 {
			select {
			case <-f.stop:
				return n, false
			default:
			}
		}
	}
	return n, it.Error() == nil
}
