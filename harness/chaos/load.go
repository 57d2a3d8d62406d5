package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/topics"
	"github.com/atmostonce/toolexec/wire"
)

// toolMix is the weight of each tool in harness/cmd/chaos's new keys, in percent
// (the compensating tool is reached only by compensations).
var toolMix = []struct {
	tool   string
	weight int
}{{ToolNative, 25}, {ToolProbe, 18}, {ToolComp, 18}, {ToolIrrev, 10}, {ToolRead, 19}, {ToolApproval, 10}}

// ToolMix is the weight of each tool that needs no person, in percent: the
// simulation's workload (harness/chaos/sim has no approver, so ToolApproval's keys
// would wait until their approval_ttl lapsed).
var ToolMix = []struct {
	Tool   string
	Weight int
}{{ToolNative, 30}, {ToolProbe, 20}, {ToolComp, 20}, {ToolIrrev, 10}, {ToolRead, 20}}

// PickTool is the tool of ToolMix that r, in [0, 100), falls on.
func PickTool(r int) string {
	for _, m := range ToolMix {
		if r < m.Weight {
			return m.Tool
		}
		r -= m.Weight
	}
	return ToolNative
}

// agentKey is a key an agent has used: enough to re-emit it.
type agentKey struct {
	tenant, key, tool string
	args              map[string]any
	firstID           string
	retried           bool
}

// Load acts like a crowd of agents: new calls, model re-emits of a recent
// call (same key and arguments, a new emission id), retries of calls with
// no answer after a timeout, the same key with other arguments now and
// then, compensations of earlier calls, records on the wrong partition
// (another client's partitioner), and bursts.
type Load struct {
	rng        *rand.Rand
	rate       float64
	prod       *kgo.Client
	names      topics.Names
	partitions int32
	tr         *Tracker
	tag        string
	approver   *Approver // decides the keys of ToolApproval

	seq    int
	recent []*agentKey // ring of recent keys
	wg     sync.WaitGroup
	counts map[string]int
}

func newLoad(seed uint64, rate float64, prod *kgo.Client, names topics.Names, partitions int32, tr *Tracker, tag string, ap *Approver) *Load {
	return &Load{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), rate: rate, prod: prod, names: names,
		partitions: partitions, tr: tr, tag: tag, approver: ap, counts: map[string]int{}}
}

// Run emits until ctx ends, then waits for every produce to be acknowledged.
func (l *Load) Run(ctx context.Context) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	sent := 0.0
	nextBurst := time.Now().Add(time.Duration(5+l.rng.IntN(10)) * time.Second)
	nextRetrySweep := time.Now().Add(3 * time.Second)
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case now := <-tick.C:
			for want := now.Sub(start).Seconds() * l.rate; sent < want; sent++ {
				l.action()
			}
			if now.After(nextBurst) {
				l.burst()
				nextBurst = now.Add(time.Duration(5+l.rng.IntN(15)) * time.Second)
			}
			if now.After(nextRetrySweep) {
				l.retryTimedOut(now.Add(-4 * time.Second))
				nextRetrySweep = now.Add(time.Second)
			}
		}
	}
	l.wg.Wait()
}

func (l *Load) action() {
	r := l.rng.IntN(100)
	switch {
	case r < 70 || len(l.recent) == 0:
		l.emit(l.newKey(), "call", nil, "new")
	case r < 88:
		l.emit(l.pick(), "call", nil, "reemit")
	case r < 92:
		k := l.pick()
		l.emit(k, "call", map[string]any{"amount": l.rng.IntN(1000) + 1000, "other": true}, "conflict")
	default:
		if k := l.pickTool(ToolComp); k != nil {
			l.emit(k, "compensate", nil, "compensate")
		} else {
			l.emit(l.newKey(), "call", nil, "new")
		}
	}
}

// burst: a fan-out of new keys, some of them emitted several times at once
// (parallel tool calls of one model turn, re-emitted by a framework).
func (l *Load) burst() {
	l.counts["bursts"]++
	for i := 0; i < 20+l.rng.IntN(30); i++ {
		k := l.newKey()
		for j := 0; j < 1+l.rng.IntN(3); j++ {
			l.emit(k, "call", nil, "burst")
		}
	}
}

// retryTimedOut re-emits, once, the first intent of keys that had no
// terminal answer by cutoff: an agent's retry after its timeout.
func (l *Load) retryTimedOut(cutoff time.Time) {
	open := l.tr.open(cutoff)
	byKey := map[string]bool{}
	for _, r := range open {
		byKey[wire.RoutingKey(r.Tenant, r.Key)] = true
	}
	for _, k := range l.recent {
		if !k.retried && byKey[wire.RoutingKey(k.tenant, k.key)] {
			k.retried = true
			l.emit(k, "call", nil, "retry")
		}
	}
}

func (l *Load) newKey() *agentKey {
	l.seq++
	tool := l.pickWeighted()
	k := &agentKey{tenant: fmt.Sprintf("t%d", l.rng.IntN(4)), key: fmt.Sprintf("%s-%07d", l.tag, l.seq), tool: tool,
		args: map[string]any{"amount": l.rng.IntN(1000), "currency": []string{"EUR", "USD"}[l.rng.IntN(2)]}}
	if len(l.recent) < 2000 {
		l.recent = append(l.recent, k)
	} else {
		l.recent[l.rng.IntN(len(l.recent))] = k
	}
	if tool == ToolApproval {
		l.approver.offer(k)
	}
	return k
}

func (l *Load) pickWeighted() string {
	r := l.rng.IntN(100)
	for _, m := range toolMix {
		if r < m.weight {
			return m.tool
		}
		r -= m.weight
	}
	return ToolNative
}

func (l *Load) pick() *agentKey { return l.recent[len(l.recent)-1-l.rng.IntN(min(len(l.recent), 200))] }

func (l *Load) pickTool(tool string) *agentKey {
	for i := 0; i < 10; i++ {
		if k := l.pick(); k.tool == tool {
			return k
		}
	}
	return nil
}

// emit produces one intent. args overrides the key's arguments (conflict).
func (l *Load) emit(k *agentKey, typ string, args map[string]any, why string) {
	l.counts[why]++
	if args == nil {
		args = k.args
	}
	in := &wire.Intent{V: wire.Version, Type: typ, ID: client.NewID(), Tenant: k.tenant, Key: k.key, Tool: k.tool, Args: args,
		Scope: &wire.Scope{RunID: "chaos", ThreadID: k.key}}
	if k.firstID == "" {
		k.firstID = in.ID
	}
	b, err := wire.EncodeIntent(in)
	if err != nil {
		panic(fmt.Sprintf("chaos: encode intent: %v", err))
	}
	rk := in.RoutingKey()
	p := wire.Partition(rk, l.partitions)
	if l.rng.IntN(100) < 5 { // another client's partitioner: the executor must forward it
		p = (p + 1 + l.rng.Int32N(l.partitions)) % l.partitions
		l.counts["misrouted"]++
	}
	l.tr.add(in)
	l.wg.Add(1)
	l.prod.Produce(context.Background(), &kgo.Record{Topic: l.names.Intents, Partition: p, Key: []byte(rk), Value: b},
		func(_ *kgo.Record, err error) {
			l.tr.produced(in.Tenant, in.ID, err)
			l.wg.Done()
		})
}
