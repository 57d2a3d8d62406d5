package state

import (
	"reflect"
	"testing"
)

// The auxiliary space commits with the view's batch, never meets the
// other spaces in a scan, and survives a reopen.
func TestAuxSpace(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{CacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	b := s.NewBatch()
	rec := stRec("acme", "k1", 1)
	if err := b.Put(0, nil, rec); err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{"inv/acme\x00k1", "one"}, {"inv/acme\x00k2", "two"}, {"other", "x"}} {
		if err := b.PutAux([]byte(kv[0]), []byte(kv[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.SetCheckpoint("ev", 0, 7); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(Sync); err != nil {
		t.Fatal(err)
	}
	b = s.NewBatch()
	if err := b.DeleteAux([]byte("inv/acme\x00k2")); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteAux([]byte("never-there")); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(Sync); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{CacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.Aux([]byte("inv/acme\x00k1")); err != nil || string(v) != "one" {
		t.Errorf("Aux k1 = %q, %v", v, err)
	}
	if v, err := s.Aux([]byte("inv/acme\x00k2")); err != nil || v != nil {
		t.Errorf("deleted Aux k2 = %q, %v", v, err)
	}
	var got []string
	err = s.ScanAux([]byte("inv/"), 10, func(k, v []byte) error {
		got = append(got, string(k)+"="+string(v))
		return nil
	})
	if err != nil || !reflect.DeepEqual(got, []string{"inv/acme\x00k1=one"}) {
		t.Errorf("ScanAux = %q, %v", got, err)
	}
	if r, err := s.Get("acme", "k1"); err != nil || r == nil {
		t.Errorf("the record next to aux entries: %v, %v", r, err)
	}
	if d, err := s.InDoubt(0, 10); err != nil || len(d) != 1 {
		t.Errorf("doubt index next to aux entries: %v, %v", d, err)
	}
}
