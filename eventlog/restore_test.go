package eventlog_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/state"
	"github.com/atmostonce/toolexec/topics"
)

const rsTopic = "ev"

type rsEnv struct {
	t     *testing.T
	c     *kfake.Cluster
	seeds []string
	adm   *kadm.Client
	prod  *kgo.Client
}

func rsStart(t *testing.T) *rsEnv {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, rsTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	seeds := c.ListenAddrs()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admCl.Close)
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID("executor-p0"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	return &rsEnv{t: t, c: c, seeds: seeds, adm: kadm.NewClient(admCl), prod: prod}
}

// begin opens a transaction and produces evs into partition 0.
func (e *rsEnv) begin(evs ...saga.Event) {
	e.t.Helper()
	if err := e.prod.BeginTransaction(); err != nil {
		e.t.Fatal(err)
	}
	names := topics.Names{Events: rsTopic}
	for _, ev := range evs {
		b, err := eventlog.Encode(&ev)
		if err != nil {
			e.t.Fatal(err)
		}
		r := eventlog.EncodeRecord(names, 0, b, ev.Tenant, ev.Key, "00-trace")
		if err := e.prod.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *rsEnv) end(commit bool) {
	e.t.Helper()
	how := kgo.TryAbort
	if commit {
		how = kgo.TryCommit
	}
	if err := e.prod.EndTransaction(context.Background(), how); err != nil {
		e.t.Fatal(err)
	}
}

func (e *rsEnv) txn(commit bool, evs ...saga.Event) {
	e.t.Helper()
	e.begin(evs...)
	e.end(commit)
}

func (e *rsEnv) hwm() int64 {
	e.t.Helper()
	offs, err := e.adm.ListEndOffsets(context.Background(), rsTopic)
	if err != nil {
		e.t.Fatal(err)
	}
	o, _ := offs.Lookup(rsTopic, 0)
	return o.Offset
}

func (e *rsEnv) restore(st *state.Store, flushEvery int) eventlog.RestoreStats {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stats, err := eventlog.RestoreInto(ctx, st, e.adm, 0, eventlog.RestoreOptions{
		Seeds: e.seeds, Topic: rsTopic, SettleWait: 5 * time.Second, FlushEvery: flushEvery})
	if err != nil {
		e.t.Fatal(err)
	}
	return stats
}

func rsStore(t *testing.T) *state.Store {
	t.Helper()
	st, err := state.Open(t.TempDir(), state.Options{CacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func rsStarted(key, intent string, at int64) saga.Event {
	return saga.Event{Kind: saga.EvStarted, Tenant: "acme", Key: key, At: at, IntentID: intent, Tool: "pay",
		ArgsHash: []byte{0xaa}, Args: []byte{0x80}, PendingTTL: 30_000, RetentionMs: 60_000, Attempt: 1,
		Waiter: &saga.Waiter{IntentID: intent, ReplyTo: "answers", Type: "call", At: at}}
}

func rsOutcome(key, call string, st saga.Status, at int64) saga.Event {
	return saga.Event{Kind: saga.EvOutcome, Tenant: "acme", Key: key, At: at, IntentID: call, CallID: call, Status: st, Result: []byte{0xc3}}
}

func rsWaiting(key, intent string, at int64) saga.Event {
	return saga.Event{Kind: saga.EvWaiting, Tenant: "acme", Key: key, At: at, IntentID: intent, Waiter: &saga.Waiter{IntentID: intent, At: at}}
}

func rsGet(t *testing.T, st *state.Store, key string) *saga.Record {
	t.Helper()
	r, err := st.Get("acme", key)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func rsStatus(t *testing.T, st *state.Store, key string) saga.Status {
	t.Helper()
	if r := rsGet(t, st, key); r != nil {
		return r.Status
	}
	return saga.StatusNone
}

func rsDoubtKeys(t *testing.T, st *state.Store) []string {
	t.Helper()
	d, err := st.InDoubt(0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, x := range d {
		keys = append(keys, x.Key)
	}
	return keys
}

func TestRestoreFoldsCommittedEventsOnly(t *testing.T) {
	e := rsStart(t)
	// Committed: k1 started and succeeded, k2 only started.
	e.txn(true, rsStarted("k1", "i1", 1000), rsOutcome("k1", "i1", saga.StatusSucceeded, 2000), rsStarted("k2", "i2", 1500))
	// Aborted: must never be folded (k3 never existed, k2 never settled).
	e.txn(false, rsStarted("k3", "i3", 3000), rsOutcome("k2", "i2", saga.StatusSucceeded, 3000))
	// Committed: k4 failed, a duplicate of k2 waits.
	e.txn(true, rsStarted("k4", "i4", 4000), rsOutcome("k4", "i4", saga.StatusFailed, 4500), rsWaiting("k2", "dup-2", 4600))
	// Aborted at the tail: the read must still reach the end (the abort
	// marker is its last record).
	e.txn(false, rsStarted("k5", "i5", 5000))

	st := rsStore(t)
	hwm := e.hwm()
	stats := e.restore(st, 0)
	if stats.Events != 6 {
		t.Errorf("folded %d events, want 6 (the committed ones)", stats.Events)
	}
	if stats.From != 0 || stats.To != hwm {
		t.Errorf("restored %d..%d, want 0..%d", stats.From, stats.To, hwm)
	}
	if c, _ := st.Checkpoint(rsTopic, 0); c != hwm {
		t.Errorf("checkpoint %d, want %d", c, hwm)
	}
	k1 := rsGet(t, st, "k1")
	if k1 == nil || k1.Status != saga.StatusSucceeded || k1.ExpiresAt != 2000+60_000 || k1.Origin.IntentID != "i1" {
		t.Errorf("k1 = %+v", k1)
	}
	k2 := rsGet(t, st, "k2")
	if k2 == nil || k2.Status != saga.StatusStarted || len(k2.Waiters) != 1 || k2.Waiters[0].IntentID != "dup-2" || k2.PendingUntil != 1500+30_000 {
		t.Errorf("k2 = %+v", k2)
	}
	if s := rsStatus(t, st, "k3"); s != saga.StatusNone {
		t.Errorf("k3 from an aborted transaction is %s", s)
	}
	if s := rsStatus(t, st, "k4"); s != saga.StatusFailed {
		t.Errorf("k4 is %s", s)
	}
	if s := rsStatus(t, st, "k5"); s != saga.StatusNone {
		t.Errorf("k5 from the aborted tail is %s", s)
	}
	if d := rsDoubtKeys(t, st); !reflect.DeepEqual(d, []string{"k2"}) {
		t.Errorf("in doubt: %v, want [k2]", d)
	}
	if ex, _ := st.Expired(1<<50, 100); len(ex) != 2 {
		t.Errorf("expiry index: %v, want k1 and k4", ex)
	}

	// More events: the next restore starts at the checkpoint and folds
	// only them.
	e.txn(true, rsOutcome("k2", "i2", saga.StatusSucceeded, 6000), rsStarted("k6", "i6", 6100),
		rsStarted("k7", "i7", 6200), rsOutcome("k7", "i7", saga.StatusSucceeded, 6300),
		saga.Event{Kind: saga.EvExpired, Tenant: "acme", Key: "k7", At: 6400, Reason: "retention passed"})
	e.txn(false, rsOutcome("k6", "i6", saga.StatusFailed, 7000))
	hwm2 := e.hwm()
	stats = e.restore(st, 0)
	if stats.Events != 5 || stats.From != hwm || stats.To != hwm2 {
		t.Errorf("second restore: %+v, want 5 events from %d to %d", stats, hwm, hwm2)
	}
	k2 = rsGet(t, st, "k2")
	if k2 == nil || k2.Status != saga.StatusSucceeded || k2.Waiters != nil || !k2.OriginAnswered {
		t.Errorf("k2 after the outcome = %+v", k2)
	}
	if r := rsGet(t, st, "k7"); r != nil {
		t.Errorf("expired k7 still stored: %+v", r)
	}
	if d := rsDoubtKeys(t, st); !reflect.DeepEqual(d, []string{"k6"}) {
		t.Errorf("in doubt: %v, want [k6]", d)
	}

	// Nothing new: nothing folded, the checkpoint stays.
	stats = e.restore(st, 0)
	if stats.Events != 0 || stats.From != hwm2 || stats.To != hwm2 {
		t.Errorf("idle restore: %+v", stats)
	}

	// The view is a pure fold: rebuilt from scratch, in small intermediate
	// batches or one, it is the same.
	for _, every := range []int{1, 2, 3, 0} {
		fresh := rsStore(t)
		stats := e.restore(fresh, every)
		if stats.Events != 11 || stats.To != hwm2 {
			t.Errorf("flush every %d: %+v", every, stats)
		}
		for _, k := range []string{"k1", "k2", "k3", "k4", "k5", "k6", "k7"} {
			if a, b := rsGet(t, st, k), rsGet(t, fresh, k); !reflect.DeepEqual(a, b) {
				t.Errorf("flush every %d: %s = %+v, incremental restore has %+v", every, k, b, a)
			}
		}
		if d := rsDoubtKeys(t, fresh); !reflect.DeepEqual(d, []string{"k6"}) {
			t.Errorf("flush every %d: in doubt %v", every, d)
		}
		a, _ := st.Expired(1<<50, 100)
		b, _ := fresh.Expired(1<<50, 100)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("flush every %d: expiry index %v, incremental restore has %v", every, b, a)
		}
	}
}

// A bad event stops the restore where it is, with its offset: skipping it
// could lose a started fence.
func TestRestoreStopsAtABadEvent(t *testing.T) {
	e := rsStart(t)
	e.txn(true, rsStarted("k1", "i1", 1000))
	badOffset := e.hwm() // after the event and its commit marker
	if err := e.prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	bad := &kgo.Record{Topic: rsTopic, Partition: 0, Key: []byte("acme/k1"), Value: []byte{0xc1}}
	if err := e.prod.ProduceSync(context.Background(), bad).FirstErr(); err != nil {
		t.Fatal(err)
	}
	e.end(true)
	st := rsStore(t)
	_, err := eventlog.RestoreInto(context.Background(), st, e.adm, 0, eventlog.RestoreOptions{Seeds: e.seeds, Topic: rsTopic, SettleWait: 5 * time.Second})
	if !errors.Is(err, eventlog.ErrBadEvent) || !strings.Contains(err.Error(), fmt.Sprintf("offset %d", badOffset)) {
		t.Errorf("err %v, want ErrBadEvent at offset %d", err, badOffset)
	}
	if c, _ := st.Checkpoint(rsTopic, 0); c != 0 {
		t.Errorf("checkpoint moved to %d past a bad event", c)
	}
}

// Target waits for a transaction that is open when it is called, so a
// new owner never misses the previous owner's last commit.
func TestTargetWaitsForOpenTransaction(t *testing.T) {
	e := rsStart(t)
	e.txn(true, rsStarted("k0", "i0", 500))
	e.begin(rsStarted("k1", "i1", 1000), rsOutcome("k1", "i1", saga.StatusSucceeded, 1100), rsStarted("k2", "i2", 1200))
	openHWM := e.hwm()

	type res struct {
		off int64
		err error
		at  time.Time
	}
	done := make(chan res, 1)
	start := time.Now()
	go func() {
		off, err := eventlog.Target(context.Background(), e.adm, rsTopic, 0, 5*time.Second)
		done <- res{off, err, time.Now()}
	}()
	select {
	case r := <-done:
		t.Fatalf("Target returned %d, %v while the transaction was open", r.off, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	committedAt := time.Now()
	e.end(true)
	var r res
	select {
	case r = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Target did not return after the commit")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.at.Before(committedAt) {
		t.Errorf("Target returned %s before the commit", committedAt.Sub(r.at))
	}
	if r.off < openHWM {
		t.Errorf("Target = %d, before the end of the committed events (%d)", r.off, openHWM)
	}
	t.Logf("Target waited %s and returned %d (events end at %d)", r.at.Sub(start), r.off, openHWM)

	// The restore to that target sees the committed events.
	st := rsStore(t)
	stats := e.restore(st, 0)
	if stats.Events != 4 || rsStatus(t, st, "k1") != saga.StatusSucceeded || rsStatus(t, st, "k2") != saga.StatusStarted {
		t.Errorf("restore after the commit: %+v, k1 %s, k2 %s", stats, rsStatus(t, st, "k1"), rsStatus(t, st, "k2"))
	}
}

func TestTargetTimesOutOnAStuckTransaction(t *testing.T) {
	e := rsStart(t)
	e.begin(rsStarted("k1", "i1", 1000))
	_, err := eventlog.Target(context.Background(), e.adm, rsTopic, 0, 300*time.Millisecond)
	if !errors.Is(err, eventlog.ErrRestoreTimeout) {
		t.Errorf("err %v, want ErrRestoreTimeout", err)
	}
	// Cancelled context wins over the wait.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := eventlog.Target(ctx, e.adm, rsTopic, 0, 5*time.Second); err == nil {
		t.Error("Target ignored the context")
	}
	e.end(false)
	off, err := eventlog.Target(context.Background(), e.adm, rsTopic, 0, 5*time.Second)
	if err != nil || off != e.hwm() {
		t.Errorf("after the abort: %d, %v; want %d", off, err, e.hwm())
	}
}

func TestReadFromTo(t *testing.T) {
	e := rsStart(t)
	e.txn(true, rsStarted("a", "1", 1), rsStarted("b", "2", 2), rsStarted("c", "3", 3))
	e.txn(true, rsStarted("d", "4", 4))
	var got []int64
	apply := func(off int64, r *kgo.Record) error {
		if string(r.Key) != "acme/"+map[int64]string{0: "a", 1: "b", 2: "c", 4: "d"}[off] {
			t.Errorf("offset %d has key %q", off, r.Key)
		}
		if len(r.Headers) != 1 || r.Headers[0].Key != "traceparent" {
			t.Errorf("offset %d: headers %v", off, r.Headers)
		}
		got = append(got, off)
		return nil
	}
	// From 1 to 3: records 1 and 2 only.
	next, err := eventlog.Read(context.Background(), e.seeds, rsTopic, 0, 1, 3, apply)
	if err != nil || next != 3 || !reflect.DeepEqual(got, []int64{1, 2}) {
		t.Errorf("Read 1..3 = %d, %v, applied %v", next, err, got)
	}
	// from >= to reads nothing.
	got = nil
	if next, err := eventlog.Read(context.Background(), e.seeds, rsTopic, 0, 5, 5, apply); err != nil || next != 5 || got != nil {
		t.Errorf("empty Read = %d, %v, %v", next, err, got)
	}
	// An error from apply stops the read.
	stop := errors.New("stop")
	_, err = eventlog.Read(context.Background(), e.seeds, rsTopic, 0, 0, e.hwm(), func(int64, *kgo.Record) error { return stop })
	if !errors.Is(err, stop) {
		t.Errorf("apply error: %v", err)
	}
}

// A restore whose target was taken while the tail of the log was an open
// transaction that then aborted must still end: the aborted records are
// filtered out and their abort marker lies at the target, not below it.
// (Regression: the read waited for an offset it could never see.)
func TestRestoreEndsWhenTheTailAbortedAfterTheTarget(t *testing.T) {
	e := rsStart(t)
	e.txn(true, rsStarted("k0", "i0", 500))
	e.begin(rsStarted("k1", "i1", 1000), rsStarted("k2", "i2", 1100))
	done := make(chan int64, 1)
	go func() {
		off, err := eventlog.Target(context.Background(), e.adm, rsTopic, 0, 5*time.Second)
		if err != nil {
			t.Error(err)
		}
		done <- off
	}()
	time.Sleep(300 * time.Millisecond)
	e.end(false) // abort: the marker goes after the two aborted events
	target := <-done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var seen []string
	next, err := eventlog.Read(ctx, e.seeds, rsTopic, 0, 0, target, func(_ int64, r *kgo.Record) error {
		seen = append(seen, string(r.Key))
		return nil
	})
	if err != nil {
		t.Fatalf("read to %d did not end: %v (next %d)", target, err, next)
	}
	if len(seen) != 1 || next < target {
		t.Fatalf("read %v, next %d, target %d: want only k0's event", seen, next, target)
	}
}

// TestRestoreFoldsPendingReads: a read_started without its read_answered
// is a pending read after a restore, across batches and into a store that
// had already restored part of the log; an aborted read_started is not.
func TestRestoreFoldsPendingReads(t *testing.T) {
	e := rsStart(t)
	read := func(kind saga.EventKind, intent string, at int64) saga.Event {
		ev := saga.Event{Kind: kind, Tenant: "t", Key: "k", At: at, IntentID: intent}
		if kind == saga.EvReadStarted {
			ev.Tool, ev.Args, ev.Waiter = "search", []byte("q"), &saga.Waiter{IntentID: intent, ReplyTo: "r"}
		}
		return ev
	}
	e.txn(true, read(saga.EvReadStarted, "A", 1), read(saga.EvReadStarted, "B", 2), rsStarted("x", "X", 3))
	e.txn(false, read(saga.EvReadStarted, "C", 4))
	e.txn(true, read(saga.EvReadAnswered, "A", 5))
	st := rsStore(t)
	e.restore(st, 2)
	pendingIDs := func() []string {
		evs, err := eventlog.PendingReads(st, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, ev := range evs {
			if ev.Tool != "search" || ev.Waiter == nil || ev.Waiter.ReplyTo != "r" {
				t.Fatalf("pending read lost fields: %+v", ev)
			}
			ids = append(ids, ev.IntentID)
		}
		return ids
	}
	if got := pendingIDs(); !reflect.DeepEqual(got, []string{"B"}) {
		t.Fatalf("pending reads %v, want [B]", got)
	}
	if rsStatus(t, st, "x") != saga.StatusStarted {
		t.Fatal("the key record next to the reads was not folded")
	}
	e.txn(true, read(saga.EvReadAnswered, "B", 6), read(saga.EvReadStarted, "D", 7))
	e.restore(st, 100)
	if got := pendingIDs(); !reflect.DeepEqual(got, []string{"D"}) {
		t.Fatalf("pending reads after a second restore %v, want [D]", got)
	}
	if other, err := eventlog.PendingReads(st, 1, 100); err != nil || len(other) != 0 {
		t.Fatalf("partition 1 has pending reads %v (%v)", other, err)
	}
}

// A restore from offset 0 looks up only the keys it has flushed itself
// (nothing else can be in the view): it must fold exactly what a restore
// that looks every key up folds, also when a key's events fall into
// different intermediate batches and the record of an earlier batch shapes
// the next (waiters kept over a not_executed, a key expired and started
// again, a duplicate waiting on a started key).
func TestRestoreFromZeroFoldsLikeLookups(t *testing.T) {
	e := rsStart(t)
	read := func(kind saga.EventKind, intent string, at int64) saga.Event {
		ev := saga.Event{Kind: kind, Tenant: "acme", Key: "r", At: at, IntentID: intent}
		if kind == saga.EvReadStarted {
			ev.Tool, ev.Waiter = "search", &saga.Waiter{IntentID: intent, ReplyTo: "answers"}
		}
		return ev
	}
	expired := func(key string, at int64) saga.Event {
		return saga.Event{Kind: saga.EvExpired, Tenant: "acme", Key: key, At: at, Reason: "retention passed"}
	}
	retry := rsStarted("m2", "i2b", 3100)
	retry.Attempt = 2
	txns := [][]saga.Event{
		{rsStarted("m0", "i0", 1000)},
		{rsStarted("m1", "i1", 1100), rsStarted("m2", "i2", 1200), rsWaiting("m0", "d0", 1300), read(saga.EvReadStarted, "R1", 1400), rsStarted("m3", "i3", 1500)},
		{rsOutcome("m1", "i1", saga.StatusSucceeded, 2000), rsWaiting("m2", "d2", 2100), rsStarted("m4", "i4", 2200), read(saga.EvReadStarted, "R2", 2300)},
		{rsOutcome("m2", "i2", saga.StatusNotExecuted, 3000), retry, expired("m1", 3200), rsOutcome("m0", "i0", saga.StatusSucceeded, 3300),
			read(saga.EvReadAnswered, "R1", 3400), rsOutcome("m3", "i3", saga.StatusFailed, 3500)},
		{rsStarted("m1", "i1b", 4000), rsWaiting("m4", "d4", 4100), rsStarted("m5", "i5", 4200), expired("m3", 4300)},
		{rsOutcome("m1", "i1b", saga.StatusSucceeded, 5000), rsOutcome("m2", "i2b", saga.StatusSucceeded, 5100), rsWaiting("m5", "d5", 5200)},
	}
	keys := []string{"m0", "m1", "m2", "m3", "m4", "m5"}

	// The lookup path: after the first transaction, every restore starts
	// from a checkpoint and looks each key up.
	looked := rsStore(t)
	for i, evs := range txns {
		e.txn(true, evs...)
		if i == 2 {
			e.txn(false, rsOutcome("m4", "i4", saga.StatusSucceeded, 2400)) // aborted: never folded
		}
		if s := e.restore(looked, 0); i > 0 && s.From == 0 {
			t.Fatalf("restore after transaction %d started from 0", i)
		}
	}
	hwm := e.hwm()
	want := map[string]saga.Status{"m0": saga.StatusSucceeded, "m1": saga.StatusSucceeded, "m2": saga.StatusSucceeded,
		"m3": saga.StatusNone, "m4": saga.StatusStarted, "m5": saga.StatusStarted}
	for k, s := range want {
		if got := rsStatus(t, looked, k); got != s {
			t.Fatalf("lookup path: %s is %s, want %s", k, got, s)
		}
	}
	if m1 := rsGet(t, looked, "m1"); m1.Origin.IntentID != "i1b" {
		t.Fatalf("lookup path: m1 = %+v, want the call started after its expiry", m1)
	}
	if m2 := rsGet(t, looked, "m2"); m2.Attempt != 2 || m2.PrevStatus != saga.StatusNotExecuted {
		t.Fatalf("lookup path: m2 = %+v, want the second attempt", m2)
	}
	pending := func(st *state.Store) []string {
		evs, err := eventlog.PendingReads(st, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, ev := range evs {
			ids = append(ids, ev.IntentID)
		}
		return ids
	}
	if got := pending(looked); !reflect.DeepEqual(got, []string{"R2"}) {
		t.Fatalf("lookup path: pending reads %v, want [R2]", got)
	}

	// From 0 into an empty store, in batches of every size: the same view.
	for _, every := range []int{1, 2, 3, 5, 0} {
		fresh := rsStore(t)
		if s := e.restore(fresh, every); s.From != 0 || s.To != hwm || s.Events != 23 {
			t.Errorf("flush every %d: %+v, want 23 events from 0 to %d", every, s, hwm)
		}
		for _, k := range keys {
			if a, b := rsGet(t, looked, k), rsGet(t, fresh, k); !reflect.DeepEqual(a, b) {
				t.Errorf("flush every %d: %s = %+v, the lookup path has %+v", every, k, b, a)
			}
		}
		if a, b := rsDoubtKeys(t, looked), rsDoubtKeys(t, fresh); !reflect.DeepEqual(a, b) {
			t.Errorf("flush every %d: in doubt %v, the lookup path has %v", every, b, a)
		}
		a, _ := looked.Expired(1<<50, 100)
		b, _ := fresh.Expired(1<<50, 100)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("flush every %d: expiry index %v, the lookup path has %v", every, b, a)
		}
		if got := pending(fresh); !reflect.DeepEqual(got, []string{"R2"}) {
			t.Errorf("flush every %d: pending reads %v, want [R2]", every, got)
		}
	}
}

// Only a restore from 0 skips the lookups. A record planted without a
// checkpoint (which the executor never writes: a record commits with its
// partition's checkpoint) shows whether the restore looked it up: a
// duplicate waiting on k2, whose started event is not in the log, joins
// the planted record only if it was read.
func TestRestoreLooksUpKeysOnlyPastACheckpoint(t *testing.T) {
	e := rsStart(t)
	e.txn(true, rsStarted("k1", "i1", 1000))
	hwm1 := e.hwm()
	e.txn(true, rsWaiting("k2", "d2", 2000), rsOutcome("k1", "i1", saga.StatusSucceeded, 2100))
	planted := &saga.Record{Tenant: "acme", Key: "k2", Tool: "pay", ArgsHash: []byte{0xbb}, Status: saga.StatusStarted,
		Origin: saga.Waiter{IntentID: "p2"}, Attempt: 1, CalledAt: 500, PendingUntil: 30_500, RetentionMs: 60_000, LastEventAt: 500}
	plant := func(st *state.Store, checkpoint int64) {
		b := st.NewBatch()
		if err := b.Put(0, nil, planted); err != nil {
			t.Fatal(err)
		}
		if checkpoint > 0 {
			if err := b.SetCheckpoint(rsTopic, 0, checkpoint); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Commit(state.Sync); err != nil {
			t.Fatal(err)
		}
	}
	waiters := func(r *saga.Record) []string {
		var ids []string
		for _, w := range r.Waiters {
			ids = append(ids, w.IntentID)
		}
		return ids
	}

	resumed := rsStore(t)
	plant(resumed, hwm1)
	if s := e.restore(resumed, 0); s.From != hwm1 || s.Events != 2 {
		t.Fatalf("resumed restore: %+v, want 2 events from %d", s, hwm1)
	}
	if k2 := rsGet(t, resumed, "k2"); k2 == nil || !reflect.DeepEqual(waiters(k2), []string{"d2"}) {
		t.Errorf("from a checkpoint the duplicate must join the stored record: k2 = %+v", k2)
	}
	for _, every := range []int{1, 0} {
		fromZero := rsStore(t)
		plant(fromZero, 0)
		if s := e.restore(fromZero, every); s.From != 0 || s.Events != 3 {
			t.Fatalf("flush every %d: restore from 0: %+v", every, s)
		}
		if k2 := rsGet(t, fromZero, "k2"); k2 == nil || len(k2.Waiters) != 0 {
			t.Errorf("flush every %d: from 0 the restore looked k2 up: %+v", every, k2)
		}
		if s := rsStatus(t, fromZero, "k1"); s != saga.StatusSucceeded {
			t.Errorf("flush every %d: k1 is %s", every, s)
		}
	}
}
