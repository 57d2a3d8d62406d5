package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/harness/chaos"
	"github.com/atmostonce/toolexec/wire"
)

// toolNames are the ledger's tools (chaos.ToolsYAML); new keys take
// them in chaos.ToolMix's proportions.
var toolNames = []string{chaos.ToolNative, chaos.ToolProbe, chaos.ToolComp, chaos.ToolUndo, chaos.ToolIrrev, chaos.ToolRead}

// workload acts like a crowd of agents, from the seed: new keys of every
// tool class and tenant (some slow: their effect comes after the tool's
// timeout), model re-emits of recent keys, the same key with other
// arguments, compensations, records on the wrong partition, bursts of
// parallel calls, and agents that run their calls through package client
// and call again with the same key when no answer came in time. Every
// choice is drawn from one generator in one goroutine, so a seed sends
// the same intents in the same order; only their timing follows the
// clock.
type workload struct {
	w      *world
	rng    *rand.Rand
	prod   *kgo.Client // the raw agents' producer (a harness client)
	agents *client.Client
	seq    int
	recent []*agentKey
	wg     sync.WaitGroup
	slots  chan struct{} // agents at once

	mu     sync.Mutex
	counts map[string]int
}

type agentKey struct {
	tenant, key, tool string
	args              map[string]any
}

// agentWait is how long an agent waits for an answer before it calls
// again with the same key (once).
const agentWait = 4 * time.Second

func newWorkload(w *world, prod *kgo.Client, agents *client.Client) *workload {
	return &workload{w: w, rng: rand.New(rand.NewPCG(w.cfg.Seed, 2)), prod: prod, agents: agents,
		slots: make(chan struct{}, 16), counts: map[string]int{}}
}

// run emits at the run's rate until ctx ends, then waits for the agents
// and every produce.
func (l *workload) run(ctx context.Context) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	start, sent := time.Now(), 0.0
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case now := <-tick.C:
			for want := now.Sub(start).Seconds() * l.w.p.Rate; sent < want; sent++ {
				l.action(ctx)
			}
		}
	}
	l.wg.Wait()
}

func (l *workload) count(what string) {
	l.mu.Lock()
	l.counts[what]++
	l.mu.Unlock()
}

func (l *workload) action(ctx context.Context) {
	switch r := l.rng.IntN(100); {
	case r < 60 || len(l.recent) == 0:
		k := l.newKey()
		if l.rng.IntN(100) < l.w.p.ClientPercent {
			l.agent(ctx, k)
			return
		}
		l.emit(k, wire.TypeCall, nil, "new")
	case r < 80:
		l.emit(l.pick(), wire.TypeCall, nil, "reemit")
	case r < 86:
		l.emit(l.pick(), wire.TypeCall, map[string]any{"amount": l.rng.IntN(1000) + 1000, "other": true}, "conflict")
	case r < 93:
		if k := l.pickTool(chaos.ToolComp); k != nil {
			l.emit(k, wire.TypeCompensate, nil, "compensate")
			return
		}
		l.emit(l.newKey(), wire.TypeCall, nil, "new")
	default:
		l.burst()
	}
}

// burst: a fan-out of new keys, some emitted several times at once.
func (l *workload) burst() {
	l.count("bursts")
	for i := 0; i < 5+l.rng.IntN(20); i++ {
		k := l.newKey()
		for j := 0; j < 1+l.rng.IntN(3); j++ {
			l.emit(k, wire.TypeCall, nil, "burst")
		}
	}
}

func (l *workload) newKey() *agentKey {
	l.seq++
	tool := l.pickWeighted()
	key := fmt.Sprintf("s%d-%06d", l.w.cfg.Seed%100000, l.seq)
	// A slow key's effect comes 2.5 s after its request, whatever the
	// call's budget. Not for the compensatable tool: a call that waited
	// in its tool's queue until near its pending_ttl would land after the
	// reconciler's compensate, the gap only a tool that refuses requests
	// past their deadline closes (docs/RELIABILITY.md, Limits).
	if l.rng.IntN(100) < l.w.p.SlowPercent && tool != chaos.ToolComp {
		key = chaos.SlowKeyPrefix + key
	}
	k := &agentKey{tenant: fmt.Sprintf("t%d", l.rng.IntN(4)), key: key, tool: tool,
		args: map[string]any{"amount": l.rng.IntN(1000), "currency": []string{"EUR", "USD"}[l.rng.IntN(2)]}}
	if len(l.recent) < 500 {
		l.recent = append(l.recent, k)
	} else {
		l.recent[l.rng.IntN(len(l.recent))] = k
	}
	return k
}

func (l *workload) pickWeighted() string { return chaos.PickTool(l.rng.IntN(100)) }

func (l *workload) pick() *agentKey {
	return l.recent[len(l.recent)-1-l.rng.IntN(min(len(l.recent), 100))]
}

func (l *workload) pickTool(tool string) *agentKey {
	for i := 0; i < 10; i++ {
		if k := l.pick(); k.tool == tool {
			return k
		}
	}
	return nil
}

// emit produces one intent as an agent with its own producer would;
// args overrides the key's (a conflict). One in twenty lands on a wrong
// partition (another client's partitioner): the executor must forward it.
func (l *workload) emit(k *agentKey, typ string, args map[string]any, why string) {
	l.count(why)
	if args == nil {
		args = k.args
	}
	in := l.intent(k, typ, args)
	b, err := wire.EncodeIntent(in)
	if err != nil {
		panic(fmt.Sprintf("sim: encode intent: %v", err))
	}
	rk := in.RoutingKey()
	p := wire.Partition(rk, l.w.p.Partitions)
	if l.rng.IntN(100) < 5 {
		p = (p + 1 + l.rng.Int32N(l.w.p.Partitions)) % l.w.p.Partitions
		l.count("misrouted")
	}
	l.w.landed(in, p)
	l.w.tr.Add(in)
	l.wg.Add(1)
	l.prod.Produce(context.Background(), &kgo.Record{Topic: l.w.names.Intents, Partition: p, Key: []byte(rk), Value: b},
		func(r *kgo.Record, err error) {
			l.w.tr.Produced(in.Tenant, in.ID, err)
			if err == nil {
				l.w.placed(in.Tenant, in.ID, r.Partition, r.Offset)
			}
			l.wg.Done()
		})
}

func (l *workload) intent(k *agentKey, typ string, args map[string]any) *wire.Intent {
	in := &wire.Intent{V: wire.Version, Type: typ, ID: client.NewID(), Tenant: k.tenant, Key: k.key, Args: args,
		Scope: &wire.Scope{RunID: "sim", ThreadID: k.key}}
	if typ == wire.TypeCall {
		in.Tool = k.tool
	}
	return in
}

// agent runs a new key's call through package client in its own
// goroutine (at most cap(slots) at once; beyond that it is emitted as a
// raw intent): it waits agentWait for the terminal answer and, without
// one, calls once more with the same key and arguments.
func (l *workload) agent(ctx context.Context, k *agentKey) {
	select {
	case l.slots <- struct{}{}:
	default:
		l.emit(k, wire.TypeCall, nil, "new")
		return
	}
	l.count("agent")
	first, again := l.intent(k, wire.TypeCall, k.args), l.intent(k, wire.TypeCall, k.args)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer func() { <-l.slots }()
		if l.call(ctx, first) {
			return
		}
		l.count("agent_retry")
		l.call(ctx, again)
	}()
}

// call sends in through the client and reports whether a terminal answer
// came within agentWait.
func (l *workload) call(ctx context.Context, in *wire.Intent) bool {
	l.w.tr.Add(in)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), agentWait)
	defer cancel()
	p, err := l.agents.Start(cctx, *in)
	l.w.tr.Produced(in.Tenant, in.ID, err)
	if err != nil {
		return false
	}
	defer p.Close()
	for {
		res, err := p.Next(cctx)
		if err != nil {
			return false
		}
		if codes.Terminal(res.Status) {
			return true
		}
		if errors.Is(cctx.Err(), context.DeadlineExceeded) {
			return false
		}
	}
}
