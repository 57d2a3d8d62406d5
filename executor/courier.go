package executor

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/state"
	"github.com/atmostonce/toolexec/wire"
)

// courier delivers the member's facts (facts.go) to the owners of their
// keys: each as a resolve on its owner partition of the control topic,
// keyed <tenant>/<key> like every command, and forgets it once the broker
// acknowledged it. From then the control topic keeps the fact (replicated,
// acks=all), and its owner's decision on it is final: applied, or refused
// because the key moved on from that attempt, which it never moves back to.
//
// Why a client of its own, not the loop's transactions: the member that
// holds facts is typically one whose transactions are fenced (it lost
// its partitions), or one whose broker was away. A fact is true whoever
// writes it, so it needs no fence; an idempotent producer is enough, and a
// fact delivered twice is one command (factID).
//
// Goroutines: run is the courier's only goroutine (started and waited for
// by Run); it reads the facts' key space and deletes from it, nothing
// else. The loop writes new facts there (keepFacts) and wakes it.
type courier struct {
	store      *state.Store
	cl         *kgo.Client
	control    string
	partitions int32
	log        *slog.Logger
	m          *FactMetrics
	wakeC      chan struct{}
	// produce is cl.ProduceSync; tests answer in an order of their own.
	produce func(context.Context, ...*kgo.Record) kgo.ProduceResults
}

// newCourier makes the courier and its producer. opts are the member's
// connection options (seeds, TLS, SASL).
func newCourier(st *state.Store, control string, partitions int32, log *slog.Logger, m *FactMetrics, opts []kgo.Opt) (*courier, error) {
	opts = append([]kgo.Opt{
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(wire.MaxMessageBytes + producerBatchOverhead),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("executor: the facts' producer: %w", err)
	}
	return &courier{store: st, cl: cl, control: control, partitions: partitions, log: log, m: m, wakeC: make(chan struct{}, 1),
		produce: cl.ProduceSync}, nil
}

// wake tells the courier that facts were kept. Safe for concurrent use,
// never blocks; a nil courier (a member that never opened) ignores it.
func (c *courier) wake() {
	if c == nil {
		return
	}
	select {
	case c.wakeC <- struct{}{}:
	default:
	}
}

func (c *courier) close() {
	if c != nil {
		c.cl.Close()
	}
}

// run delivers until ctx ends: the facts an earlier process left at once,
// each new one when woken, and again after a backoff (courierBackoffMin
// doubling to courierBackoffMax) while the broker cannot take them.
func (c *courier) run(ctx context.Context) {
	backoff := courierBackoffMin
	for ctx.Err() == nil {
		more, err := c.deliver(ctx)
		var retry <-chan time.Time
		switch {
		case err != nil && ctx.Err() == nil:
			c.log.Warn("facts not delivered yet; trying again", "err", err, "in", backoff)
			retry = time.After(backoff)
			backoff = min(2*backoff, courierBackoffMax)
		case more:
			continue
		default:
			backoff = courierBackoffMin
		}
		select {
		case <-ctx.Done():
		case <-c.wakeC:
		case <-retry:
		}
	}
}

// lastPass delivers what it can within courierLastPass: a member that
// shuts down leaves no fact behind if its broker takes them (its drain
// may have kept some).
func (c *courier) lastPass() {
	ctx, cancel := context.WithTimeout(context.Background(), courierLastPass)
	defer cancel()
	for {
		more, err := c.deliver(ctx)
		if err != nil || !more {
			return
		}
	}
}

// deliver produces up to courierBatch facts and forgets those the broker
// acknowledged. more says that a full batch was delivered and others may
// wait.
//
// ProduceSync lists its results in the order the acknowledgements came,
// not the order of the records: each result is matched to its fact by its
// record.
func (c *courier) deliver(ctx context.Context) (more bool, err error) {
	keys, recs, err := c.load()
	if err != nil || len(recs) == 0 {
		return false, err
	}
	keyOf := make(map[*kgo.Record][]byte, len(recs))
	for i, r := range recs {
		keyOf[r] = keys[i]
	}
	pctx, cancel := context.WithTimeout(ctx, courierProduceTimeout)
	defer cancel()
	res := c.produce(pctx, recs...)
	b := c.store.NewBatch()
	delivered := 0
	var failed error
	for _, r := range res {
		if r.Err != nil {
			failed = r.Err
			continue
		}
		// Unsynced: a deletion lost in a crash delivers the fact again,
		// which is the same command (factID).
		if err := b.DeleteAux(keyOf[r.Record]); err != nil {
			b.Discard()
			return false, err
		}
		delivered++
	}
	if err := b.Commit(state.NoSync); err != nil {
		return false, err
	}
	c.m.Delivered.Add(float64(delivered))
	c.countHeld()
	if failed != nil {
		return false, fmt.Errorf("%d of %d facts: %w", len(recs)-delivered, len(recs), failed)
	}
	return len(recs) == courierBatch, nil
}

// load reads up to courierBatch facts as records of the control topic.
// A fact that cannot be read is logged and forgotten: kept, it would stop
// every later delivery.
func (c *courier) load() (keys [][]byte, recs []*kgo.Record, err error) {
	var unreadable [][]byte
	err = c.store.ScanAux(factPrefix, courierBatch, func(k, v []byte) error {
		f, err := decodeFact(v)
		if err == nil {
			var r *kgo.Record
			if r, err = c.record(f); err == nil {
				keys, recs = append(keys, k), append(recs, r)
				return nil
			}
		}
		c.log.Error("a kept fact cannot be read; it is dropped", "key", string(k), "err", err)
		unreadable = append(unreadable, k)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return keys, recs, c.drop(unreadable)
}

func (c *courier) record(f *fact) (*kgo.Record, error) {
	v, err := wire.EncodeIntent(f.intent())
	if err != nil {
		return nil, err
	}
	rk := wire.RoutingKey(f.Tenant, f.Key)
	return &kgo.Record{Topic: c.control, Partition: wire.Partition(rk, c.partitions), Key: []byte(rk), Value: v}, nil
}

func (c *courier) drop(keys [][]byte) error {
	if len(keys) == 0 {
		return nil
	}
	b := c.store.NewBatch()
	for _, k := range keys {
		if err := b.DeleteAux(k); err != nil {
			b.Discard()
			return err
		}
	}
	return b.Commit(state.Sync)
}

// countHeld sets the gauge of facts not yet delivered.
func (c *courier) countHeld() {
	n := 0
	err := c.store.ScanAux(factPrefix, math.MaxInt, func(_, _ []byte) error { n++; return nil })
	if err == nil {
		c.m.Held.Set(float64(n))
	}
}

// FactMetrics are the collectors of a member's facts.
type FactMetrics struct {
	Kept      prometheus.Counter
	Delivered prometheus.Counter
	Held      prometheus.Gauge
}

func newFactMetrics(reg prometheus.Registerer) *FactMetrics {
	const ns, sub = "toolexec", "executor"
	m := &FactMetrics{
		Kept: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "facts_kept_total",
			Help: "Facts this member kept for the owner of their key: outcomes it got after the call's partition moved, and calls it started and never sent."}),
		Delivered: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "facts_delivered_total",
			Help: "Facts the broker acknowledged on the control topic, as resolves naming their call and downstream key."}),
		Held: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "facts_held",
			Help: "Facts on this member's disk not yet delivered (the broker cannot take them)."}),
	}
	if reg != nil {
		reg.MustRegister(m.Kept, m.Delivered, m.Held)
	}
	return m
}

// runCourier starts the courier's goroutine and returns what stops it:
// wait for it, then, unless the member crashed, try one last delivery.
func (e *Executor) runCourier() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.courier.run(ctx) }()
	return func() {
		cancel()
		<-done
		if !e.crashed.Load() {
			e.courier.lastPass()
		}
	}
}
