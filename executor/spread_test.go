package executor

import (
	"runtime"
	"sync"
	"testing"
)

// TestSpreadCoversEveryIndexOnce checks the fan-out: every index of a
// poll is handed to exactly one chunk, chunks do not overlap, and there
// are never more chunks than cores.
func TestSpreadCoversEveryIndexOnce(t *testing.T) {
	for _, procs := range []int{1, 2, 3, 16} {
		prev := runtime.GOMAXPROCS(procs)
		for _, n := range []int{0, 1, minChunk - 1, minChunk, minChunk + 1, 100, 1000, 1001} {
			seen := make([]int, n)
			var mu sync.Mutex
			chunks := 0
			spread(n, func(lo, hi int) {
				mu.Lock()
				chunks++
				mu.Unlock()
				for i := lo; i < hi; i++ {
					seen[i]++ // own slots only: the race detector checks the claim
				}
			})
			for i, c := range seen {
				if c != 1 {
					t.Fatalf("GOMAXPROCS %d, n %d: index %d handled %d times", procs, n, i, c)
				}
			}
			if chunks > max(procs, 1) {
				t.Errorf("GOMAXPROCS %d, n %d: %d chunks", procs, n, chunks)
			}
			if n >= 2*minChunk && procs > 1 && chunks < 2 {
				t.Errorf("GOMAXPROCS %d, n %d: one chunk, the work was not spread", procs, n)
			}
		}
		runtime.GOMAXPROCS(prev)
	}
}
