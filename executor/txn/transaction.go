package txn

import (
	"fmt"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/topics"
)

// Transaction is the records of one transaction and what became of them. The
// caller fills the exported fields, and may Fail records it would not
// produce, before Commit; Commit fills the rest. A Transaction is committed once.
type Transaction struct {
	Records []*kgo.Record  // produced in this order
	Touched map[int32]bool // the events partitions written: the fence covers each (fence.go)
	Polled  []*kgo.Record  // the polled records the transaction commits the offsets of
	// Confirm are the events partitions on which the commit must be seen
	// before Commit reports Committed (confirm.go): those of the started
	// events of the calls the caller will make.
	Confirm map[int32]bool

	txn      txnKey // the producer id and epoch of its transaction
	pidKnown bool   // txn was read from the client (else txnOf reads the records')
	tried    map[string]map[int32]kgo.EpochOffset

	events string // the events topic, whose spans are the checkpoints

	mu struct {
		sync.Mutex
		// spans are the offsets of the records produced, by topic and
		// partition, for the topics promise was given.
		spans      map[string]map[int32]span
		recordTxn  txnKey // the producer id and epoch the records carry, once spans has one
		produceErr error
		failures   []Failure
	}
}

// Failure is a record that could not be produced, and why.
type Failure struct {
	Record *kgo.Record
	Err    error
}

// End is what became of a transaction, as far as the member may act
// on it.
type End int

const (
	// Committed: committed, and seen committed on every partition of
	// Confirm. The member acts on it.
	Committed End = iota + 1
	// Aborted: ended with an abort it asked for (a record could not be
	// produced). Its inputs come again.
	Aborted
	// Unknown: its end failed, or reported no commit for a commit it
	// may have sent, so it may have committed. Its inputs come again
	// unless the group's offsets show them committed, and what it
	// touched must be read back from the log.
	Unknown
	// Unconfirmed: reported committed, and not seen committed on Confirm's
	// partitions in time, or seen aborted there. As Unknown; the inputs of
	// partitions seen aborted come again whatever the group's offsets say.
	Unconfirmed
)

// Fail notes a record that cannot be produced: the transaction aborts.
// Safe for concurrent use (produce callbacks call it).
func (b *Transaction) Fail(r *kgo.Record, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.produceErr == nil {
		b.mu.produceErr = fmt.Errorf("produce to %s/%d: %w", r.Topic, r.Partition, err)
	}
	b.mu.failures = append(b.mu.failures, Failure{Record: r, Err: err})
}

// Failures are the records that could not be produced, once Commit
// returned.
func (b *Transaction) Failures() []Failure {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.failures
}

// Checkpoints are the next offsets of the events partitions the
// transaction wrote, once it committed.
func (b *Transaction) Checkpoints() map[int32]int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[int32]int64, len(b.mu.spans[b.events]))
	for p, sp := range b.mu.spans[b.events] {
		out[p] = sp.last + 1
	}
	return out
}

// promise is the produce callback of every record of the transaction. It
// keeps the spans of the records on events (the checkpoints, the
// confirmation) and on the other topics given (the verdict on an end of
// unknown outcome, confirm.go).
func (b *Transaction) promise(events string, others ...string) func(*kgo.Record, error) {
	b.events = events
	kept := append([]string{events}, others...)
	return func(r *kgo.Record, err error) {
		if err != nil {
			b.Fail(r, err)
			return
		}
		if !slices.Contains(kept, r.Topic) {
			return
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		b.mu.recordTxn = txnKey{pid: r.ProducerID, epoch: r.ProducerEpoch}
		if b.mu.spans == nil {
			b.mu.spans = map[string]map[int32]span{}
		}
		ps := b.mu.spans[r.Topic]
		if ps == nil {
			ps = map[int32]span{}
			b.mu.spans[r.Topic] = ps
		}
		sp, ok := ps[r.Partition]
		if !ok {
			sp = span{first: r.Offset, last: r.Offset}
		}
		sp.first, sp.last = min(sp.first, r.Offset), max(sp.last, r.Offset)
		ps[r.Partition] = sp
	}
}

// producer is the producer id of the transaction: read from the client
// at its end, or else carried by its acknowledged records; ok is false
// when neither is known.
func (b *Transaction) producer() (pid int64, ok bool) {
	k, ok := b.txnOf()
	return k.pid, ok
}

// txnOf names the transaction (producer id and epoch) as producer finds
// its id. Neither known means the client never had a producer id for it,
// so nothing of it reached a partition.
func (b *Transaction) txnOf() (txnKey, bool) {
	if b.pidKnown {
		return b.txn, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.recordTxn, len(b.mu.spans) > 0
}

// pollsInputs reports whether the transaction commits the offsets of
// records polled from the intents or control topic: inputs it would lose
// if its offsets committed without it.
func (b *Transaction) pollsInputs(n topics.Names) bool {
	return slices.ContainsFunc(b.Polled, func(r *kgo.Record) bool { return r.Topic == n.Intents || r.Topic == n.Control })
}

// produceErr is the first produce error, nil when none.
func (b *Transaction) produceErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.produceErr
}
