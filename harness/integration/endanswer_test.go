package integration

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/internal/testing/kfakeresp"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/wire"
)

// TestCommitAnsweredWithAnErrorIsNotAnsweredTwice: the broker applies the
// commit of the tick that records a call's outcome and answers its EndTxn
// UNKNOWN_SERVER_ERROR (or TRANSACTION_ABORTABLE). franz-go retries such a
// commit as an abort and reports "not committed" with no error; taken for
// an abort, the tick was redone on a view that never saw it: the outcome
// was logged twice and the intent answered twice. The tick is now an end
// of unknown outcome: its partition catches up from the log first, and the
// outcome is recorded and answered once.
func TestCommitAnsweredWithAnErrorIsNotAnsweredTwice(t *testing.T) {
	for _, code := range []*kerr.Error{kerr.UnknownServerError, kerr.TransactionAbortable} {
		t.Run(code.Message, func(t *testing.T) { commitAnsweredWithAnError(t, code) })
	}
}

func commitAnsweredWithAnError(t *testing.T, code *kerr.Error) {
	u := newUnconfirmed(t, "cae", "")
	u.callOK(t, "cae-0") // the partition is restored and a first commit went through
	in := wire.Intent{ID: client.NewID(), Tool: "t.block", Key: "cae-1", Args: map[string]any{"n": 1}}
	results := collectOn(t, u.seeds, u.names.Results)
	go func() { _, _ = u.client.Call(u.ctx, in) }()
	u.ledger.waitArrivals(t, 2, 30*time.Second) // cae-0, then cae-1: its started event committed
	var fired atomic.Bool
	u.ip.Set(func(r kfakeresp.Request) kfakeresp.Verdict {
		if end, ok := r.Req.(*kmsg.EndTxnRequest); ok && end.Commit && fired.CompareAndSwap(false, true) {
			return kfakeresp.Verdict{Way: kfakeresp.Errored, Code: code.Code}
		}
		return kfakeresp.Verdict{}
	})
	u.ledger.releaseAll()
	if res := results.waitResult(t, in.ID, 60*time.Second); res.Status != codes.StatusSucceeded {
		t.Fatalf("cae-1 answered %+v", res)
	}
	if !fired.Load() {
		t.Fatal("no EndTxn commit was answered with an error: the test did not exercise the fault")
	}
	// One partition: an answer of cae-2 comes after any second answer of
	// cae-1, so none can still be on its way.
	after := wire.Intent{ID: client.NewID(), Tool: "t.ok", Key: "cae-2", Args: map[string]any{"n": 2}}
	if res, err := u.client.Call(u.ctx, after); err != nil || res.Status != codes.StatusSucceeded {
		t.Fatalf("cae-2: %+v %v", res, err)
	}
	results.waitResult(t, after.ID, 30*time.Second)
	if n := len(results.results(in.ID)); n != 1 {
		t.Fatalf("cae-1 got %d answers, want 1", n)
	}
	evs := keyEvents(t, u.adm, u.seeds, u.names.Events, 1, wire.RoutingKey(wire.DefaultTenant, "cae-1"))
	if k := kinds(evs); len(k) != 2 || k[0] != saga.EvStarted || k[1] != saga.EvOutcome {
		t.Fatalf("cae-1's committed events are %v, want started, outcome", k)
	}
	if n := u.ledger.total(); n != 3 {
		t.Fatalf("the tool saw %d requests, want 3 (cae-0, cae-1 and cae-2 once each)", n)
	}
}
