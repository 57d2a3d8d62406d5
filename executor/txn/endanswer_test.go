package txn

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/atmostonce/toolexec/internal/testing/kfakeresp"
)

// TestCommitAppliedWhateverItsAnswer: the broker applies a tick's EndTxn
// commit and then answers it with an error code, or never answers. Only a
// confirmed commit may be taken for one (a retried EndTxn that the broker
// answers with success, then the markers, confirm it), and nothing but a
// seen abort for an abort: whatever the answer, the session must not
// report the tick aborted, must not keep it among its own aborts (a remnant of it would be
// closed with an abort), and must leave the consumer past the committed
// inputs, so that they are not decided and answered again.
func TestCommitAppliedWhateverItsAnswer(t *testing.T) {
	answers := []kfakeresp.Verdict{
		{Way: kfakeresp.Lost},
		{Way: kfakeresp.Errored, Code: kerr.UnknownServerError.Code},
		{Way: kfakeresp.Errored, Code: kerr.TransactionAbortable.Code},
		{Way: kfakeresp.Errored, Code: kerr.InvalidTxnState.Code},
		{Way: kfakeresp.Errored, Code: kerr.InvalidProducerEpoch.Code},
		{Way: kfakeresp.Errored, Code: kerr.ProducerFenced.Code},
		{Way: kfakeresp.Errored, Code: kerr.InvalidProducerIDMapping.Code},
		{Way: kfakeresp.Errored, Code: kerr.ConcurrentTransactions.Code},
		{Way: kfakeresp.Errored, Code: kerr.NotCoordinator.Code},
		{Way: kfakeresp.Errored, Code: kerr.CoordinatorNotAvailable.Code},
		{Way: kfakeresp.Errored, Code: kerr.CoordinatorLoadInProgress.Code},
		{Way: kfakeresp.Errored, Code: kerr.RequestTimedOut.Code},
		{Way: kfakeresp.Errored, Code: kerr.TransactionalIDAuthorizationFailed.Code},
		{Way: kfakeresp.Errored, Code: kerr.UnknownProducerID.Code},
	}
	for _, v := range answers {
		name := v.Way.String()
		if v.Way == kfakeresp.Errored {
			name = kerr.ErrorForCode(v.Code).(*kerr.Error).Message
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			commitAppliedAnswered(t, v)
		})
	}
}

func commitAppliedAnswered(t *testing.T, v kfakeresp.Verdict) {
	ip := kfakeresp.NewInterposer()
	c := newClusterWith(t, kfake.ListenFn(ip.Listen))
	s := newSession(t, c, "applied")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	produceInputs(t, c, 3)
	polled := pollN(ctx, t, s, 3)
	var fired atomic.Bool
	ip.Set(func(r kfakeresp.Request) kfakeresp.Verdict {
		if end, ok := r.Req.(*kmsg.EndTxnRequest); ok && end.Commit && fired.CompareAndSwap(false, true) {
			return v
		}
		return kfakeresp.Verdict{}
	})
	b := &Transaction{Records: []*kgo.Record{event("started")}, Touched: map[int32]bool{0: true},
		Polled: polled, Confirm: map[int32]bool{0: true}}
	out, err := s.Commit(ctx, b, func() {})
	ip.Set(nil)
	if !fired.Load() {
		t.Fatal("no EndTxn commit was interposed: the test did not exercise the fault")
	}
	if got := committedEvents(t, c); len(got) != 1 || got[0] != "started" {
		t.Fatalf("committed events %q: the commit was not applied", got)
	}
	if err != nil {
		return // fatal: the member stops, and its successor reads the log
	}
	if out == Aborted {
		t.Fatalf("Commit reported %v for a commit answered %v%s", out, v.Way, codeName(v))
	}
	if s.aborted.aborted(b.txn.pid, b.txn.epoch) {
		t.Fatalf("a committed transaction (%+v) is kept among the member's own aborts", b.txn)
	}
	produceInputs(t, c, 1)
	again := pollN(ctx, t, s, 1)
	if again[0].Offset != 3 {
		t.Fatalf("after a commit answered %v%s the consumer polled offset %d, want 3 (past the committed inputs)",
			v.Way, codeName(v), again[0].Offset)
	}
}

func codeName(v kfakeresp.Verdict) string {
	if v.Way != kfakeresp.Errored {
		return ""
	}
	return fmt.Sprintf(" %v", kerr.ErrorForCode(v.Code))
}
