package executor

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/executor/partition"
	"github.com/atmostonce/toolexec/executor/txn"
	"github.com/atmostonce/toolexec/state"
	"github.com/atmostonce/toolexec/topicadmin"
)

// Executor is one member of the executor group. Run it once; it is not
// safe to call Run concurrently.
type Executor struct {
	cfg     Config
	m       *Metrics
	client  *kgo.Client  // the group session's: polls, rebalances, pauses
	txns    transactions // the producer's transactions, end to end (package txn)
	adm     *kadm.Client
	store   *state.Store
	layout  topicadmin.Layout
	disp    *dispatcher
	tenants *tenantLabels // the metrics' tenant labels, bounded (admission.go)
	replies *replyTopics
	trace   *callTracer // nil: tracing off
	enc     *encoder
	dec     recordDecoder
	folds   *restorer
	courier *courier // delivers the member's facts (facts.go)

	callCtx    context.Context // parent of calls: outlives Run's ctx for the drain
	cancelCall context.CancelFunc

	// Loop-owned: touched only by the loop goroutine.
	core *partition.Core // every per-partition rule and what it remembers
	hot  *hotRecords     // the records materialised last, read before Pebble (hotrecords.go)

	guard            layoutGuard  // the partition-count guard (layout.go)
	gapCount         atomic.Int32 // partitions with a gap in their log, for Ready (restore.go)
	rebalancePending atomic.Bool
	gate             rebalanceGate // the loop's hold on the group's rebalance gate (gate.go)
	changes          ownershipChanges
	crashed          atomic.Bool
	runDone          chan struct{}
	ready            atomic.Bool
	assigned         bool         // an assignment was applied (loop goroutine)
	warm             atomic.Bool  // the partitions of an assignment were all restored (noteWarm)
	restores         restoreTally // what an assignment's restores did, logged once (restorelog.go)
	wakeMu           sync.Mutex
	wakeFn           context.CancelFunc
}

// transactions is what the loop asks of its transaction session,
// *txn.Session (the package doc of txn states the contract: what blocks,
// what cancelling does, which goroutine calls what). Commit, Reset and
// CheckHanging run on the loop goroutine; Interrupt runs on the group's
// callback goroutine; Close after Run returned, or under it (Crash).
type transactions interface {
	Commit(ctx context.Context, b *txn.Transaction, beforeEnd func()) (txn.End, error)
	Reset(ctx context.Context, what string) error
	Interrupt()
	CheckHanging(ctx context.Context)
	Close()
}

// Ready reports whether the loop runs and decides: false before Run,
// after it, until the partitions of the member's first assignment are
// restored (noteWarm), and while the member refuses to decide because the
// topics' partitions changed (layout.go) or a partition's log has a gap
// (restore.go).
func (e *Executor) Ready() bool {
	return e.ready.Load() && e.warm.Load() && !e.guard.layoutRefused.Load() && e.gapCount.Load() == 0
}

// Store exposes the view, read-only by convention (history, tests).
func (e *Executor) Store() *state.Store { return e.store }

// Layout is the topic layout found at start.
func (e *Executor) Layout() topicadmin.Layout { return e.layout }

// Metrics returns the executor's collectors.
func (e *Executor) Metrics() *Metrics { return e.m }

// Close releases the client and the store. Call it after Run returned.
func (e *Executor) Close() {
	if e.cancelCall != nil {
		e.cancelCall()
	}
	if e.txns != nil {
		e.txns.Close()
	}
	e.courier.close()
	if e.store != nil {
		_ = e.store.Close()
	}
}

// Crash abandons the executor as a kill -9 would, for tests: the client is
// closed under the loop, nothing is drained or recorded, and calls still
// running finish into nothing. It waits for Run to return.
func (e *Executor) Crash() {
	e.crashed.Store(true)
	e.cancelCall()
	e.txns.Close()
	e.courier.close()
	<-e.runDone
}
