package eventlog_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/state"
)

// The log start moving while a restore runs: after its gap check and
// before its first fetch, or between two fetches. The restore must notice
// (a read never resumes silently at the new start) and decide again: here
// no snapshot round covers the lost events, so it refuses with a gap
// instead of returning a view that lacks a key (a duplicate of it would
// run again).

// TestRestoreNoticesTheLogStartMovedBeforeItsRead: the first fetch finds
// the log start moved past key a's started event after the gap check saw
// none.
func TestRestoreNoticesTheLogStartMovedBeforeItsRead(t *testing.T) {
	e := rsStart(t)
	e.txn(true, rsStarted("a", "i1", 1000)) // offsets 0, marker 1
	e.txn(true, rsStarted("b", "i2", 2000)) // 2, 3
	e.txn(true, rsStarted("c", "i3", 3000)) // 4, 5
	d := e.deleteAtFetch(func(offset int64) bool { return true }, 2)
	st := rsStore(t)
	stats, err := e.tryRestore(st, 0)
	if !d.fired() {
		t.Fatal("no fetch moved the log start: the test did not exercise the fault")
	}
	var ge *eventlog.GapError
	if !errors.As(err, &ge) {
		t.Fatalf("restore = %+v, %v; want a gap (the log start moved past key a)", stats, err)
	}
	if s := rsStatus(t, st, "a"); s != saga.StatusNone {
		t.Fatalf("a is %v in a view the restore refused", s)
	}
}

// TestRestoreNoticesTheLogStartMovedMidRead: one batch a fetch; the log
// start moves past the next batch between two fetches.
func TestRestoreNoticesTheLogStartMovedMidRead(t *testing.T) {
	e := rsStart(t)
	e.txn(true, rsStarted("a", "i1", 1000)) // 0, 1
	e.txn(true, rsStarted("b", "i2", 2000)) // 2, 3
	e.txn(true, rsStarted("c", "i3", 3000)) // 4, 5
	e.txn(true, rsStarted("d", "i4", 4000)) // 6, 7
	d := e.deleteAtFetch(func(offset int64) bool { return offset > 0 }, 4)
	st := rsStore(t)
	stats, err := e.tryRestore(st, 1, kgo.FetchMaxBytes(1), kgo.FetchMaxPartitionBytes(1))
	if !d.fired() {
		t.Fatal("no fetch moved the log start: the test did not exercise the fault")
	}
	var ge *eventlog.GapError
	if !errors.As(err, &ge) {
		t.Fatalf("restore = %+v, %v; want a gap (the log start moved past key b mid-read)", stats, err)
	}
	if s := rsStatus(t, st, "c"); s != saga.StatusNone {
		t.Fatalf("c is %v: the restore folded past the events it lost", s)
	}
}

// TestRestoreBridgesAgainWhenTheLogStartMoves: the same move before the
// first fetch, but a complete snapshot round lies past the new start: the
// restore decides again, begins at the round and keeps key a (restated by
// the round) and key b.
func TestRestoreBridgesAgainWhenTheLogStartMoves(t *testing.T) {
	e := rsStart(t)
	a := rsStarted("a", "i1", 1000)
	e.txn(true, a)                                                                                               // 0, 1
	e.txn(true, saga.Snapshot(saga.Apply(nil, a), 1500), saga.Event{Kind: saga.EvRound, At: 1500, RoundFrom: 2}) // 2, 3, 4
	e.txn(true, rsStarted("b", "i2", 2000))                                                                      // 5, 6
	d := e.deleteAtFetch(func(offset int64) bool { return offset == 0 }, 2)
	st := rsStore(t)
	stats, err := e.tryRestore(st, 0)
	if !d.fired() {
		t.Fatal("no fetch moved the log start: the test did not exercise the fault")
	}
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	if stats.From != 2 || stats.To != 7 {
		t.Fatalf("restore %+v, want from the round (2) to 7", stats)
	}
	for _, k := range []string{"a", "b"} {
		if s := rsStatus(t, st, k); s != saga.StatusStarted {
			t.Errorf("%s is %v after the restore, want started", k, s)
		}
	}
}

// TestReadStopsWhereTheLogStartMoved: Read returns ErrOffsetGone with the
// offset it reached, having applied nothing past it.
func TestReadStopsWhereTheLogStartMoved(t *testing.T) {
	e := rsStart(t)
	e.txn(true, rsStarted("a", "i1", 1000)) // 0, 1
	e.txn(true, rsStarted("b", "i2", 2000)) // 2, 3
	e.deleteAtFetch(func(offset int64) bool { return true }, 2)
	var applied []int64
	next, err := eventlog.Read(context.Background(), e.seeds, rsTopic, 0, 0, e.hwm(), func(off int64, _ *kgo.Record) error {
		applied = append(applied, off)
		return nil
	})
	if !errors.Is(err, eventlog.ErrOffsetGone) || next != 0 || len(applied) != 0 {
		t.Fatalf("Read = %d, %v, applied %v; want ErrOffsetGone at 0, nothing applied", next, err, applied)
	}
}

func (e *rsEnv) tryRestore(st *state.Store, flushEvery int, opts ...kgo.Opt) (eventlog.RestoreStats, error) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return eventlog.RestoreInto(ctx, st, e.adm, 0, eventlog.RestoreOptions{
		Seeds: e.seeds, Topic: rsTopic, SettleWait: 5 * time.Second, FlushEvery: flushEvery, ClientOpts: opts,
		PartitionOf: func(string, string) int32 { return 0 }})
}

// startMover moves the log start once, at the first fetch of the events
// partition whose offset at chooses: the deletion is applied before kfake
// answers that fetch.
type startMover struct {
	mu    sync.Mutex
	moved bool
}

func (m *startMover) fired() bool { m.mu.Lock(); defer m.mu.Unlock(); return m.moved }

func (e *rsEnv) deleteAtFetch(at func(offset int64) bool, below int64) *startMover {
	m := &startMover{}
	e.c.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		e.c.KeepControl()
		offset, ok := fetchOffset(req.(*kmsg.FetchRequest))
		m.mu.Lock()
		if m.moved || !ok || !at(offset) {
			m.mu.Unlock()
			return nil, nil, false
		}
		m.moved = true
		m.mu.Unlock()
		done := make(chan error, 1)
		go func() {
			os := kadm.Offsets{}
			os.Add(kadm.Offset{Topic: rsTopic, Partition: 0, At: below})
			rs, err := e.adm.DeleteRecords(context.Background(), os)
			if err == nil {
				err = rs.Error()
			}
			done <- err
		}()
		var err error
		e.c.SleepControl(func() { err = <-done })
		if err != nil {
			e.t.Errorf("delete records below %d: %v", below, err)
		}
		return nil, nil, false
	})
	return m
}

// fetchOffset is the offset a fetch asks of the events partition, if it
// asks for it.
func fetchOffset(req *kmsg.FetchRequest) (int64, bool) {
	for _, t := range req.Topics {
		if t.Topic != rsTopic && t.Topic != "" {
			continue
		}
		for _, p := range t.Partitions {
			if p.Partition == 0 {
				return p.FetchOffset, true
			}
		}
	}
	return 0, false
}
