package state

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble"

	"github.com/atmostonce/toolexec/saga"
)

// setRaw writes raw bytes under a record key as a commit would: its key
// in the filter first. For tests that store undecodable values.
func (s *Store) setRaw(k, v []byte) error {
	s.filter.gate.RLock()
	defer s.filter.gate.RUnlock()
	s.filter.admit([]uint64{s.filter.hash(k)})
	return s.db.Set(k, v, pebble.Sync)
}

// waitFilter waits for the scan Open started, so that lookups use a filter.
func waitFilter(t *testing.T, s *Store) {
	t.Helper()
	s.filter.life.Lock()
	s.filter.life.Unlock()
	s.filter.wg.Wait()
	if s.filter.cur.Load() == nil {
		t.Fatal("no key filter after the open scan")
	}
}

// filterStore opens a store in a temporary directory, closed at the
// test's end, once its open scan has filled a filter.
func filterStore(tb testing.TB) *Store {
	tb.Helper()
	s, err := Open(tb.TempDir(), Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	s.filter.wg.Wait()
	return s
}

// commitKey commits one batch that puts a settled record of key k
// (prev nil) or deletes prev.
func commitKey(t *testing.T, s *Store, k string, prev *saga.Record) {
	t.Helper()
	b := s.NewBatch()
	var rec *saga.Record
	if prev == nil {
		rec = stSettled("t", k, saga.StatusSucceeded, 1e12)
	}
	if err := b.Put(0, prev, rec); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(NoSync); err != nil {
		t.Fatal(err)
	}
}

// The filter never rules out a key it was given, across layer growth.
func TestKeyFilterHasNoFalseNegatives(t *testing.T) {
	f := newKeyFilter(0)
	const n = 400_000 // past the first layer's ~100,000 keys
	for i := range n {
		f.add(rand.Uint64() ^ uint64(i))
	}
	r := rand.New(rand.NewPCG(1, 2))
	var added []uint64
	for range 50_000 {
		h := r.Uint64()
		f.add(h)
		added = append(added, h)
	}
	for _, h := range added {
		if !f.mayContain(h) {
			t.Fatalf("hash %x added, then ruled out", h)
		}
	}
	if ls := len(*f.layers.Load()); ls < 2 {
		t.Fatalf("%d layers after %d keys, want growth", ls, n)
	}
	// About 1 absent key in 200 per full layer says "maybe": far under 10%.
	fp := 0
	for range 100_000 {
		if f.mayContain(r.Uint64()) {
			fp++
		}
	}
	if fp > 10_000 {
		t.Fatalf("%d of 100,000 absent keys say maybe", fp)
	}
	t.Logf("%d layers, %d bits, %d of 100,000 absent keys say maybe", len(*f.layers.Load()), f.totalBits(), fp)
}

// The store's Get agrees with a reference map through commits, discarded
// batches, deletes, scans that rebuild the filter while commits go on,
// and a reopen (whose filter comes from the disk alone).
func TestKeyFilterNeverHidesARecord(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	waitFilter(t, s)
	live := map[string]bool{}
	r := rand.New(rand.NewPCG(7, 9))
	key := func(i int) string { return fmt.Sprintf("k%06d", i) }
	check := func(when string) {
		t.Helper()
		for i := range 3000 {
			got, err := s.Get("t", key(i))
			if err != nil {
				t.Fatal(err)
			}
			if (got != nil) != live[key(i)] {
				t.Fatalf("%s: Get(%s) = %v, want present=%v", when, key(i), got, live[key(i)])
			}
		}
	}
	for round := range 40 {
		b := s.NewBatch()
		staged := map[string]bool{}
		for range 200 {
			k := key(r.IntN(3000))
			if _, again := staged[k]; again {
				continue // a tick writes a key once
			}
			prev, err := s.Get("t", k)
			if err != nil {
				t.Fatal(err)
			}
			if r.IntN(4) == 0 {
				if prev != nil {
					if err := b.Put(0, prev, nil); err != nil {
						t.Fatal(err)
					}
				}
				staged[k] = false
				continue
			}
			if err := b.Put(0, prev, stSettled("t", k, saga.StatusSucceeded, 1e12)); err != nil {
				t.Fatal(err)
			}
			staged[k] = true
		}
		if round%7 == 3 {
			b.Discard()
			continue
		}
		if round%5 == 0 {
			s.filter.startScan(s) // a rebuild racing the commit below
		}
		if err := b.Commit(NoSync); err != nil {
			t.Fatal(err)
		}
		for k, v := range staged {
			live[k] = v
		}
		check(fmt.Sprintf("round %d", round))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check("reopened, before the scan")
	waitFilter(t, s)
	check("reopened")
}

// Concurrent commits and scans: a key committed while a scan runs is in
// the filter the scan publishes (run with -race).
func TestKeyFilterScanRacesCommits(t *testing.T) {
	s := filterStore(t)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				s.filter.startScan(s)
			}
		}
	}()
	for i := range 3000 {
		k := fmt.Sprintf("r%05d", i)
		commitKey(t, s, k, nil)
		if got, err := s.Get("t", k); err != nil || got == nil {
			t.Fatalf("Get(%s) after its commit = %v, %v", k, got, err)
		}
	}
	close(stop)
	wg.Wait()
	waitFilter(t, s)
	for i := range 3000 {
		k := fmt.Sprintf("r%05d", i)
		if got, err := s.Get("t", k); err != nil || got == nil {
			t.Fatalf("Get(%s) after the scans = %v, %v", k, got, err)
		}
	}
}

// A filter that holds the bits of more deleted keys than live ones is
// rebuilt by the next commit; growth alone is not a reason.
func TestKeyFilterIsRebuiltAfterChurnNotGrowth(t *testing.T) {
	s := filterStore(t)
	f := s.filter
	commit := func(k string, prev *saga.Record) { commitKey(t, s, k, prev) }
	commit("a", nil)
	commit("b", nil)
	if got, want := [2]int64{f.created.Load(), f.deleted.Load()}, [2]int64{2, 0}; got != want {
		t.Fatalf("created, deleted = %v, want %v", got, want)
	}
	f.created.Add(5_000_000) // a restore of millions of keys: no scan
	commit("c", nil)
	f.wg.Wait()
	if n := f.scans.Load(); n != 1 {
		t.Fatalf("%d scans after growth alone, want 1 (the open scan)", n)
	}
	f.deleted.Add(5_000_003) // as many deleted as created: rebuild
	a, err := s.Get("t", "a")
	if err != nil || a == nil {
		t.Fatal(a, err)
	}
	commit("a", a) // the delete of a, counted too
	f.wg.Wait()
	if n := f.scans.Load(); n != 2 {
		t.Fatalf("%d scans after churn, want 2", n)
	}
	if got, want := f.live.Load(), int64(2); got != want {
		t.Fatalf("the rebuild counted %d keys, want %d", got, want)
	}
	if got := f.cur.Load().totalBits(); got != filterMinBits {
		t.Fatalf("rebuilt filter has %d bits, want %d", got, filterMinBits)
	}
	for k, want := range map[string]bool{"a": false, "b": true, "c": true} {
		if rec, err := s.Get("t", k); err != nil || (rec != nil) != want {
			t.Fatalf("Get(%s) = %v, %v; want present=%v", k, rec, err, want)
		}
	}
}

// A key committed between a scan's iterator and its publication is in
// the published filter: the commit added it to the filter being filled.
func TestKeyFilterKeepsKeysCommittedDuringAScan(t *testing.T) {
	s := filterStore(t)
	put := func(k string) { commitKey(t, s, k, nil) }
	put("before")
	if err := s.acquire(); err != nil {
		t.Fatal(err)
	}
	nf, it, err := s.filter.begin(s)
	if err != nil {
		t.Fatal(err)
	}
	put("during") // not in the iterator's view
	n, ok := s.filter.fill(nf, it)
	if err := it.Close(); err != nil || !ok || n != 1 {
		t.Fatalf("scan: %d keys, ok %v, close %v; want 1 key", n, ok, err)
	}
	s.filter.publish(nf, n)
	s.mu.RUnlock()
	for _, k := range []string{"before", "during"} {
		if rec, err := s.Get("t", k); err != nil || rec == nil {
			t.Fatalf("Get(%s) after the scan = %v, %v", k, rec, err)
		}
	}
}

// The lookup of a key the store does not hold, as every new key's first
// read is, with the key filter and without (Pebble's memtable and
// sstable filters alone), over 200,000 stored keys. Run with
// go test ./state -run '^$' -bench GetAbsent -benchmem.
func BenchmarkGetAbsentKey(b *testing.B) {
	s := filterStore(b)
	for i := 0; i < 200_000; i += 1000 {
		batch := s.NewBatch()
		for j := i; j < i+1000; j++ {
			if err := batch.Put(0, nil, stSettled("t", fmt.Sprintf("k%07d", j), saga.StatusSucceeded, 1e12)); err != nil {
				b.Fatal(err)
			}
		}
		if err := batch.Commit(NoSync); err != nil {
			b.Fatal(err)
		}
	}
	s.filter.wg.Wait()
	withFilter := s.filter.cur.Load()
	for _, bc := range []struct {
		name string
		f    *keyFilter
	}{{"filter", withFilter}, {"pebble", nil}} {
		b.Run(bc.name, func(b *testing.B) {
			s.filter.cur.Store(bc.f)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				if rec, err := s.Get("t", "n"+strconv.Itoa(i)); err != nil || rec != nil {
					b.Fatal(rec, err)
				}
			}
		})
	}
	s.filter.cur.Store(withFilter)
	b.Run("scan", func(b *testing.B) { // the rebuild at Open, of 200,000 keys
		for b.Loop() {
			s.filter.startScan(s)
			s.filter.wg.Wait()
		}
		b.ReportMetric(float64(s.filter.live.Load())*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
	})
}

// totalBits is the size of the filter, in bits.
func (f *keyFilter) totalBits() int64 {
	var n int64
	for _, l := range *f.layers.Load() {
		n += int64(len(l.blocks)) * 256
	}
	return n
}
