package kfakeresp

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func interposed(t *testing.T) (*Interposer, *kadm.Client) {
	t.Helper()
	ip := NewInterposer()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ListenFn(ip.Listen))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return ip, kadm.NewClient(cl)
}

func topicExists(t *testing.T, adm *kadm.Client, topic string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	return td.Has(topic)
}

// An Errored answer is the broker's work with another answer: the topic is
// created, and the client hears the error.
func TestErroredAnswerIsAppliedAndReportsTheError(t *testing.T) {
	ip, adm := interposed(t)
	ip.Set(func(r Request) Verdict {
		if r.Req.Key() == int16(kmsg.CreateTopics) {
			return Verdict{Way: Errored, Code: kerr.InvalidReplicationFactor.Code}
		}
		return Verdict{}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, 1, 1, nil, "applied")
	if err == nil {
		err = resp.Err
	}
	if !errors.Is(err, kerr.InvalidReplicationFactor) {
		t.Fatalf("create answered %v, want INVALID_REPLICATION_FACTOR", err)
	}
	ip.Set(nil)
	if !topicExists(t, adm, "applied") {
		t.Fatal("the errored create was not applied")
	}
	if got := ip.Count(int16(kmsg.CreateTopics), Errored); got != 1 {
		t.Fatalf("errored creates counted %d, want 1", got)
	}
}

// A Lost answer is the broker's work with no answer: the client sees the
// connection end, and the topic exists.
func TestLostAnswerIsAppliedAndCutsTheConnection(t *testing.T) {
	ip, adm := interposed(t)
	ip.Set(func(r Request) Verdict {
		if r.Req.Key() == int16(kmsg.CreateTopics) {
			return Verdict{Way: Lost}
		}
		return Verdict{}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, 1, 1, nil, "lost")
	if err == nil {
		err = resp.Err
	}
	if err == nil {
		t.Fatal("the create whose answer was lost reported success")
	}
	ip.Set(nil)
	if !topicExists(t, adm, "lost") {
		t.Fatal("the create whose answer was lost was not applied")
	}
	if got := ip.Count(int16(kmsg.CreateTopics), Lost); got != 1 {
		t.Fatalf("lost creates counted %d, want 1", got)
	}
}

func TestSetErrorCodesTopLevelAndNested(t *testing.T) {
	end := kmsg.NewPtrEndTxnResponse()
	if n := SetErrorCodes(end, kerr.UnknownServerError.Code, false); n != 1 || end.ErrorCode != kerr.UnknownServerError.Code {
		t.Fatalf("EndTxn: set %d, code %d", n, end.ErrorCode)
	}
	produce := kmsg.NewPtrProduceResponse()
	tp := kmsg.NewProduceResponseTopic()
	tp.Partitions = append(tp.Partitions, kmsg.NewProduceResponseTopicPartition(), kmsg.NewProduceResponseTopicPartition())
	produce.Topics = append(produce.Topics, tp)
	if n := SetErrorCodes(produce, kerr.NotLeaderForPartition.Code, false); n != 2 {
		t.Fatalf("Produce: set %d codes, want 2", n)
	}
	fetch := kmsg.NewPtrFetchResponse()
	ft := kmsg.NewFetchResponseTopic()
	ft.Partitions = append(ft.Partitions, kmsg.NewFetchResponseTopicPartition())
	fetch.Topics = append(fetch.Topics, ft)
	if n := SetErrorCodes(fetch, kerr.UnknownServerError.Code, true); n != 1 || fetch.ErrorCode == 0 || fetch.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("Fetch top level: set %d, top %d, partition %d", n, fetch.ErrorCode, fetch.Topics[0].Partitions[0].ErrorCode)
	}
}

// The decider sees who sent a request, and a Delay holds the request
// before the broker reads it (a lower bound only: a sleep never ends
// early) without changing its answer.
func TestDelayHoldsTheRequestAndTheDeciderSeesTheClientID(t *testing.T) {
	ip := NewInterposer()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ListenFn(ip.Listen))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ClientID("who-asks"), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	const hold = 300 * time.Millisecond
	seen := make(chan string, 16)
	ip.Set(func(r Request) Verdict {
		if r.Req.Key() != int16(kmsg.CreateTopics) {
			return Verdict{}
		}
		seen <- r.ClientID
		return Verdict{Delay: hold}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "held")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("a held create failed: %v", err)
	}
	if took := time.Since(start); took < hold {
		t.Fatalf("the create was answered after %s, before its %s hold", took, hold)
	}
	if id := <-seen; id != "who-asks" {
		t.Fatalf("the decider saw client id %q, want who-asks", id)
	}
}
