package executor

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/state"
)

// The folds of restores (restore.go), a bounded number at once on
// goroutines of their own, joined before the loop goes on.

// maxConcurrentRestores bounds the partitions restored at once, with
// the cores (runtime.GOMAXPROCS): once its log is fetched a restore is
// CPU-bound (decode, fold, encode, Pebble's memtable), so restores past
// the cores only add memory. Memory is what bounds it: each restore holds
// up to eventlog.DefaultFlushEvery folded records, their batch and its
// fetch, and two at once raised a 1,000,000-key take-over's peak RSS from
// 140 to 214 MB (docs/PERFORMANCE.md), against a budget of 256 MB; with
// GOGC 200 (internal/gctune) to 271 MB, and back to 229 MB with 5,000
// records a batch and 4 MiB fetches. More at once needs a smaller
// DefaultFlushEvery first.
const maxConcurrentRestores = 2

// restorer runs the folds of restores. Safe for concurrent use: it holds
// only the configuration, the store (safe for concurrent use) and the
// admin client, and each fold writes only its own partition's keys.
type restorer struct {
	store *state.Store
	adm   *kadm.Client
	opts  eventlog.RestoreOptions // all but the settle wait
}

// foldResult is one partition's restore.
type foldResult struct {
	stats eventlog.RestoreStats
	err   error
}

// foldAll runs eventlog.RestoreInto for every partition of ps, a bounded
// number at once, and returns when all have returned (so no goroutine
// outlives it: cancelling ctx ends each restore's reads).
func (f *restorer) foldAll(ctx context.Context, ps []int32, settle time.Duration) []foldResult {
	results := make([]foldResult, len(ps))
	workers := min(len(ps), runtime.GOMAXPROCS(0), maxConcurrentRestores)
	if workers <= 1 {
		for i, p := range ps {
			results[i].stats, results[i].err = f.fold(ctx, p, settle)
		}
		return results
	}
	next := make(chan int, len(ps)) // every index queued up front: bounded by ps
	for i := range ps {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				results[i].stats, results[i].err = f.fold(ctx, ps[i], settle)
			}
		})
	}
	wg.Wait()
	return results
}

// fold restores p's view from the log. Safe to run for several
// partitions at once: it reads only f and writes only p's part of the
// store.
func (f *restorer) fold(ctx context.Context, p int32, settle time.Duration) (eventlog.RestoreStats, error) {
	opts := f.opts
	opts.SettleWait = settle
	return eventlog.RestoreInto(ctx, f.store, f.adm, p, opts)
}
