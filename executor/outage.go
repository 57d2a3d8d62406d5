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

	"github.com/atmostonce/toolexec/topicadmin"
)

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
	deadline := time.Now().Add(e.cfg.BrokerOutage)
	backoff := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := op()
		if err == nil {
			if attempt > 1 {
				e.cfg.Logger.Info(what+" succeeded after the broker came back", "attempts", attempt)
			}
			return nil
		}
		if !brokerUnreachable(err) || time.Now().Add(backoff).After(deadline) {
			return err
		}
		e.cfg.Logger.Warn(what+" failed: broker unreachable; retrying", "err", err, "attempt", attempt, "backoff", backoff)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
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
	if !e.offsetsUnsure || len(e.owned) == 0 {
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
		time.Sleep(500 * time.Millisecond)
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
	for p := range e.owned {
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

// begin starts a transaction, waiting out a broker outage like the abort:
// a client whose producer id must be (re)initialised needs the broker.
func (e *Executor) begin() error {
	if err := e.throughOutage(context.Background(), "begin transaction", e.sess.Begin); err != nil {
		return fmt.Errorf("%w: begin transaction: %w", ErrFatal, err)
	}
	return nil
}

// ensureTopics creates or checks the topics, waiting out a broker that
// cannot be reached yet (up to BrokerOutage or ctx): an executor started
// while its broker restarts should come up with it, not crash-loop.
func (e *Executor) ensureTopics(ctx context.Context) (topicadmin.Layout, error) {
	var layout topicadmin.Layout
	err := e.throughOutage(ctx, "topic check at start", func() (err error) {
		layout, err = topicadmin.Ensure(ctx, e.adm, e.cfg.Names, e.cfg.Settings)
		return err
	})
	return layout, err
}
