package state

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/internal/msgpack/mpread"
	"github.com/atmostonce/toolexec/saga"
)

func stOpen(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.TempDir(), Options{CacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func stRec(tenant, key string, st saga.Status) *saga.Record {
	return &saga.Record{
		Tenant: tenant, Key: key, Tool: "pay", ArgsHash: []byte{1, 2, 3}, Args: []byte{0x80}, Status: st,
		Origin: saga.Waiter{IntentID: "i-" + key, ReplyTo: "r", Type: "call", At: 100}, Attempt: 1,
		CalledAt: 100, PendingUntil: 30_100, RetentionMs: 1000, LastEventAt: 100,
	}
}

func stSettled(tenant, key string, st saga.Status, expiresAt int64) *saga.Record {
	r := stRec(tenant, key, st)
	r.CompletedAt, r.ExpiresAt, r.OriginAnswered = expiresAt-r.RetentionMs, expiresAt, true
	if st == saga.StatusSucceeded {
		r.Result = []byte{0xa2, 'o', 'k'}
	} else {
		r.Err = &saga.Error{Code: "x", Message: "y"}
	}
	return r
}

// stPut commits one batch with the given (prev, rec) pairs of partition p.
func stPut(t *testing.T, s *Store, p int32, pairs ...*saga.Record) {
	t.Helper()
	if len(pairs)%2 != 0 {
		t.Fatal("stPut takes (prev, rec) pairs")
	}
	b := s.NewBatch()
	for i := 0; i < len(pairs); i += 2 {
		if err := b.Put(p, pairs[i], pairs[i+1]); err != nil {
			b.Discard()
			t.Fatal(err)
		}
	}
	if err := b.Commit(Sync); err != nil {
		t.Fatal(err)
	}
}

func stGet(t *testing.T, s *Store, tenant, key string) *saga.Record {
	t.Helper()
	r, err := s.Get(tenant, key)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func stExpired(t *testing.T, s *Store, now int64) [][2]string {
	t.Helper()
	e, err := s.Expired(now, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func stDoubt(t *testing.T, s *Store, p int32) []Doubt {
	t.Helper()
	d, err := s.InDoubt(p, 1000)
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.CountInDoubt(p)
	if err != nil || n != len(d) {
		t.Fatalf("CountInDoubt = %d, %v; InDoubt lists %d", n, err, len(d))
	}
	return d
}

func TestStorePutGetRoundTrip(t *testing.T) {
	s := stOpen(t)
	full := stSettled("acme", "order/42", saga.StatusSucceeded, 5000)
	full.Waiters = []saga.Waiter{{IntentID: "w1", At: 1}, {IntentID: "w2", ReplyTo: "x"}}
	full.Comp = &saga.Compensation{Tool: "refund", Origin: saga.Waiter{IntentID: "c1"}, StartedAt: 7, PrevStatus: saga.StatusSucceeded, Err: &saga.Error{Code: "e"}}
	full.ResolvedBy, full.PrevStatus, full.Attempt = "ops", saga.StatusNotExecuted, 2
	// Keys that look like separators must not confuse the layout.
	weird := stRec("t", "a\x00b/c", saga.StatusStarted)
	other := stRec("acme2", "order/42", saga.StatusFailed)
	stPut(t, s, 0, nil, full, nil, weird, nil, other)

	for _, want := range []*saga.Record{full, weird, other} {
		got := stGet(t, s, want.Tenant, want.Key)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Get(%q, %q):\n got %+v\nwant %+v", want.Tenant, want.Key, got, want)
		}
	}
	if r := stGet(t, s, "acme", "missing"); r != nil {
		t.Errorf("missing key: %+v", r)
	}
	if r := stGet(t, s, "acm", "e\x00order/42"); r != nil {
		t.Errorf("tenant/key boundary leaked: %+v", r)
	}
}

func TestStoreRejectsInvalidRecords(t *testing.T) {
	s := stOpen(t)
	bad := map[string]*saga.Record{
		"no tenant":      {Key: "k", Status: saga.StatusStarted, Origin: saga.Waiter{IntentID: "i"}},
		"no key":         {Tenant: "t", Status: saga.StatusStarted, Origin: saga.Waiter{IntentID: "i"}},
		"status none":    {Tenant: "t", Key: "k", Origin: saga.Waiter{IntentID: "i"}},
		"status invalid": {Tenant: "t", Key: "k", Status: 99, Origin: saga.Waiter{IntentID: "i"}},
		"no origin":      {Tenant: "t", Key: "k", Status: saga.StatusStarted},
	}
	for name, r := range bad {
		b := s.NewBatch()
		if err := b.Put(0, nil, r); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Put err %v, want ErrCorrupt", name, err)
		}
		b.Discard()
	}
}

func TestStoreNilPutDeletes(t *testing.T) {
	s := stOpen(t)
	r := stRec("t", "k", saga.StatusStarted)
	stPut(t, s, 1, nil, r)
	if stGet(t, s, "t", "k") == nil || len(stDoubt(t, s, 1)) != 1 {
		t.Fatal("record not stored")
	}
	stPut(t, s, 1, r, nil)
	if got := stGet(t, s, "t", "k"); got != nil {
		t.Errorf("after nil Put: %+v", got)
	}
	if d := stDoubt(t, s, 1); len(d) != 0 {
		t.Errorf("doubt index kept %v", d)
	}
	// Deleting what was never there is a no-op.
	stPut(t, s, 1, nil, nil)

	settled := stSettled("t", "k2", saga.StatusSucceeded, 500)
	stPut(t, s, 1, nil, settled)
	stPut(t, s, 1, settled, nil)
	if e := stExpired(t, s, 1<<40); len(e) != 0 {
		t.Errorf("expiry index kept %v", e)
	}
}

func TestStoreExpiryIndex(t *testing.T) {
	s := stOpen(t)
	a := stSettled("t", "a", saga.StatusSucceeded, 1000)
	b := stSettled("t", "b", saga.StatusFailed, 3000)
	ne := stSettled("t", "ne", saga.StatusNotExecuted, 2000)
	comp := stSettled("t", "comp", saga.StatusCompensated, 2500)
	started := stRec("t", "started", saga.StatusStarted)
	started.ExpiresAt = 10 // never indexed: a key in doubt does not expire
	unknown := stRec("t", "unknown", saga.StatusUnknown)
	unknown.ExpiresAt = 10
	stPut(t, s, 0, nil, a, nil, b, nil, ne, nil, comp, nil, started, nil, unknown)

	cases := []struct {
		now  int64
		want [][2]string
	}{
		{0, nil},
		{999, nil},
		{1000, [][2]string{{"t", "a"}}},
		{1999, [][2]string{{"t", "a"}}},
		{2000, [][2]string{{"t", "a"}, {"t", "ne"}}},
		{2500, [][2]string{{"t", "a"}, {"t", "ne"}, {"t", "comp"}}},
		{1 << 50, [][2]string{{"t", "a"}, {"t", "ne"}, {"t", "comp"}, {"t", "b"}}},
	}
	for _, c := range cases {
		if got := stExpired(t, s, c.now); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Expired(%d) = %v, want %v", c.now, got, c.want)
		}
	}
	if got, err := s.Expired(1<<50, 2); err != nil || len(got) != 2 {
		t.Errorf("limit 2: %v %v", got, err)
	}

	// Replaced by a newer outcome: the old expiry entry goes, the new one
	// is there once.
	a2 := stSettled("t", "a", saga.StatusSucceeded, 4000)
	stPut(t, s, 0, a, a2)
	if got := stExpired(t, s, 3999); !reflect.DeepEqual(got, [][2]string{{"t", "ne"}, {"t", "comp"}, {"t", "b"}}) {
		t.Errorf("after replace, Expired(3999) = %v", got)
	}
	if got := stExpired(t, s, 4000); len(got) != 4 {
		t.Errorf("after replace, Expired(4000) = %v", got)
	}
	// Replaced by a new call (started): not indexed any more.
	a3 := stRec("t", "a", saga.StatusStarted)
	stPut(t, s, 0, a2, a3)
	for _, e := range stExpired(t, s, 1<<50) {
		if e[1] == "a" {
			t.Errorf("started record still in the expiry index")
		}
	}
	// Deleted (expired).
	stPut(t, s, 0, b, nil)
	if got := stExpired(t, s, 1<<50); !reflect.DeepEqual(got, [][2]string{{"t", "ne"}, {"t", "comp"}}) {
		t.Errorf("after delete: %v", got)
	}
}

func TestStoreDoubtIndex(t *testing.T) {
	s := stOpen(t)
	started := stRec("t", "s", saga.StatusStarted)
	unknown := stRec("t", "u", saga.StatusUnknown)
	unknown.PendingUntil = 777
	compensating := stRec("t", "c", saga.StatusCompensating)
	settled := stSettled("t", "done", saga.StatusSucceeded, 100)
	stPut(t, s, 3, nil, started, nil, unknown, nil, compensating, nil, settled)
	other := stRec("t", "other", saga.StatusStarted)
	stPut(t, s, 4, nil, other)

	got := stDoubt(t, s, 3)
	want := []Doubt{{Tenant: "t", Key: "c", PendingUntil: 30_100}, {Tenant: "t", Key: "s", PendingUntil: 30_100}, {Tenant: "t", Key: "u", PendingUntil: 777}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("InDoubt(3) = %+v, want %+v", got, want)
	}
	if d := stDoubt(t, s, 4); len(d) != 1 || d[0].Key != "other" {
		t.Errorf("InDoubt(4) = %+v", d)
	}
	if d := stDoubt(t, s, 5); len(d) != 0 {
		t.Errorf("InDoubt(5) = %+v", d)
	}
	if d, _ := s.InDoubt(3, 2); len(d) != 2 {
		t.Errorf("limit 2 gave %d", len(d))
	}

	// Settling leaves the index; falling into doubt (unknown) stays.
	s2 := stSettled("t", "s", saga.StatusSucceeded, 9000)
	u2 := unknown.Clone()
	u2.Status = saga.StatusFailed
	u2.ExpiresAt = 9000
	c2 := compensating.Clone()
	c2.Status = saga.StatusCompensationUnknown
	c2.PendingUntil = 55
	stPut(t, s, 3, started, s2, unknown, u2, compensating, c2)
	if got := stDoubt(t, s, 3); !reflect.DeepEqual(got, []Doubt{{Tenant: "t", Key: "c", PendingUntil: 55}}) {
		t.Errorf("after settling: %+v", got)
	}
	if got := stExpired(t, s, 9000); len(got) != 3 { // done, s, u
		t.Errorf("settled keys not in the expiry index: %v", got)
	}
}

// Partition numbers are big-endian: partition 1's prefix must not cover
// partition 256 and so on.
func TestStoreDoubtPartitionsAreDisjoint(t *testing.T) {
	s := stOpen(t)
	for _, p := range []int32{0, 1, 255, 256, 257, 65536, 1<<31 - 1} {
		stPut(t, s, p, nil, stRec("t", fmt.Sprintf("p%d", p), saga.StatusStarted))
	}
	for _, p := range []int32{0, 1, 255, 256, 257, 65536, 1<<31 - 1} {
		d := stDoubt(t, s, p)
		if len(d) != 1 || d[0].Key != fmt.Sprintf("p%d", p) {
			t.Errorf("InDoubt(%d) = %+v", p, d)
		}
	}
}

func TestStoreCheckpoints(t *testing.T) {
	s := stOpen(t)
	if c, err := s.Checkpoint("ev", 0); err != nil || c != 0 {
		t.Fatalf("fresh checkpoint = %d, %v", c, err)
	}
	set := map[string]int64{}
	b := s.NewBatch()
	for _, topic := range []string{"ev", "ev2", "e"} {
		for _, p := range []int32{0, 1, 256} {
			v := int64(len(topic))*1000 + int64(p)
			set[fmt.Sprintf("%s/%d", topic, p)] = v
			if err := b.SetCheckpoint(topic, p, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Commit(Sync); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"ev", "ev2", "e"} {
		for _, p := range []int32{0, 1, 256} {
			c, err := s.Checkpoint(topic, p)
			if want := set[fmt.Sprintf("%s/%d", topic, p)]; err != nil || c != want {
				t.Errorf("Checkpoint(%s, %d) = %d, %v; want %d", topic, p, c, err, want)
			}
		}
	}
	b = s.NewBatch()
	if err := b.SetCheckpoint("ev", 1, 1<<40); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(NoSync); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Checkpoint("ev", 1); c != 1<<40 {
		t.Errorf("overwritten checkpoint = %d", c)
	}
	if c, _ := s.Checkpoint("ev", 2); c != 0 {
		t.Errorf("unset partition = %d", c)
	}
	// A discarded batch changes nothing.
	b = s.NewBatch()
	_ = b.SetCheckpoint("ev", 1, 5)
	_ = b.Put(1, nil, stRec("t", "discarded", saga.StatusStarted))
	if b.Len() == 0 {
		t.Error("Len of a non-empty batch is 0")
	}
	b.Discard()
	if c, _ := s.Checkpoint("ev", 1); c != 1<<40 {
		t.Errorf("discarded batch applied: %d", c)
	}
	if r := stGet(t, s, "t", "discarded"); r != nil {
		t.Error("discarded record applied")
	}
}

// The checkpoint rides in the same batch as the records: after a crash the
// view has either all of a batch or none of it, and a synced batch
// survives.
func TestStoreBatchAtomicAcrossCrash(t *testing.T) {
	fs := vfs.NewStrictMem()
	// The data directory exists before the store (its own creation is not
	// what this test is about): make it and sync its parent.
	if err := fs.MkdirAll("db", 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := fs.OpenDir("")
	if err != nil {
		t.Fatal(err)
	}
	if err := root.Sync(); err != nil {
		t.Fatal(err)
	}
	_ = root.Close()
	open := func() *Store {
		s, err := Open("db", Options{FS: fs, CacheBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	write := func(s *Store, prefix string, n int, checkpoint int64, d Durability) {
		b := s.NewBatch()
		for i := range n {
			r := stRec("t", fmt.Sprintf("%s-%03d", prefix, i), saga.StatusStarted)
			if err := b.Put(0, nil, r); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.SetCheckpoint("ev", 0, checkpoint); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(d); err != nil {
			t.Fatal(err)
		}
	}
	count := func(s *Store, prefix string, n int) int {
		c := 0
		for i := range n {
			if stGet(t, s, "t", fmt.Sprintf("%s-%03d", prefix, i)) != nil {
				c++
			}
		}
		return c
	}

	s := open()
	write(s, "synced", 50, 50, Sync)
	write(s, "early", 20, 70, NoSync) // followed by a synced batch: durable too
	write(s, "later", 30, 100, Sync)  // its WAL sync covers "early"
	write(s, "unsynced", 200, 300, NoSync)
	if got := count(s, "unsynced", 200); got != 200 {
		t.Fatalf("before the crash only %d of 200 unsynced records are visible", got)
	}
	if c, _ := s.Checkpoint("ev", 0); c != 300 {
		t.Fatalf("checkpoint before the crash = %d", c)
	}

	// Crash: drop everything not synced. Close must not sync on its way out.
	fs.SetIgnoreSyncs(true)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	fs.ResetToSyncedState()
	fs.SetIgnoreSyncs(false)

	s = open()
	defer s.Close()
	for _, c := range []struct {
		prefix  string
		n, want int
	}{{"synced", 50, 50}, {"early", 20, 20}, {"later", 30, 30}, {"unsynced", 200, 0}} {
		if got := count(s, c.prefix, c.n); got != c.want {
			t.Errorf("%s: %d of %d records after the crash, want %d", c.prefix, got, c.n, c.want)
		}
	}
	if c, err := s.Checkpoint("ev", 0); err != nil || c != 100 {
		t.Errorf("checkpoint after the crash = %d, %v; want 100 (the last synced batch)", c, err)
	}
	if n, _ := s.CountInDoubt(0); n != 100 {
		t.Errorf("doubt index after the crash has %d keys, want 100 (50+20+30)", n)
	}
}

// A value that fails the read-side check is reported, never returned.
func TestStoreCorruptValues(t *testing.T) {
	s := stOpen(t)
	valid, err := marshalRecord(stRec("t", "elsewhere", saga.StatusStarted))
	if err != nil {
		t.Fatal(err)
	}
	noOrigin := stRec("t", "k", saga.StatusStarted)
	noOrigin.Origin = saga.Waiter{}
	noOriginBytes, err := msgpack.Marshal(noOrigin)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"garbage":             {0xc1, 0x00, 0xff},
		"empty":               {},
		"truncated":           valid[:len(valid)/2],
		"a string":            {0xa3, 'a', 'b', 'c'},
		"another key's value": valid,
		"no origin":           noOriginBytes,
	}
	for name, v := range cases {
		if err := s.setRaw(recordKey("t", "k"), v); err != nil {
			t.Fatal(err)
		}
		r, err := s.Get("t", "k")
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Get = %+v, %v; want ErrCorrupt", name, r, err)
		}
		if r != nil {
			t.Errorf("%s: a corrupt record was returned", name)
		}
	}
	// A checkpoint of the wrong size.
	if err := s.db.Set(checkpointKey("ev", 0), []byte{1, 2, 3}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Checkpoint("ev", 0); !errors.Is(err, ErrCorrupt) {
		t.Errorf("short checkpoint: %v", err)
	}
	// An index key without the tenant separator.
	if err := s.db.Set(append(doubtPrefix(9), "no-separator"...), nil, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if _, err := s.InDoubt(9, 10); !errors.Is(err, ErrCorrupt) {
		t.Errorf("bad doubt key: %v", err)
	}
	if err := s.db.Set(append(expiryKey(5, "", "")[:9], "no-separator"...), nil, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Expired(10, 10); !errors.Is(err, ErrCorrupt) {
		t.Errorf("bad expiry key: %v", err)
	}
}

// ErrClosed says it "is returned after Close", but every read or write on
// a closed store reaches pebble, which panics with "pebble: closed".
func TestStoreClosedReturnsErrClosed(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("t", "k"); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close: %v", err)
	}
	if _, err := s.Checkpoint("ev", 0); !errors.Is(err, ErrClosed) {
		t.Errorf("Checkpoint after Close: %v", err)
	}
	if _, err := s.InDoubt(0, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("InDoubt after Close: %v", err)
	}
}

func TestPrefixEnd(t *testing.T) {
	cases := []struct{ in, want []byte }{
		{[]byte{'d', 0, 0, 0, 1}, []byte{'d', 0, 0, 0, 2}},
		{[]byte{'d', 0, 0, 0, 0xff}, []byte{'d', 0, 0, 1}},
		{[]byte{'d', 0xff, 0xff, 0xff, 0xff}, []byte{'e'}},
		{[]byte{0xff, 0xff}, nil},
	}
	for _, c := range cases {
		if got := prefixEnd(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("prefixEnd(%x) = %x, want %x", c.in, got, c.want)
		}
	}
}

// TestDecodeRecordRefusesAHeaderLargerThanItsBytes: a stored record whose
// waiters declare 2^31 elements in 5 bytes is corrupt, not a fatal out of
// memory in the reflective decoder.
func TestDecodeRecordRefusesAHeaderLargerThanItsBytes(t *testing.T) {
	b := []byte("\x82\xa6tenant\xa1t\xa7waiters\xdd\x7f\xff\xff\xff")
	if _, err := decodeRecord(b, "t", "k"); !errors.Is(err, ErrCorrupt) || !errors.Is(err, mpread.ErrShape) {
		t.Fatalf("%v, want ErrCorrupt wrapping the shape refusal", err)
	}
}
