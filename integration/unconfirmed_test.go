package integration

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/atmostonce/toolexec/client"
	"github.com/atmostonce/toolexec/executor"
	"github.com/atmostonce/toolexec/topics"
)

// TestUnconfirmedCommitIsNotDecidedTwice: the broker commits a transaction
// but its answer never reaches the executor (the connection drops after
// the EndTxn is applied, as when a broker dies between the two). The
// session then reports an error and rewinds to the offsets it last knew
// committed. Before the fix, every intent of that transaction was decided
// again and answered a second time (the chaos harness saw two terminal
// answers for one intent after broker bounces). Now the executor moves to
// the offsets the group really committed: one answer per intent.
//
// It runs on a private kfake cluster whatever broker the suite uses: the
// fault needs kfake's request control.
func TestUnconfirmedCommitIsNotDecidedTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	seeds := cluster.ListenAddrs()
	names := topics.NamesWithPrefix("uc.")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	raw, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(raw.Close)
	if _, err := topics.Ensure(ctx, kadm.NewClient(raw), names, topics.Settings{Partitions: 1, MinEventRetention: 48 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	l := newLedger(t)
	drop := &commitDropper{cluster: cluster, seeds: seeds}
	cluster.ControlKey(int16(kmsg.EndTxn), drop.control)

	ex, err := executor.New(ctx, executor.Config{
		Brokers: seeds, Names: names, Group: "uc", DataDir: t.TempDir(), Tools: registry(t, l.toolsYAML("")),
		SessionTimeout: 3 * time.Second, RebalanceTimeout: 10 * time.Second, DrainTimeout: 5 * time.Second,
		TransactionTimeout: 6 * time.Second,
		Logger:             slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: logLevel()})),
		Settings:           topics.Settings{Partitions: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ex.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done; ex.Close() })

	c, err := client.New(ctx, client.Config{Brokers: seeds, Prefix: "uc."})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	first := topics.Intent{Tool: "t.ok", Key: "uc-1", Args: map[string]any{"n": 1}}
	if res, err := c.Call(ctx, first); err != nil || res.Status != topics.StatusSucceeded {
		t.Fatalf("first call: %+v %v", res, err)
	}

	// A duplicate: its tick answers it (a replay) and commits, and that
	// commit's answer is lost.
	drop.arm()
	dup := first
	dup.ID = client.NewID()
	results := collectOn(t, seeds, names.Results)
	if _, err := c.Call(ctx, dup); err != nil {
		t.Fatalf("duplicate: %v", err)
	}
	if !drop.fired() {
		t.Fatal("no transaction commit was intercepted: the test did not exercise the fault")
	}
	// The executor gives up on End after its transaction timeout, aborts,
	// and goes on; a second answer would come then.
	next := topics.Intent{Tool: "t.ok", Key: "uc-2", Args: map[string]any{"n": 2}}
	if res, err := c.Call(ctx, next); err != nil || res.Status != topics.StatusSucceeded {
		t.Fatalf("call after the fault: %+v %v", res, err)
	}
	time.Sleep(2 * time.Second)
	if n := len(results.results(dup.ID)); n != 1 {
		t.Fatalf("the duplicate got %d answers, want 1", n)
	}
	if n := l.total(); n != 2 {
		t.Fatalf("the tool saw %d requests, want 2 (uc-1 and uc-2 once each)", n)
	}
}

// commitDropper applies the first armed EndTxn commit through a side
// connection and then closes the executor's connection instead of
// answering it, for that request and every retry of it.
type commitDropper struct {
	cluster *kfake.Cluster
	seeds   []string

	mu      sync.Mutex
	armed   bool
	side    bool
	applied bool
	pid     int64
	epoch   int16
}

func (d *commitDropper) arm() { d.mu.Lock(); d.armed = true; d.mu.Unlock() }

func (d *commitDropper) fired() bool { d.mu.Lock(); defer d.mu.Unlock(); return d.applied }

var errDropped = errors.New("test: connection dropped after the commit was applied")

func (d *commitDropper) control(req kmsg.Request) (kmsg.Response, error, bool) {
	d.cluster.KeepControl()
	r := req.(*kmsg.EndTxnRequest)
	d.mu.Lock()
	switch {
	case d.side || !d.armed || !r.Commit:
		d.mu.Unlock()
		return nil, nil, false
	case d.applied:
		retry := r.ProducerID == d.pid && r.ProducerEpoch == d.epoch
		d.mu.Unlock()
		if retry {
			return nil, errDropped, true
		}
		return nil, nil, false
	}
	d.side, d.applied, d.pid, d.epoch = true, true, r.ProducerID, r.ProducerEpoch
	d.mu.Unlock()
	sideDone := make(chan struct{})
	go func() {
		defer close(sideDone)
		cl, err := kgo.NewClient(kgo.SeedBrokers(d.seeds...))
		if err != nil {
			return
		}
		defer cl.Close()
		cp := *r
		_, _ = cp.RequestWith(context.Background(), cl)
	}()
	d.cluster.SleepControl(func() { <-sideDone })
	d.mu.Lock()
	d.side = false
	d.mu.Unlock()
	return nil, errDropped, true
}
