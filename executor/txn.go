package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The transaction of a tick: begin, commit (produce, flush, end with the
// fence), recover from an end whose outcome is unknown, and the fence
// itself. Everything here waits out a broker that cannot be reached for up
// to BrokerOutage.

// begin starts a transaction, waiting out a broker outage like the abort:
// a client whose producer id must be (re)initialised needs the broker.
//
// CONCURRENT_TRANSACTIONS from Begin ends the wait at once: it is not the
// coordinator being busy but the client's producer id, failed for good.
// franz-go (v1.22.3) fails the id with that error when an EndTxn meets
// CONCURRENT_TRANSACTIONS until its context ends (kerr marks the code not
// retriable), which a leader or coordinator failover on a replicated
// cluster produces, and then answers every Begin with it. Waiting
// BrokerOutage out would only keep the member's partitions undecided
// longer: it stops now and its supervisor starts it with a new producer.
func (e *Executor) begin() error {
	err := e.throughOutageIf(context.Background(), "begin transaction", func(err error) bool {
		return brokerUnreachable(err) && !errors.Is(err, kerr.ConcurrentTransactions)
	}, e.sess.Begin)
	if err != nil {
		return fmt.Errorf("%w: begin transaction: %w", ErrFatal, err)
	}
	return nil
}

// commit produces the tick's records in one transaction and ends it with
// the polled offsets, fenced by the group generation.
func (e *Executor) commit(ctx context.Context, tr *txnRecords, hooks func()) (bool, error) {
	if err := e.begin(); err != nil {
		return false, err
	}
	promise := tr.promise(e.cfg.Names.Events)
	for _, r := range tr.out {
		e.sess.Produce(ctx, r, promise)
	}
	hooks()
	start := time.Now()
	committed, err := e.end(ctx, tr)
	e.m.TxnDuration.Observe(time.Since(start).Seconds())
	if err == nil && !committed {
		// Seen to abort, and redone: a remnant must stay hidden. After an
		// error the outcome is unknown; afterAbort decides by what the
		// member does next.
		e.recordAborted(tr.txn)
	}
	if err != nil {
		return false, e.recoverTxn(err)
	}
	return committed, nil
}

// end ends the transaction. Its context is cancelled when the group wants
// to run a callback that our poll is blocking: a member that lost its
// session waits in End for a heartbeat that only that callback can
// unblock, so without the cancel End would hang until its timeout.
func (e *Executor) end(ctx context.Context, tr *txnRecords) (bool, error) {
	endCtx, done := e.cancellableEnd(ctx)
	defer done()
	endCtx = kgo.PreTxnCommitFnContext(endCtx, e.fence(tr.touched))
	try := kgo.TryCommit
	if err := e.flush(ctx); err != nil || tr.failed() {
		try = kgo.TryAbort
	}
	// The producer id and epoch the tick's records carry (loaded by now),
	// so that a hanging remnant of this transaction can be closed the way
	// this member saw it end (hanging.go).
	if pid, epoch, err := e.sess.Client().ProducerID(endCtx); err == nil {
		tr.txn, tr.pidKnown = txnKey{pid, epoch}, true
	}
	tr.tried = e.sess.Client().UncommittedOffsets()
	return e.sess.End(endCtx, try)
}

// cancellableEnd is a context for the end of a transaction (and its
// confirmation), bounded by the transaction timeout and cancelled by
// onCallbackBlocked; done releases it.
func (e *Executor) cancellableEnd(ctx context.Context) (context.Context, func()) {
	endCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.TransactionTimeout)
	e.endMu.Lock()
	e.endCancel = cancel
	e.endMu.Unlock()
	return endCtx, func() {
		e.endMu.Lock()
		e.endCancel = nil
		e.endMu.Unlock()
		cancel()
	}
}

// flush waits until every record of the tick is acknowledged, bounded by
// the transaction timeout but not by the group: only End can be stuck on
// a heartbeat, and a flush cut short would leave records buffered.
func (e *Executor) flush(ctx context.Context) error {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.TransactionTimeout)
	defer cancel()
	return e.sess.Client().Flush(fctx)
}

// recoverTxn handles a failed End: the outcome of the transaction is
// unknown to us, so the client is told to abort (the documented retry,
// which bumps the producer epoch and fences whatever may still be open).
// While the broker cannot be reached the abort is retried (see
// abortThroughOutage); if it still fails the client is unusable and the
// process must restart.
//
// Records still buffered are dropped first. Why: when End's context is
// cancelled (a blocked group callback) before the flush completes, End
// returns without aborting them, and they would otherwise leave with the
// next transaction: a started event of an aborted tick committed behind
// the view's back, with no call ever dispatched for it.
func (e *Executor) recoverTxn(cause error) error {
	if err := e.abortThroughOutage(); err != nil {
		return fmt.Errorf("%w: transaction end failed (%w) and the abort too: %w", ErrFatal, cause, err)
	}
	return cause
}

// recordAborted keeps k among the transactions this member treated as
// aborted. A failed write is logged, not fatal: the remnant it protects
// is rare, and losing the record costs at most a repeated answer.
func (e *Executor) recordAborted(k txnKey) {
	if err := e.aborted.add(k, time.Now()); err != nil {
		e.cfg.Logger.Error("recording an aborted transaction failed", "producer_id", k.pid, "producer_epoch", k.epoch, "err", err)
	}
}

// abortThroughOutage drops the buffered records and aborts the open
// transaction, retrying for up to BrokerOutage while the failure is the
// broker being unreachable. Why: a broker restart refuses connections for
// seconds; giving up at once turned every broker bounce into a restart of
// every executor, each of which then failed its own start until the broker
// was back. Nothing else can progress meanwhile, so waiting here costs
// nothing, and the abort still fences whatever this producer left open.
// Any other error (fenced, fatal producer state) ends the wait at once.
func (e *Executor) abortThroughOutage() error {
	return e.throughOutage(context.Background(), "abort", e.abortOnce)
}

// throughOutage runs op until it succeeds, fails for a reason other than
// an unreachable broker, ctx ends, or BrokerOutage has passed, backing off
// from 250 ms to 5 s. It returns op's last error.
func (e *Executor) throughOutage(ctx context.Context, what string, op func() error) error {
	return e.throughOutageIf(ctx, what, brokerUnreachable, op)
}

// throughOutageIf is throughOutage with retry deciding which errors are
// waited out.
func (e *Executor) throughOutageIf(ctx context.Context, what string, retry func(error) bool, op func() error) error {
	deadline := time.Now().Add(e.cfg.BrokerOutage)
	backoff := outageFirstBackoff
	for attempt := 1; ; attempt++ {
		err := op()
		if err == nil {
			if attempt > 1 {
				e.cfg.Logger.Info(what+" succeeded after the broker came back", "attempts", attempt)
			}
			return nil
		}
		if !retry(err) || time.Now().Add(backoff).After(deadline) {
			return err
		}
		e.cfg.Logger.Warn(what+" failed: broker unreachable; retrying", "err", err, "attempt", attempt, "backoff", backoff)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, outageMaxBackoff)
	}
}

func (e *Executor) abortOnce() error {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.TransactionTimeout)
	defer cancel()
	if err := e.sess.Client().AbortBufferedRecords(ctx); err != nil {
		return err
	}
	return e.sess.Client().EndTransaction(ctx, kgo.TryAbort)
}

// brokerUnreachable reports whether err is a transport failure (refused,
// reset, timed out, no coordinator yet) rather than a verdict of the
// broker on this producer.
func brokerUnreachable(err error) bool {
	var ne net.Error
	var ke *kerr.Error
	switch {
	case errors.As(err, &ne), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, context.DeadlineExceeded), kgo.IsRetryableBrokerErr(err):
		return true
	case errors.As(err, &ke):
		return ke.Retriable || errors.Is(err, kerr.CoordinatorNotAvailable) || errors.Is(err, kerr.NotCoordinator) ||
			errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.ConcurrentTransactions)
	}
	return false
}

// resyncOffsets moves the consumer to the offsets the group really has
// committed, after a transaction end whose outcome we do not know.
//
// Why: when EndTxn reaches the coordinator but its answer does not reach
// us (the broker dies in between), the transaction commits while the
// session reports an error and rewinds to the offsets it last saw
// committed. Every intent of that transaction would then be decided again
// and answered a second time (found by the chaos harness: two terminal
// answers for one intent after a broker bounce). The session keeps
// rewinding to its stale idea of "committed" after every abort until a
// commit of its own succeeds, so the resync runs after each rewind until
// then.
//
// Not RequireStable: once the abort has succeeded our own last
// transaction is settled (the coordinator answers the epoch bump only
// after the previous transaction's markers are written), and pending
// offsets of other members (a partition that is moving in a rebalance we
// are blocking) would otherwise make us wait for them while they wait for
// us.
func (e *Executor) resyncOffsets() (map[string]map[int32]kgo.EpochOffset, error) {
	if !e.offsetsUnsure || len(e.core.Owned()) == 0 {
		return nil, nil
	}
	deadline := time.Now().Add(e.cfg.BrokerOutage)
	for {
		set, err := e.fetchCommitted()
		if err == nil {
			e.sess.Client().SetOffsets(set)
			e.cfg.Logger.Info("consumer moved to the committed offsets after an unconfirmed transaction end", "offsets", set)
			return set, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: committed offsets unknown after a failed transaction end: %w", ErrFatal, err)
		}
		e.cfg.Logger.Warn("fetching committed offsets failed; retrying", "err", err)
		time.Sleep(resyncRetry)
	}
}

// fetchCommitted returns the group's stable committed offsets of the
// partitions this member owns; partitions with no commit are left out
// (the session's rewind to the reset offset is then right).
func (e *Executor) fetchCommitted() (map[string]map[int32]kgo.EpochOffset, error) {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.TransactionTimeout)
	defer cancel()
	resps, err := e.adm.FetchOffsetsForTopics(ctx, e.cfg.Group, e.cfg.Names.Intents, e.cfg.Names.Control)
	if err != nil {
		return nil, err
	}
	set := map[string]map[int32]kgo.EpochOffset{}
	for _, p := range e.core.Owned() {
		for _, t := range []string{e.cfg.Names.Intents, e.cfg.Names.Control} {
			r, ok := resps.Lookup(t, p)
			if !ok {
				continue
			}
			if r.Err != nil {
				return nil, fmt.Errorf("offset of %s/%d: %w", t, p, r.Err)
			}
			if r.At < 0 {
				continue
			}
			if set[t] == nil {
				set[t] = map[int32]kgo.EpochOffset{}
			}
			set[t][p] = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.At}
		}
	}
	return set, nil
}

// fence makes every transaction that writes events for partition p carry a
// TxnOffsetCommit for partition p, even a tick that polled nothing from p
// (one that only records outcomes).
//
// Why: the session commits only offsets that moved. A transaction with no
// offsets is not checked against the group generation, so a zombie (a
// member paused past its session timeout) could commit an outcome into a
// partition that now has another owner. Re-committing the current offset
// costs one partition entry and makes the broker reject the transaction
// with ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID once the member is stale.
// It also makes a new owner's stable offset fetch (KIP-447) wait for this
// transaction, which the restore relies on.
func (e *Executor) fence(touched map[int32]bool) func(*kmsg.TxnOffsetCommitRequest) error {
	committed := e.sess.Client().CommittedOffsets()
	n := e.cfg.Names
	return func(req *kmsg.TxnOffsetCommitRequest) error {
		for p := range touched {
			if hasPartition(req, n.Intents, p) || hasPartition(req, n.Control, p) {
				continue
			}
			for _, topic := range []string{n.Intents, n.Control} {
				if eo, ok := committed[topic][p]; ok && eo.Offset >= 0 {
					addPartition(req, topic, p, eo)
					break
				}
			}
		}
		return nil
	}
}

func hasPartition(req *kmsg.TxnOffsetCommitRequest, topic string, p int32) bool {
	for _, t := range req.Topics {
		if t.Topic != topic {
			continue
		}
		for _, rp := range t.Partitions {
			if rp.Partition == p {
				return true
			}
		}
	}
	return false
}

func addPartition(req *kmsg.TxnOffsetCommitRequest, topic string, p int32, eo kgo.EpochOffset) {
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = p, eo.Offset, eo.Epoch
	rp.Metadata = &req.MemberID
	for i := range req.Topics {
		if req.Topics[i].Topic == topic {
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
			return
		}
	}
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
}
