package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

// produceRaw writes bytes to a topic partition as an agent in any language
// might (partition -1: the owner by murmur2).
func (e *env) produceRaw(topic string, partition int32, key string, value []byte, headers ...kgo.RecordHeader) {
	e.t.Helper()
	if partition < 0 {
		partition = wire.Partition(key, e.partitions)
	}
	r := &kgo.Record{Topic: topic, Partition: partition, Key: []byte(key), Value: value, Headers: headers}
	if key == "" {
		r.Key = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.raw.ProduceSync(ctx, r).FirstErr(); err != nil {
		e.t.Fatal(err)
	}
}

func mustMsgpack(t *testing.T, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// collector reads a topic from the start, read-committed, in the
// background, and indexes what it reads.
type collector struct {
	cl *kgo.Client
	mu sync.Mutex
	rs []*kgo.Record
}

func (e *env) collect(topic string) *collector {
	e.t.Helper()
	return collectOn(e.t, brokers, topic)
}

// collectOn is collect on any cluster (a test's private kfake, say).
func collectOn(t *testing.T, seeds []string, topic string) *collector {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	c := &collector{cl: cl}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			fs.EachRecord(func(r *kgo.Record) { c.mu.Lock(); c.rs = append(c.rs, r); c.mu.Unlock() })
		}
	}()
	t.Cleanup(func() { cl.Close(); <-done })
	return c
}

func (c *collector) records() []*kgo.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*kgo.Record(nil), c.rs...)
}

// results returns every answer to intentID seen so far.
func (c *collector) results(intentID string) []*wire.Result {
	var out []*wire.Result
	for _, r := range c.records() {
		if res, err := wire.DecodeResult(r.Value); err == nil && res.IntentID == intentID {
			out = append(out, res)
		}
	}
	return out
}

// waitResult waits for a terminal answer to intentID.
func (c *collector) waitResult(t *testing.T, intentID string, within time.Duration) *wire.Result {
	t.Helper()
	if res := c.terminalWithin(intentID, within); res != nil {
		return res
	}
	t.Fatalf("no terminal answer to %s within %s (saw %d answers)", intentID, within, len(c.results(intentID)))
	return nil
}

// terminalWithin waits for a terminal answer to intentID, or returns nil.
func (c *collector) terminalWithin(intentID string, within time.Duration) *wire.Result {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for _, res := range c.results(intentID) {
			if codes.Terminal(res.Status) {
				return res
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// deadLetters decodes every dead letter seen so far.
func (c *collector) deadLetters() []*wire.DeadLetter {
	var out []*wire.DeadLetter
	for _, r := range c.records() {
		if d, err := wire.DecodeDeadLetter(r.Value); err == nil {
			out = append(out, d)
		}
	}
	return out
}
