package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/wire"
)

// benchTenant is the tenant of every intent the bench sends.
const benchTenant = "bench"

// target is the agent side of one member: it produces intents to the
// member's intents topic and reads the answers from its results topic,
// matching them to phases by the intent id "<phase tag>-<seq>".
type target struct {
	env  *env
	prod *kgo.Client
	cons *kgo.Client
	done chan struct{}

	mu     sync.Mutex
	phases map[string]*phase
}

func newTarget(seeds []string, e *env) (*target, error) {
	prod, err := kgo.NewClient(append(seedOpts(seeds),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		// No linger: the latency measured is the members', not the load
		// generator's batching. Batches still form while a request is in
		// flight.
		kgo.ProducerLinger(0),
		kgo.MaxBufferedRecords(1<<20))...)
	if err != nil {
		return nil, err
	}
	start := map[int32]kgo.Offset{}
	for p := range e.layout.ResultPartitions {
		start[p] = kgo.NewOffset().AtStart()
	}
	cons, err := kgo.NewClient(append(seedOpts(seeds),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{e.names.Results: start}))...)
	if err != nil {
		prod.Close()
		return nil, err
	}
	t := &target{env: e, prod: prod, cons: cons, done: make(chan struct{}), phases: map[string]*phase{}}
	go t.readAnswers()
	return t, nil
}

func (t *target) close() {
	t.prod.Close()
	t.cons.Close()
	<-t.done
}

func (t *target) readAnswers() {
	defer close(t.done)
	for {
		fs := t.cons.PollFetches(context.Background())
		if fs.IsClientClosed() {
			return
		}
		now := time.Now()
		fs.EachRecord(func(r *kgo.Record) {
			if res, err := wire.DecodeResult(r.Value); err == nil {
				t.deliver(res, now)
			}
		})
	}
}

func (t *target) deliver(res *wire.Result, now time.Time) {
	tag, seqStr, ok := strings.Cut(res.IntentID, "-")
	if !ok {
		return
	}
	seq, err := strconv.Atoi(seqStr)
	if err != nil {
		return
	}
	t.mu.Lock()
	ph := t.phases[tag]
	t.mu.Unlock()
	if ph != nil {
		ph.answer(seq, now, res)
	}
}

// intentFn says what intent seq of a phase is: its key, tool and the
// argument that goes with the key (a replay must repeat it).
type intentFn func(seq int) (key, tool string, n int)

// register adds a phase whose answers this target routes.
func (t *target) register(ph *phase) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.phases[ph.tag] = ph
}

// send produces intent seq of ph, sent (for latency) at base+at.
func (t *target) send(ctx context.Context, ph *phase, seq int, at time.Duration, next intentFn) {
	key, tool, n := next(seq)
	in := &wire.Intent{V: wire.Version, Type: wire.TypeCall, ID: ph.tag + "-" + strconv.Itoa(seq),
		Tenant: benchTenant, Key: key, Tool: tool, Args: map[string]any{"n": n}}
	v, err := wire.EncodeIntent(in)
	if err != nil {
		panic(fmt.Sprintf("bench: encode intent: %v", err)) // a bench bug, not a measurement
	}
	rk := in.RoutingKey()
	r := &kgo.Record{Topic: t.env.names.Intents, Partition: wire.Partition(rk, t.env.layout.Partitions), Key: []byte(rk), Value: v}
	ph.sent(seq, at)
	t.prod.Produce(ctx, r, func(_ *kgo.Record, err error) {
		if err != nil {
			ph.failed(err)
		}
	})
}

// closedLoop keeps window intents outstanding for ph.total: a new intent
// is sent when an answer arrives. It is how a saturating rate is found.
func (t *target) closedLoop(ctx context.Context, ph *phase, window int, next intentFn) error {
	ph.tokens = make(chan struct{}, window)
	t.register(ph)
	gctx, cancel := context.WithDeadline(ctx, ph.base.Add(ph.total))
	defer cancel()
	for seq := 0; ; seq++ {
		select {
		case ph.tokens <- struct{}{}:
		case <-gctx.Done():
			return ctx.Err()
		}
		t.send(ctx, ph, seq, time.Since(ph.base), next)
	}
}

// paced sends at rate intents per second for ph.total, on schedule: the
// latency of intent seq is taken from its scheduled time, so a generator
// that falls behind cannot hide a slow member (coordinated omission).
func (t *target) paced(ctx context.Context, ph *phase, rate float64, next intentFn) error {
	t.register(ph)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	seq := 0
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		el := time.Since(ph.base)
		if el >= ph.total {
			return nil
		}
		for due := int(rate * el.Seconds()); seq < due; seq++ {
			t.send(ctx, ph, seq, time.Duration(float64(seq)/rate*float64(time.Second)), next)
		}
	}
}

// partitionOf is the owning partition of the bench tenant's key k.
func partitionOf(k string, parts int32) int32 {
	return wire.Partition(wire.RoutingKey(benchTenant, k), parts)
}
