package handoff

import (
	"slices"
	"sync"
	"testing"
)

func TestQueueHandsEveryItemOverOnceInOrderPerPusher(t *testing.T) {
	var q Queue[int]
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 100 {
				q.Push(w*1000 + i)
			}
		})
	}
	var got []int
	for len(got) < 400 {
		got = append(got, q.Take()...)
	}
	wg.Wait()
	got = append(got, q.Take()...)
	if len(got) != 400 {
		t.Fatalf("took %d items, want 400", len(got))
	}
	last := map[int]int{0: -1, 1: -1, 2: -1, 3: -1}
	for _, v := range got {
		w, i := v/1000, v%1000
		if i <= last[w] {
			t.Fatalf("pusher %d: item %d after %d", w, i, last[w])
		}
		last[w] = i
	}
	if q.Take() != nil {
		t.Fatal("a second take found items")
	}
	q.Push(1, 2)
	if got := q.Take(); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("took %v", got)
	}
}
