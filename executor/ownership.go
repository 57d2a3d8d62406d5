package executor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/tools"
)

// ownershipChanges carries assignments and revocations from the group's
// callbacks to the loop.
//
// Why not let the callbacks touch the loop's maps under a mutex: the
// transact session calls our revoke callback while holding its own lock,
// the one End needs. A callback that waited for the loop (which may sit
// in End) would deadlock. So callbacks only append here, under a lock never
// held across I/O, and the loop applies the changes after its next poll.
// BlockRebalanceOnPoll guarantees no callback runs between a poll and
// AllowRebalance, so a tick always sees one stable assignment.
type ownershipChanges struct {
	mu struct {
		sync.Mutex
		list []ownershipChange
	}
}

type ownershipChange struct {
	assigned   bool
	partitions []int32
	byTopic    map[string][]int32 // as the group gave them (layout.go checks them)
}

func (c *ownershipChanges) push(assigned bool, parts map[string][]int32) {
	seen := map[int32]bool{}
	var ps []int32
	for _, list := range parts {
		for _, p := range list {
			if !seen[p] {
				seen[p] = true
				ps = append(ps, p)
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.list = append(c.mu.list, ownershipChange{assigned: assigned, partitions: ps, byTopic: parts})
}

func (c *ownershipChanges) take() []ownershipChange {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.mu.list
	c.mu.list = nil
	return l
}

func (e *Executor) onAssigned(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	e.changes.push(true, e.ours(parts))
	e.dirty.Store(true)
}

func (e *Executor) onRevoked(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	e.changes.push(false, e.ours(parts))
	e.dirty.Store(true)
}

func (e *Executor) onLost(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	e.changes.push(false, e.ours(parts))
	e.dirty.Store(true)
}

func (e *Executor) ours(parts map[string][]int32) map[string][]int32 {
	out := map[string][]int32{}
	for t, ps := range parts {
		if t == e.cfg.Names.Intents || t == e.cfg.Names.Control {
			out[t] = ps
		}
	}
	return out
}

// applyOwnershipChanges runs on the loop goroutine at the start of a tick.
// A new assignment gets a new epoch and must restore before its first
// decision. A revocation forgets the partition's calls: if any still run,
// their outcomes are stale and the keys are in doubt for the next owner.
func (e *Executor) applyOwnershipChanges() {
	for _, ch := range e.changes.take() {
		if ch.assigned {
			e.checkAssignment(ch.byTopic)
		}
		for _, p := range ch.partitions {
			if ch.assigned {
				if _, ok := e.owned[p]; !ok {
					e.epochSeq++
					e.owned[p] = &ownership{epoch: e.epochSeq, since: time.Now()}
				}
				continue
			}
			e.release(p)
		}
	}
}

func (e *Executor) release(p int32) {
	delete(e.owned, p)
	e.forgetGap(p)
	delete(e.unsettled, p)
	for rk, c := range e.inflight {
		if c.partition == p {
			delete(e.inflight, rk)
			e.m.OutcomesLost.Inc()
			e.cfg.Logger.Warn("partition released with a call running; its key is in doubt for the next owner", "key", rk, "partition", p)
		}
	}
	for id, c := range e.reads {
		if c.partition == p {
			delete(e.reads, id) // the next owner calls it again
		}
	}
	e.m.KeysInDoubt.DeleteLabelValues(partitionLabel(p))
}

// ensureRestored brings the view of partition p up to the log before its
// first decision in this assignment (or after a commit whose result is
// unknown). It runs after the first poll that returned p's records, when
// the stable offset fetch has already waited out the previous owner's
// pending transaction (KIP-447); eventlog.Target waits out the rest.
func (e *Executor) ensureRestored(ctx context.Context, p int32) error {
	return e.restore(ctx, p, e.cfg.TransactionTimeout+10*time.Second)
}

// restore is ensureRestored with a bound on the wait for open
// transactions on the events partition to settle.
func (e *Executor) restore(ctx context.Context, p int32, settle time.Duration) error {
	o, ok := e.owned[p]
	if !ok {
		return fmt.Errorf("%w: partition %d is not owned by this member", ErrFatal, p)
	}
	if o.restored {
		return nil
	}
	if err := e.gapWait(p); err != nil {
		return err
	}
	stats, err := eventlog.RestoreInto(ctx, e.store, e.adm, p, eventlog.RestoreOptions{
		Seeds: e.cfg.Brokers, Topic: e.cfg.Names.Events, SettleWait: settle,
		ClientOpts:  append([]kgo.Opt{kgo.WithLogger(kgoLogger{l: e.cfg.Logger})}, e.cfg.Connect...),
		PartitionOf: e.partitionOf,
	})
	if err != nil {
		if errors.Is(err, eventlog.ErrRestoreTimeout) {
			e.checkHanging(ctx)
		}
		if ge, ok := asGap(err); ok {
			e.noteGap(p, ge)
		}
		return fmt.Errorf("%w: restore partition %d: %w", errRetryTick, p, err)
	}
	e.forgetGap(p)
	o.restored = true
	e.resumeReads(p, o)
	e.m.Restores.Observe(stats.Duration.Seconds())
	e.m.RestoreEvents.Add(float64(stats.Events))
	e.cfg.Logger.Info("partition restored", "partition", p, "from", stats.From, "to", stats.To, "events", stats.Events, "took", stats.Duration)
	e.refreshDoubt(p)
	return nil
}

// refreshDoubt recounts the unsettled keys of p from the view's index
// (after a restore) and publishes the gauge.
func (e *Executor) refreshDoubt(p int32) {
	n, err := e.store.CountInDoubt(p)
	if err != nil {
		return
	}
	e.unsettled[p] = n
	e.publishDoubt(p)
}

// publishDoubt sets the keys-in-doubt gauge of p: unsettled keys with no
// call running here.
func (e *Executor) publishDoubt(p int32) {
	n := e.unsettled[p]
	for _, c := range e.inflight {
		if c.partition == p {
			n--
		}
	}
	e.m.KeysInDoubt.WithLabelValues(partitionLabel(p)).Set(float64(max(n, 0)))
}

// drain waits (bounded) for the calls in flight and records their
// outcomes, so that a planned rebalance or a shutdown leaves nothing in
// doubt. Calls queued but not started never reached their tool: they are
// recorded not_executed at once.
func (e *Executor) drain(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for _, j := range e.disp.cancelQueued() {
		e.unrecorded = append(e.unrecorded, completion{job: j, outcome: tools.Outcome{Status: tools.NotExecuted, Code: "drained", Message: "the executor released the key before the call started"}})
	}
	if !e.stillMember(ctx) {
		e.cfg.Logger.Warn("this member was fenced out of the group; nothing can be recorded, keys with calls running stay in doubt", "calls", len(e.inflight))
		return nil
	}
	// Read-only calls are not in inflight (they have no record) but their
	// intents' offsets are committed: their answers must go out too.
	for e.callsPending() {
		if err := e.tick(ctx, nil); err != nil {
			return err
		}
		if !e.callsPending() || e.waitCompletion(ctx) != nil {
			break
		}
	}
	if n := len(e.inflight); n > 0 {
		e.cfg.Logger.Warn("drain timed out; keys with calls still running stay in doubt", "calls", n, "timeout", timeout)
	}
	return nil
}

// callsPending reports whether any call still owes an outcome or an
// answer: running or queued in the dispatcher, finished but not collected
// (a call sends its completion before it frees its slot), or collected
// but not committed.
func (e *Executor) callsPending() bool {
	return len(e.inflight) > 0 || len(e.unrecorded) > 0 || e.disp.queued() > 0 || len(e.disp.out) > 0
}

// stillMember asks the coordinator whether this member's generation is
// current. A member that lost its session (a zombie waking up) must not
// wait to record outcomes: every commit would be fenced, and the end of
// the transaction would wait for a heartbeat that cannot come.
func (e *Executor) stillMember(ctx context.Context) bool {
	member, gen := e.sess.Client().GroupMetadata()
	if member == "" || gen < 0 {
		return false
	}
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = e.cfg.Group, member, gen
	resp, err := req.RequestWith(ctx, e.sess.Client())
	if err != nil {
		return true // cannot tell: try, the fence still guards the commit
	}
	err = kerr.ErrorForCode(resp.ErrorCode)
	return err == nil || errors.Is(err, kerr.RebalanceInProgress)
}

// waitCompletion waits for one finished call, or 50 ms (a call's slot is
// released just after its completion is sent, so the drain re-checks), or
// the end of ctx, which it reports.
func (e *Executor) waitCompletion(ctx context.Context) error {
	select {
	case c := <-e.disp.out:
		e.unrecorded = append(e.unrecorded, c)
		return nil
	case <-time.After(50 * time.Millisecond):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// shutdown drains and returns; Close leaves the group.
func (e *Executor) shutdown() error {
	e.applyOwnershipChanges()
	err := e.drain(e.cfg.DrainTimeout)
	e.cancelCall()
	return err
}
