// Package handoff is how news from another goroutine reaches a loop that
// owns its state alone: franz-go's group callbacks (assigned, revoked,
// lost) run on the group's goroutine, and the executor's and the
// reconciler's loops apply what they report after their next poll.
//
// Why a queue and not a mutex around the loop's maps: a callback may run
// while the caller of the loop's I/O holds a lock of its own (the transact
// session calls the revoke callback holding the lock that End needs), so
// a callback that waited for the loop could deadlock. Push only appends,
// under a lock never held across I/O.
package handoff

import "sync"

// Queue hands items from any goroutine to one taker. Its length is
// bounded by what happens between two takes (for the group callbacks:
// the rebalances between two polls, each one item). Safe for concurrent
// use; the zero value is empty.
type Queue[T any] struct {
	mu    sync.Mutex
	items []T
}

// Push appends the items.
func (q *Queue[T]) Push(items ...T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.items = append(q.items, items...)
}

// Take returns everything pushed since the last Take, oldest first.
func (q *Queue[T]) Take() []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.items
	q.items = nil
	return out
}
