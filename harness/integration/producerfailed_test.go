package integration

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/atmostonce/toolexec/executor"
	"github.com/atmostonce/toolexec/wire"
)

// TestCommitRefusedAsConcurrentStopsTheMember: the transaction
// coordinator answers a commit CONCURRENT_TRANSACTIONS until the
// executor's End gives up (on a cluster: a coordinator still writing the
// markers of the previous transaction to a partition whose leader just
// died). franz-go then fails the producer id for good and answers every
// Begin with that error. The member must not retry Begin for
// BrokerOutage (2 min by default) with its partitions undecided: it
// stops at once with ErrFatal, and nothing was called.
//
// On a private kfake: the fault needs its request control.
func TestCommitRefusedAsConcurrentStopsTheMember(t *testing.T) {
	u := newUnconfirmed(t, "crc", "", func(c *executor.Config) { c.TransactionTimeout, c.BrokerOutage = 3*time.Second, time.Minute })
	var refused atomic.Int32
	u.cluster.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		u.cluster.KeepControl()
		r := req.(*kmsg.EndTxnRequest)
		if !r.Commit {
			return nil, nil, false
		}
		refused.Add(1)
		resp := r.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = kerr.ConcurrentTransactions.Code
		return resp, nil, true
	})
	go func() { _, _ = u.client.Call(u.ctx, wire.Intent{Tool: "t.ok", Key: "crc-1", Args: map[string]any{}}) }()
	start := time.Now()
	select {
	case <-u.ended:
		if !errors.Is(u.runErr, executor.ErrFatal) || !errors.Is(u.runErr, kerr.ConcurrentTransactions) {
			t.Fatalf("Run ended with %v, want ErrFatal naming CONCURRENT_TRANSACTIONS", u.runErr)
		}
		t.Logf("the member stopped %s after the call was sent: %v", time.Since(start).Round(time.Millisecond), u.runErr)
	case <-time.After(40 * time.Second):
		t.Fatalf("the member still runs 40 s after its commit was refused %d times (BrokerOutage is 1 min)", refused.Load())
	}
	if refused.Load() == 0 {
		t.Fatal("no commit was refused: the test did not exercise the fault")
	}
	if n := u.ledger.total(); n != 0 {
		t.Fatalf("the tool saw %d requests; its started event never committed", n)
	}
}
