package txn

import (
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Batch is the records of one transaction and what became of them. The
// caller fills the exported fields, and may Fail records it would not
// produce, before Commit; Commit fills the rest. A Batch is committed once.
type Batch struct {
	Records []*kgo.Record  // produced in this order
	Touched map[int32]bool // the events partitions written: the fence covers each (fence.go)
	Polled  []*kgo.Record  // the polled records the transaction commits the offsets of
	// Confirm are the events partitions on which the commit must be seen
	// before Commit reports Committed (confirm.go): those of the started
	// events of the calls the caller will make.
	Confirm map[int32]bool

	txn      txnKey // the producer id and epoch of its transaction
	pidKnown bool   // txn was read from the client (the confirmation trusts no abort it cannot attribute otherwise)
	tried    map[string]map[int32]kgo.EpochOffset

	mu struct {
		sync.Mutex
		firstOffset map[int32]int64 // events partition -> offset of the first event produced
		lastOffset  map[int32]int64 // events partition -> offset of the last event produced
		produceErr  error
		failures    []Failure
	}
}

// Failure is a record that could not be produced, and why.
type Failure struct {
	Record *kgo.Record
	Err    error
}

// Outcome is what became of a transaction, as far as the member may act
// on it.
type Outcome int

const (
	// Committed: committed, and seen committed on every partition of
	// Confirm. The member acts on it.
	Committed Outcome = iota + 1
	// Aborted: seen to abort. Its inputs come again.
	Aborted
	// Unknown: its end failed, so it may have committed. Its inputs come
	// again unless the group's offsets show them committed, and what it
	// touched must be read back from the log.
	Unknown
	// Unconfirmed: reported committed, and not seen committed on Confirm's
	// partitions in time, or seen aborted there. As Unknown; the inputs of
	// partitions seen aborted come again whatever the group's offsets say.
	Unconfirmed
)

// Fail notes a record that cannot be produced: the transaction aborts.
// Safe for concurrent use (produce callbacks call it).
func (b *Batch) Fail(r *kgo.Record, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.produceErr == nil {
		b.mu.produceErr = fmt.Errorf("produce to %s/%d: %w", r.Topic, r.Partition, err)
	}
	b.mu.failures = append(b.mu.failures, Failure{Record: r, Err: err})
}

// Failures are the records that could not be produced, once Commit
// returned.
func (b *Batch) Failures() []Failure {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.failures
}

// Checkpoints are the next offsets of the events partitions the
// transaction wrote, once it committed.
func (b *Batch) Checkpoints() map[int32]int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[int32]int64, len(b.mu.lastOffset))
	for p, off := range b.mu.lastOffset {
		out[p] = off + 1
	}
	return out
}

// promise is the produce callback of every record of the transaction.
func (b *Batch) promise(events string) func(*kgo.Record, error) {
	return func(r *kgo.Record, err error) {
		if err != nil {
			b.Fail(r, err)
			return
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if r.Topic != events {
			return
		}
		if b.mu.lastOffset == nil {
			b.mu.firstOffset, b.mu.lastOffset = map[int32]int64{}, map[int32]int64{}
		}
		if r.Offset >= b.mu.lastOffset[r.Partition] {
			b.mu.lastOffset[r.Partition] = r.Offset
		}
		if first, ok := b.mu.firstOffset[r.Partition]; !ok || r.Offset < first {
			b.mu.firstOffset[r.Partition] = r.Offset
		}
	}
}

// produceErr is the first produce error, nil when none.
func (b *Batch) produceErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.produceErr
}
