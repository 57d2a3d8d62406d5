package state

import (
	"fmt"
	"testing"

	"github.com/atmostonce/toolexec/saga"
)

// Paging with InDoubtAfter from the last key of each page lists every key
// in doubt of the partition once, in index order; a key that sorts between
// two others (a prefix of one, or one holding 0x00) is not skipped.
func TestStoreInDoubtAfterPages(t *testing.T) {
	s := stOpen(t)
	keys := [][2]string{{"a", "k"}, {"a", "k\x00"}, {"a", "k\x00x"}, {"a", "ka"}, {"ab", "a"}, {"b", "z"}}
	for _, k := range keys {
		stPut(t, s, 7, nil, stRec(k[0], k[1], saga.StatusUnknown))
	}
	stPut(t, s, 8, nil, stRec("a", "other-partition", saga.StatusUnknown))
	var got [][2]string
	tenant, key := "", ""
	for {
		page, err := s.InDoubtAfter(7, tenant, key, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range page {
			got = append(got, [2]string{d.Tenant, d.Key})
			tenant, key = d.Tenant, d.Key
		}
		if len(page) < 2 {
			break
		}
	}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", keys) {
		t.Fatalf("paged %q, want %q", got, keys)
	}
	if d, err := s.InDoubtAfter(7, "a", "ka", 10); err != nil || len(d) != 2 || d[0].Tenant != "ab" {
		t.Fatalf("after a/ka: %+v, %v", d, err)
	}
	if d, err := s.InDoubtAfter(7, "b", "z", 10); err != nil || len(d) != 0 {
		t.Fatalf("after the last key: %+v, %v", d, err)
	}
}
