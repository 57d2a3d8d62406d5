package integration

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The hanging-transaction repair (executor/txn/hanging.go) aborts a remnant
// when its coordinator's last word on the producer is CompleteAbort at the
// remnant's epoch + 1: a coordinator can time out a killed writer's
// transaction that way while its abort markers never reach the partitions
// (docs/RELIABILITY.md). This checks the broker property the
// rule rests on: a transaction whose writer goes silent is aborted by its
// coordinator at the next epoch, and DescribeTransactions says so.
func TestAbandonedTransactionIsAbortedAtNextEpoch(t *testing.T) {
	if !realKafka {
		// kfake times the transaction out to state Empty, not
		// CompleteAbort; it never leaves a remnant, so the rule never runs
		// there.
		t.Skip("a property of Apache Kafka's coordinator; kfake models the timeout differently")
	}
	e := newEnv(t, 1)
	txnID := e.prefix + "abandoned"
	w, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(2*time.Second), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := w.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	r := &kgo.Record{Topic: e.names.Events, Partition: 0, Key: []byte("k"), Value: []byte("v")}
	if err := w.ProduceSync(ctx, r).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The writer goes silent with its transaction open, as a killed one
	// does; it is closed only after the coordinator has decided.
	defer w.Close()

	for {
		d, err := e.adm.DescribeTransactions(ctx, txnID)
		if err != nil {
			t.Fatalf("%s: describe transactions: %v", brokerName(), err)
		}
		got, err := d.On(txnID, nil)
		if err != nil || got.Err != nil {
			t.Fatalf("%s: describe %s: %v %v", brokerName(), txnID, err, got.Err)
		}
		if got.State == "CompleteAbort" {
			if got.ProducerID != r.ProducerID || got.ProducerEpoch != r.ProducerEpoch+1 {
				t.Fatalf("%s: aborted as producer %d epoch %d; the data was written as %d epoch %d (want epoch %d)",
					brokerName(), got.ProducerID, got.ProducerEpoch, r.ProducerID, r.ProducerEpoch, r.ProducerEpoch+1)
			}
			return
		}
		if got.State != "Ongoing" && got.State != "PrepareAbort" {
			t.Fatalf("%s: state %s, want Ongoing until the timeout, then CompleteAbort", brokerName(), got.State)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: transaction still %s 60 s after its 2 s timeout", brokerName(), got.State)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
