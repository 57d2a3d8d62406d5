package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/state"
	"github.com/atmostonce/toolexec/wire"
)

// restoreResult is scenario 4.
type restoreResult struct {
	keys, records int
	produce       time.Duration // loading the log, for context
	restore       time.Duration // every partition in turn, as an executor does
	parallel      time.Duration // every partition at once, for comparison
}

// eventsPerTxn bounds the loader's transactions.
const eventsPerTxn = 40_000

// restoreScenario fills an events topic with a started and a succeeded
// outcome event per key, as the executor writes them, then times
// eventlog.RestoreInto of every partition into an empty Pebble directory.
func (b *bench) restoreScenario(ctx context.Context) (*env, restoreResult, error) {
	r := restoreResult{keys: b.cfg.keys}
	e, err := b.br.newEnv(ctx, "r", b.cfg.partitions)
	if err != nil {
		return nil, r, err
	}
	progress("restore: writing %d events (%d keys) to %s", 2*r.keys, r.keys, e.names.Events)
	start := time.Now()
	if r.records, err = loadEvents(ctx, b.br.seeds, e, r.keys); err != nil {
		return nil, r, err
	}
	r.produce = time.Since(start)
	progress("restore: rebuilding %d keys into an empty Pebble directory", r.keys)
	if r.restore, err = b.timeRestore(ctx, e, "restore-serial", false); err != nil {
		return nil, r, err
	}
	progress("restore: again, all partitions at once")
	r.parallel, err = b.timeRestore(ctx, e, "restore-parallel", true)
	return e, r, err
}

// loadEvents produces the events of keys in transactions and returns the
// number of records.
func loadEvents(ctx context.Context, seeds []string, e *env, keys int) (int, error) {
	cl, err := kgo.NewClient(append(seedOpts(seeds), kgo.TransactionalID(e.prefix+"loader-"+randHex(4)),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(time.Minute),
		kgo.MaxBufferedRecords(2*eventsPerTxn))...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	now := time.Now().UnixMilli()
	records := 0
	for from := 0; from < keys; from += eventsPerTxn / 2 {
		n, err := loadTxn(ctx, cl, e, from, min(from+eventsPerTxn/2, keys), now)
		if err != nil {
			return records, err
		}
		records += n
	}
	return records, nil
}

func loadTxn(ctx context.Context, cl *kgo.Client, e *env, from, to int, now int64) (int, error) {
	if err := cl.BeginTransaction(); err != nil {
		return 0, err
	}
	var (
		mu      sync.Mutex
		prodErr error
	)
	promise := func(_ *kgo.Record, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil && prodErr == nil {
			prodErr = err
		}
	}
	n := 0
	for i := from; i < to; i++ {
		recs, err := keyEvents(e, i, now)
		if err != nil {
			return n, err
		}
		for _, r := range recs {
			cl.Produce(ctx, r, promise)
			n++
		}
	}
	flushErr := cl.Flush(ctx)
	mu.Lock()
	err := errors.Join(flushErr, prodErr)
	mu.Unlock()
	commit := kgo.TransactionEndTry(err == nil)
	return n, errors.Join(err, cl.EndTransaction(ctx, commit))
}

// restoredKey is key i of the restore scenario.
func restoredKey(i int) string { return "r-" + strconv.Itoa(i) }

// keyEvents are the started and outcome events of key i, as the executor
// writes them for a bench.noop call with args {"n": i}, so that an
// executor restoring them answers that intent as a replay.
func keyEvents(e *env, i int, now int64) ([]*kgo.Record, error) {
	key, id := restoredKey(i), "ri-"+strconv.Itoa(i)
	_, canon, err := wire.CanonicalArgs(map[string]any{"n": i})
	if err != nil {
		return nil, err
	}
	result, _ := msgpack.Marshal(map[string]any{"ok": true})
	started := saga.Event{Kind: saga.EvStarted, Tenant: benchTenant, Key: key, At: now, IntentID: id, Tool: toolNoop,
		ArgsHash: wire.ArgsHash(canon), Args: canon, PendingTTL: (2 * time.Minute).Milliseconds(),
		RetentionMs: (24 * time.Hour).Milliseconds(), Attempt: 1, Waiter: &saga.Waiter{IntentID: id, Type: "call", At: now}}
	outcome := saga.Event{Kind: saga.EvOutcome, Tenant: benchTenant, Key: key, At: now + 1, IntentID: id, CallID: id,
		Status: saga.StatusSucceeded, Result: result}
	p := partitionOf(key, e.layout.Partitions)
	var recs []*kgo.Record
	for _, ev := range []*saga.Event{&started, &outcome} {
		v, err := eventlog.Encode(ev)
		if err != nil {
			return nil, err
		}
		recs = append(recs, eventlog.EncodeRecord(e.names, p, v, benchTenant, key, ""))
	}
	return recs, nil
}

// timeRestore restores every partition of e's events into a new store and
// checks a sample of keys. Serially, it is what an executor that is
// assigned every partition does, one partition after the other.
func (b *bench) timeRestore(ctx context.Context, e *env, name string, parallel bool) (time.Duration, error) {
	dir := filepath.Join(b.dir, name)
	st, err := state.Open(dir, state.Options{})
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	defer st.Close()
	stopProfile, err := b.profileSelf(name)
	if err != nil {
		return 0, err
	}
	start, cpu0 := time.Now(), selfCPU()
	events, err := b.restoreAll(ctx, st, e, parallel)
	took, cpu := time.Since(start), selfCPU()-cpu0
	stopProfile()
	if err != nil {
		return 0, err
	}
	// CPU per record is the figure that survives a shared machine (the
	// rates do not); it includes the in-process kfake's serving.
	progress("restore: %s: %d events in %.2fs, %.2f µs CPU per event (this process)", name, events, took.Seconds(),
		cpu*1e6/float64(max(events, 1)))
	if events != 2*b.cfg.keys {
		return 0, fmt.Errorf("%s: folded %d events, want %d", name, events, 2*b.cfg.keys)
	}
	return took, checkRestored(st, b.cfg.keys)
}

func (b *bench) restoreAll(ctx context.Context, st *state.Store, e *env, parallel bool) (int, error) {
	o := eventlog.RestoreOptions{Seeds: b.br.seeds, Topic: e.names.Events}
	var (
		mu     sync.Mutex
		events int
		errs   []error
		wg     sync.WaitGroup
	)
	sem := make(chan struct{}, max(runtime.GOMAXPROCS(0), 1))
	for p := range e.layout.Partitions {
		one := func() {
			s, err := eventlog.RestoreInto(ctx, st, b.br.adm, p, o)
			mu.Lock()
			defer mu.Unlock()
			events += s.Events
			errs = append(errs, err)
		}
		if !parallel {
			one()
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() { defer wg.Done(); defer func() { <-sem }(); one() }()
	}
	wg.Wait()
	return events, errors.Join(errs...)
}

// checkRestored reads back every thousandth key: succeeded, with its
// origin. A restore that is fast but wrong must not be reported.
func checkRestored(st *state.Store, keys int) error {
	for i := 0; i < keys; i += max(keys/1000, 1) {
		rec, err := st.Get(benchTenant, restoredKey(i))
		if err != nil {
			return err
		}
		if rec == nil || rec.Status != saga.StatusSucceeded || rec.Origin.IntentID != "ri-"+strconv.Itoa(i) {
			return fmt.Errorf("restore check: key %s restored as %+v", restoredKey(i), rec)
		}
	}
	return nil
}

// profileSelf starts a CPU profile of this process when asked.
func (b *bench) profileSelf(name string) (func(), error) {
	if b.cfg.cpuProfile == "" {
		return func() {}, nil
	}
	f, err := os.Create(b.cfg.cpuProfile + "." + name + ".pprof")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
