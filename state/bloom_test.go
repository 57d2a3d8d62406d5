package state

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"

	"github.com/atmostonce/toolexec/saga"
)

// TestTablesCarryABloomFilterAndMissNothing checks that flushed tables are
// written with the bloom filter (so a new key's lookup skips their data
// blocks) and that every stored key is still found through them: a
// filter that answered "absent" for a present key would make the
// executor call a completed key's tool again.
func TestTablesCarryABloomFilterAndMissNothing(t *testing.T) {
	s := stOpen(t)
	const n = 3000
	for i := 0; i < n; i += 500 {
		var recs []*saga.Record
		for j := i; j < i+500; j++ {
			recs = append(recs, nil, stRec("acme", fmt.Sprintf("order/%d", j), saga.StatusSucceeded))
		}
		stPut(t, s, 0, recs...)
		if err := s.db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	tables, err := s.db.SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	var seen int
	for _, level := range tables {
		for _, tb := range level {
			seen++
			if got, want := tb.Properties.FilterPolicyName, bloom.FilterPolicy(bloomBitsPerKey).Name(); got != want {
				t.Errorf("table %s: filter policy %q, want %q", tb.FileNum, got, want)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no sstables after flushes: the test checks nothing")
	}
	for i := 0; i < n; i++ {
		if r := stGet(t, s, "acme", fmt.Sprintf("order/%d", i)); r == nil {
			t.Fatalf("order/%d stored and flushed, but Get found no record", i)
		}
	}
	for i := n; i < n+1000; i++ {
		if r := stGet(t, s, "acme", fmt.Sprintf("order/%d", i)); r != nil {
			t.Fatalf("order/%d never stored, Get found %+v", i, r)
		}
	}
}
