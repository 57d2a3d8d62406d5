package integration

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/atmostonce/toolexec/client"
	"github.com/atmostonce/toolexec/executor"
	"github.com/atmostonce/toolexec/topicadmin"
	"github.com/atmostonce/toolexec/topics"
)

// TestCommitRefusedAsConcurrentStopsTheMember: the transaction
// coordinator answers a commit CONCURRENT_TRANSACTIONS until the
// executor's End gives up (on a cluster: a coordinator still writing the
// markers of the previous transaction to a partition whose leader just
// died). franz-go then fails the producer id for good and answers every
// Begin with that error. Before the fix the member retried Begin for
// BrokerOutage (2 min by default) with its partitions undecided; now it
// stops at once with ErrFatal, and nothing was called.
//
// On a private kfake: the fault needs its request control.
func TestCommitRefusedAsConcurrentStopsTheMember(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	seeds, names := cluster.ListenAddrs(), topics.NamesWithPrefix("crc.")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	raw, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(raw.Close)
	var refused atomic.Int32
	cluster.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		r := req.(*kmsg.EndTxnRequest)
		if !r.Commit {
			return nil, nil, false
		}
		refused.Add(1)
		resp := r.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = kerr.ConcurrentTransactions.Code
		return resp, nil, true
	})
	l := newLedger(t)
	ex, err := executor.New(ctx, executor.Config{
		Brokers: seeds, Names: names, Group: "crc", DataDir: t.TempDir(), Tools: registry(t, l.toolsYAML("")),
		SessionTimeout: 3 * time.Second, RebalanceTimeout: 10 * time.Second, DrainTimeout: 5 * time.Second,
		TransactionTimeout: 3 * time.Second, BrokerOutage: time.Minute,
		Logger:   slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: logLevel()})),
		Settings: topicadmin.Settings{Partitions: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ex.Run(context.Background()) }()
	t.Cleanup(ex.Close)
	c, err := client.New(ctx, client.Config{Brokers: seeds, Prefix: "crc."})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	go func() { _, _ = c.Call(ctx, topics.Intent{Tool: "t.ok", Key: "crc-1", Args: map[string]any{}}) }()
	start := time.Now()
	select {
	case err := <-done:
		if !errors.Is(err, executor.ErrFatal) || !errors.Is(err, kerr.ConcurrentTransactions) {
			t.Fatalf("Run ended with %v, want ErrFatal naming CONCURRENT_TRANSACTIONS", err)
		}
		t.Logf("the member stopped %s after the call was sent: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(40 * time.Second):
		t.Fatalf("the member still runs 40 s after its commit was refused %d times (BrokerOutage is 1 min)", refused.Load())
	}
	if refused.Load() == 0 {
		t.Fatal("no commit was refused: the test did not exercise the fault")
	}
	if n := l.total(); n != 0 {
		t.Fatalf("the tool saw %d requests; its started event never committed", n)
	}
}
