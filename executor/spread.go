package executor

import (
	"runtime"
	"sync"
)

// Spread: per-record work of one tick (decoding a poll, encoding its
// output) runs on every core, in chunks, while the loop waits for all of
// them. The loop keeps every decision and every order: a chunk writes only
// its own slots of a slice the loop reads afterwards.
//
// At 16 cores a poll of 1,000 records becomes 16 chunks of about 63; the
// decisions, the transaction and the Pebble write stay on the loop, so
// what the loop saves is the per-record share of a tick (Amdahl), not the
// tick.

// minChunk is the fewest records worth a goroutine of their own: decoding
// one intent costs a few microseconds, starting and joining a goroutine
// about one, so smaller chunks would spend more on the fan-out than they
// save.
const minChunk = 32

// spread calls fn over [0, n) in at most GOMAXPROCS contiguous chunks, in
// parallel, and returns when all have returned. fn must touch only the
// slots of its own range, and nothing the loop owns without a lock.
func spread(n int, fn func(lo, hi int)) {
	chunks := min(runtime.GOMAXPROCS(0), (n+minChunk-1)/minChunk)
	if chunks <= 1 {
		fn(0, n)
		return
	}
	size := (n + chunks - 1) / chunks
	var wg sync.WaitGroup
	for lo := size; lo < n; lo += size {
		wg.Go(func() { fn(lo, min(lo+size, n)) })
	}
	fn(0, min(size, n)) // the loop's goroutine takes the first chunk
	wg.Wait()
}
