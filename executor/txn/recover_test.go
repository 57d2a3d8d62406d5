package txn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRecoverDropsBufferedRecords: a transaction end that fails while
// records are still buffered (its context was cancelled by a blocked
// group callback before the flush) must not let those records leave with
// the next transaction: a started event of an aborted tick would be
// committed behind the view's back, with no call ever dispatched for it. A long linger keeps the record of the failed tick in
// the buffer, as the cancelled flush did.
func TestRecoverDropsBufferedRecords(t *testing.T) {
	const topic = "ev"
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic, "in"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(c.ListenAddrs()...), kgo.TransactionalID("rec-1"),
		kgo.ConsumerGroup("g"), kgo.ConsumeTopics("in"), kgo.ProducerLinger(time.Minute),
		kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	e := &Session{gs: sess, cfg: Config{TransactionTimeout: 5 * time.Second, BrokerOutage: 10 * time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // generous: CI runs it beside other packages under -race
	defer cancel()

	if err := sess.Begin(); err != nil {
		t.Fatal(err)
	}
	sess.Produce(ctx, &kgo.Record{Value: []byte("aborted tick")}, nil)
	cause := errors.New("transaction end cancelled")
	if err := e.recoverTxn(cause); !errors.Is(err, cause) || errors.Is(err, ErrFatal) {
		t.Fatalf("recoverTxn: %v", err)
	}

	if err := sess.Begin(); err != nil {
		t.Fatal(err)
	}
	sess.Produce(ctx, &kgo.Record{Value: []byte("next tick")}, nil)
	if committed, err := sess.End(ctx, kgo.TryCommit); err != nil || !committed {
		t.Fatalf("next tick: committed %v, %v", committed, err)
	}

	rd, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var got []string
	for len(got) == 0 && ctx.Err() == nil {
		fs := rd.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	// Give a leaked record time to show up behind the first one.
	pctx, pcancel := context.WithTimeout(ctx, time.Second)
	defer pcancel()
	rd.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	if len(got) != 1 || got[0] != "next tick" {
		t.Fatalf("committed records %q, want only the next tick's; the log holds %s", got, uncommittedOf(c, topic))
	}
}

// uncommittedOf lists every record of topic, committed or not, with its
// offset: what a failure of the test above needs to tell a record never
// written from one a transaction left open.
func uncommittedOf(c *kfake.Cluster, topic string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	rd, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err.Error()
	}
	defer rd.Close()
	var out []string
	for ctx.Err() == nil {
		rd.PollFetches(ctx).EachRecord(func(r *kgo.Record) { out = append(out, fmt.Sprintf("%d:%q", r.Offset, r.Value)) })
	}
	return fmt.Sprint(out)
}
