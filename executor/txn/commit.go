package txn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/kafkaretry"
)

// The transaction of a tick: begin, produce, end with the fence, confirm,
// and recover from an end whose outcome is unknown. Everything here waits
// out a broker that cannot be reached for up to BrokerOutage.

// Commit produces b's records in one transaction and ends it with the
// polled offsets, fenced by the group generation; a reported commit is
// then confirmed on b.Confirm's partitions. beforeEnd runs once the
// records are produced, before the end (the executor's fault points).
//
// An outcome other than Committed has been dealt with as far as the
// session goes: the consumer is back at what the group committed (and at
// the inputs of partitions seen aborted), and a transaction the member
// treats as aborted is recorded. A non-nil error is fatal (ErrFatal).
func (s *Session) Commit(ctx context.Context, b *Transaction, beforeEnd func()) (End, error) {
	if err := s.begin(); err != nil {
		return Unknown, err
	}
	promise := b.promise(s.cfg.Names.Events, s.cfg.Names.Intents)
	for _, r := range b.Records {
		s.gs.Produce(ctx, r, promise)
	}
	beforeEnd()
	start := time.Now()
	committed, try, err := s.endTxn(ctx, b)
	s.cfg.TxnDuration.Observe(time.Since(start).Seconds())
	switch {
	case err != nil:
		if err := s.recoverTxn(err); errors.Is(err, ErrFatal) {
			return Unknown, err
		}
		return s.settleUnknown(ctx, b, err)
	case !committed && try == kgo.TryCommit:
		return s.settleUnknown(ctx, b, errCommitNotReported)
	case !committed:
		// Seen to abort, and redone: a remnant must stay hidden. After an
		// error the outcome is unknown; settle decides by what the member
		// does next.
		if perr := b.produceErr(); perr != nil {
			s.cfg.Logger.Warn("transaction aborted: a record was not produced; the tick is redone", "err", perr,
				"producer_id", b.txn.pid, "producer_epoch", b.txn.epoch)
		}
		if err := s.recordAborted(b); err != nil {
			return Aborted, err
		}
		_, err := s.settle(b, nil)
		return Aborted, err
	}
	return s.confirmed(ctx, b)
}

// errCommitNotReported is the cause of an end of unknown outcome that
// franz-go reported as not committed, with no error, for a commit it was
// asked to try.
//
// Why it is not an abort: GroupTransactSession.End (franz-go v1.22.3)
// retries an EndTxn commit answered UNKNOWN_SERVER_ERROR or
// TRANSACTION_ABORTABLE as an abort and reports "not committed" without
// an error, although the broker may have applied the commit before it
// answered (an unexpected server error is exactly that). Taken for an
// abort, the commit's inputs would be decided again and its outcomes
// recorded again: two terminal answers for one intent. End gives no sign of
// whether it sent the commit (a rebalance, a refused offset commit or a
// failed heartbeat make it abort without trying), so every "not
// committed" after TryCommit is judged as an end of unknown outcome is:
// by the group's committed offsets and the markers (offsets.go).
var errCommitNotReported = errors.New("transaction end: commit not reported, and the broker may have applied it")

// confirmed confirms a reported commit (confirm.go) and reports
// Committed, or settles it as an end of unknown outcome and rewinds the
// inputs of the partitions seen aborted: their started events are gone.
func (s *Session) confirmed(ctx context.Context, b *Transaction) (End, error) {
	cf := s.confirm(ctx, b)
	if cf.err == nil {
		s.offsetsUnsure = false // the session's idea of committed is ours again
		s.pidChanged(b.txn)
		return Committed, nil
	}
	s.cfg.Logger.Error("a reported commit is not confirmed on the events partitions; its calls are not made",
		"err", cf.err, "partitions", len(b.Confirm), "producer_id", b.txn.pid, "producer_epoch", b.txn.epoch)
	if len(cf.aborted) > 0 {
		// Counted, with what kafka-dump-log needs to find it: the
		// transactional id, the producer, and the offsets of the started
		// events the broker aborted after EndTxn reported a commit.
		s.cfg.AbortedAfterCommit.Inc()
		s.cfg.Logger.Error("a transaction reported committed was aborted on events partitions",
			"transactional_id", s.cfg.TransactionalID, "producer_id", b.txn.pid, "producer_epoch", b.txn.epoch,
			"topic", s.cfg.Names.Events, "spans", b.spansOf(cf.aborted))
	}
	moved, err := s.settle(b, cf.err)
	if err != nil {
		return Unconfirmed, err
	}
	if !moved {
		if err := s.recordAborted(b); err != nil {
			return Unconfirmed, err
		}
	}
	if len(cf.aborted) > 0 {
		s.rewind(b.Polled, cf.aborted)
	}
	return Unconfirmed, nil
}

// Reset ends an empty transaction with an abort: the consumer goes back
// to the offsets last committed, so what was polled comes again, and the
// failed mark a group callback leaves on the session is cleared. what
// names the caller in an error, which is fatal.
func (s *Session) Reset(ctx context.Context, what string) error {
	if err := s.begin(); err != nil {
		return err
	}
	if _, err := s.gs.End(context.WithoutCancel(ctx), kgo.TryAbort); err != nil {
		if aerr := s.abortThroughOutage(); aerr != nil {
			return fmt.Errorf("%w: %s: %w (abort: %w)", ErrFatal, what, err, aerr)
		}
	}
	_, err := s.resyncOffsets()
	return err
}

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
func (s *Session) begin() error {
	retry := func(err error) bool { return kafkaretry.Retriable(err) && !errors.Is(err, kerr.ConcurrentTransactions) }
	if err := kafkaretry.Through(context.Background(), s.cfg.Logger, s.cfg.BrokerOutage, "begin transaction", retry, s.gs.Begin); err != nil {
		return fmt.Errorf("%w: begin transaction: %w", ErrFatal, err)
	}
	return nil
}

// endTxn ends the transaction, and says whether it asked for a commit.
// Its context is interruptible: a member
// that lost its session waits in End for a heartbeat that only a blocked
// group callback can unblock, so without Interrupt End would hang until
// its timeout.
func (s *Session) endTxn(ctx context.Context, b *Transaction) (committed bool, try kgo.TransactionEndTry, err error) {
	endCtx, done := s.interruptible(ctx)
	defer done()
	endCtx = kgo.PreTxnCommitFnContext(endCtx, s.fence(b.Touched))
	try = kgo.TryCommit
	if err := s.flush(ctx); err != nil || b.produceErr() != nil {
		try = kgo.TryAbort
	}
	s.noteProducer(ctx, b)
	b.tried = s.gs.Client().UncommittedOffsets()
	committed, err = s.gs.End(endCtx, try)
	return committed, try, err
}

// noteProducer keeps the producer id and epoch of the transaction (loaded
// by now), so that a hanging remnant of it can be closed the way this
// member saw it end (hanging.go). Not on the end's context: one that an
// Interrupt cancelled, or that a flush as long as the transaction timeout
// used up, would lose the id, and the transaction would go unrecorded
// among the member's own aborts (txnOf falls back to its records' id).
func (s *Session) noteProducer(ctx context.Context, b *Transaction) {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.TransactionTimeout)
	defer cancel()
	if pid, epoch, err := s.gs.Client().ProducerID(pctx); err == nil {
		b.txn, b.pidKnown = txnKey{pid, epoch}, true
	}
}

// flush waits until every record of the transaction is acknowledged,
// bounded by the transaction timeout but not by the group: only End can
// be stuck on a heartbeat, and a flush cut short would leave records
// buffered.
func (s *Session) flush(ctx context.Context) error {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.TransactionTimeout)
	defer cancel()
	return s.gs.Client().Flush(fctx)
}

// recoverTxn handles a failed End: the outcome of the transaction is
// unknown to us, so the client is told to abort (the documented retry,
// which bumps the producer epoch and fences whatever may still be open).
// While the broker cannot be reached the abort is retried (see
// abortThroughOutage); if it still fails the client is unusable and the
// process must restart (ErrFatal). Otherwise it returns cause.
//
// Records still buffered are dropped first. Why: when End's context is
// cancelled (a blocked group callback) before the flush completes, End
// returns without aborting them, and they would otherwise leave with the
// next transaction: a started event of an aborted tick committed behind
// the view's back, with no call ever dispatched for it.
func (s *Session) recoverTxn(cause error) error {
	if err := s.abortThroughOutage(); err != nil {
		return fmt.Errorf("%w: transaction end failed (%w) and the abort too: %w", ErrFatal, cause, err)
	}
	return cause
}

// abortThroughOutage drops the buffered records and aborts the open
// transaction, retrying for up to BrokerOutage while the failure is the
// broker being unreachable. Why: a broker restart refuses connections for
// seconds; giving up at once turned every broker bounce into a restart of
// every executor, each of which then failed its own start until the broker
// was back. Nothing else can progress meanwhile, so waiting here costs
// nothing, and the abort still fences whatever this producer left open.
// Any other error (fenced, fatal producer state) ends the wait at once.
func (s *Session) abortThroughOutage() error {
	return s.throughOutage(context.Background(), "abort", s.abortOnce)
}

func (s *Session) abortOnce() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.TransactionTimeout)
	defer cancel()
	if err := s.gs.Client().AbortBufferedRecords(ctx); err != nil {
		return err
	}
	return s.gs.Client().EndTransaction(ctx, kgo.TryAbort)
}

// throughOutage runs op through kafkaretry.Through, for up to BrokerOutage.
func (s *Session) throughOutage(ctx context.Context, what string, op func() error) error {
	return kafkaretry.Through(ctx, s.cfg.Logger, s.cfg.BrokerOutage, what, nil, op)
}

// pidChanged names this member's producer id in the log whenever it
// changes (at the first commit, and after a re-initialisation): hanging
// transactions and broker logs name producers by id, not by member.
func (s *Session) pidChanged(k txnKey) {
	if k.pid == s.loggedPID {
		return
	}
	s.loggedPID = k.pid
	s.cfg.Logger.Info("committing as producer", "producer_id", k.pid, "producer_epoch", k.epoch)
}
