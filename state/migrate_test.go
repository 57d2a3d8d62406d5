package state

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	pebblev1 "github.com/cockroachdb/pebble"
	bloomv1 "github.com/cockroachdb/pebble/bloom"
	vfsv1 "github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/atmostonce/toolexec/saga"
)

// A data directory written by the Pebble v1 build opens under this build
// with every key and value as it was: records (in doubt, settled, deleted),
// their indexes, checkpoints and the auxiliary space, from sstables and
// from the log alike. FormatMostCompatible is what the v1 build wrote (its
// default); the other formats are the steps a crash may leave a store at
// midway through the upgrade, and the formats v2 opens without one.
func TestOpenUpgradesAStoreWrittenByPebbleV1(t *testing.T) {
	if uint64(v1UpgradeTarget) != uint64(pebble.FormatMinSupported) {
		t.Fatalf("v1UpgradeTarget is format %d, Pebble v2 opens %d and newer", v1UpgradeTarget, pebble.FormatMinSupported)
	}
	h := newV1History(t)
	for _, f := range []pebblev1.FormatMajorVersion{
		pebblev1.FormatMostCompatible, pebblev1.FormatVersioned, pebblev1.FormatPrePebblev1Marked,
		pebblev1.FormatSSTableValueBlocks, v1UpgradeTarget, pebblev1.FormatNewest,
	} {
		t.Run(fmt.Sprintf("format-%d", f), func(t *testing.T) {
			dir := t.TempDir()
			writeV1Store(t, dir, f, h.batches)
			for range 2 { // the upgrade, then an ordinary open
				s, err := Open(dir, Options{CacheBytes: 1 << 20})
				if err != nil {
					t.Fatal(err)
				}
				if got := s.db.FormatMajorVersion(); got != formatVersion {
					t.Errorf("format %d after open, want %d", got, formatVersion)
				}
				h.check(t, s)
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// v1History is a store's history as batches in Pebble's batch encoding
// (the log's, the same in v1 and v2), built with this package's Batch, and
// what a store holds after it.
type v1History struct {
	batches [][]byte
	want    []kv                    // every key and value, in order
	records map[string]*saga.Record // by key: the last version, nil if deleted
}

type kv struct{ k, v []byte }

func newV1History(t *testing.T) *v1History {
	t.Helper()
	s, err := Open("db", Options{FS: vfs.NewMem(), CacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := &v1History{records: map[string]*saga.Record{}}
	commit := func(fill func(b *Batch)) {
		b := s.NewBatch()
		fill(b)
		h.batches = append(h.batches, bytes.Clone(b.b.Repr()))
		if err := b.Commit(Sync); err != nil {
			t.Fatal(err)
		}
	}
	put := func(b *Batch, prev, rec *saga.Record) {
		r := rec
		if r == nil {
			r = prev
		}
		if err := b.Put(int32(len(h.records)%4), prev, rec); err != nil {
			t.Fatal(err)
		}
		h.records[r.Key] = rec
	}
	started := map[int]*saga.Record{}
	commit(func(b *Batch) {
		for i := range 600 {
			started[i] = stRec("t", fmt.Sprintf("k%04d", i), saga.StatusStarted)
			put(b, nil, started[i])
		}
		mustNoErr(t, b.SetCheckpoint("events", 0, 600))
		mustNoErr(t, b.PutAux([]byte(AuxInvestigations+"t\x00k0001"), []byte("inv")))
	})
	commit(func(b *Batch) {
		for i := range 300 {
			put(b, started[i], stSettled("t", started[i].Key, saga.StatusSucceeded, 5_000+int64(i)))
		}
		mustNoErr(t, b.SetCheckpoint("events", 1, 300))
		mustNoErr(t, b.PutAux([]byte(AuxAbortedTxns+"12345678"), []byte{1}))
	})
	// writeV1Store flushes here: the batches above reach sstables, the
	// ones below only the log.
	commit(func(b *Batch) {
		for i := 300; i < 350; i++ {
			put(b, started[i], nil)
		}
		for i := range 200 {
			put(b, nil, stSettled("u", fmt.Sprintf("n%04d", i), saga.StatusNotExecuted, 9_000))
		}
		mustNoErr(t, b.SetCheckpoint("events", 0, 900))
		mustNoErr(t, b.DeleteAux([]byte(AuxInvestigations+"t\x00k0001")))
	})
	h.want = dumpStore(t, s)
	return h
}

// v1FlushAfter is the number of batches writeV1Store applies before it
// flushes the memtable to sstables.
const v1FlushAfter = 2

// writeV1Store writes the batches into dir with Pebble v1 and the options
// the v1 build opened its store with, at format f, then closes it.
func writeV1Store(t *testing.T, dir string, f pebblev1.FormatMajorVersion, batches [][]byte) {
	t.Helper()
	cache := pebblev1.NewCache(1 << 20)
	defer cache.Unref()
	db, err := pebblev1.Open(dir, &pebblev1.Options{
		Cache:              cache,
		MemTableSize:       16 << 20,
		Levels:             []pebblev1.LevelOptions{{FilterPolicy: bloomv1.FilterPolicy(bloomBitsPerKey), FilterType: pebblev1.TableFilter}},
		Logger:             quietLogger{},
		FormatMajorVersion: f,
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, repr := range batches {
		b := db.NewBatch()
		mustNoErr(t, b.SetRepr(bytes.Clone(repr)))
		mustNoErr(t, db.Apply(b, pebblev1.Sync))
		if i+1 == v1FlushAfter {
			mustNoErr(t, db.Flush())
		}
	}
	mustNoErr(t, db.Close())
	d, err := pebblev1.Peek(dir, vfsv1.Default)
	if err != nil || !d.Exists || d.FormatMajorVersion != f {
		t.Fatalf("Pebble v1 wrote %+v, %v; want format %d", d, err, f)
	}
}

// check compares the store with the history: every key and value, and
// every record through Get.
func (h *v1History) check(t *testing.T, s *Store) {
	t.Helper()
	if got := dumpStore(t, s); !reflect.DeepEqual(got, h.want) {
		t.Fatalf("the store holds %d keys, the history %d (or they differ)", len(got), len(h.want))
	}
	for key, want := range h.records {
		tenant := "t"
		if want != nil {
			tenant = want.Tenant
		}
		if got := stGet(t, s, tenant, key); !reflect.DeepEqual(got, want) {
			t.Fatalf("record %s/%s = %+v, want %+v", tenant, key, got, want)
		}
	}
}

func dumpStore(t *testing.T, s *Store) []kv {
	t.Helper()
	it, err := s.db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []kv
	for valid := it.First(); valid; valid = it.Next() {
		out = append(out, kv{bytes.Clone(it.Key()), bytes.Clone(it.Value())})
	}
	mustNoErr(t, it.Error())
	return out
}

func mustNoErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
