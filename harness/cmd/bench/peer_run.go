package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"
)

// peerSystem is a system of the comparison: it takes calls over HTTP, and
// its process that runs the tool call can be killed and restarted.
type peerSystem interface {
	httpSystem
	// procs are the processes whose CPU time is the system's.
	procs() []proc
	killTarget() string // what kill kills: "executor" or "service"
	kill()
	restart(ctx context.Context) error
	stop()
}

// peerPhaseResult is one load phase against one system.
type peerPhaseResult struct {
	res   phaseResult
	cpuUs map[string]float64 // CPU µs per answer, per process; "bench" is this process
	keys  int                // distinct keys the phase sent
	extra int                // tool effects beyond the first over those keys
}

// peerRound is the three phases of one system in one round.
type peerRound struct {
	fresh, replay, dup peerPhaseResult
}

// peerResults is the comparison: rounds per system, then the crash test.
type peerResults struct {
	order  []string // systems in the order of the first round
	rounds map[string][]peerRound
	crash  map[string]crashResult
	load   string // the load average when the comparison started
}

// peerComparison is --peer: our gateway and executor, and each peer
// named, started once for the run; --repeats rounds of three phases each
// (new keys, replays of completed keys, duplicates in flight), the
// systems in a rotating order; then the crash test on each.
func (b *bench) peerComparison(ctx context.Context) (*peerResults, error) {
	pa := &ports{next: b.cfg.peer.portBase}
	toolAddr, err := pa.addr()
	if err != nil {
		return nil, err
	}
	tool, err := startEffectTool(toolAddr)
	if err != nil {
		return nil, err
	}
	defer tool.close()
	systems, err := b.startPeers(ctx, tool, pa)
	defer func() {
		for _, s := range systems {
			s.stop()
		}
	}()
	if err != nil {
		return nil, err
	}
	pr := &peerResults{rounds: map[string][]peerRound{}, crash: map[string]crashResult{}, load: loadAverage()}
	for _, s := range systems {
		pr.order = append(pr.order, s.name())
	}
	for r := range b.cfg.repeats {
		for i := range systems {
			s := systems[(i+r)%len(systems)]
			progress("peers round %d/%d: %s", r+1, b.cfg.repeats, s.name())
			rd, err := b.peerRound(ctx, s, tool, r)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.name(), err)
			}
			pr.rounds[s.name()] = append(pr.rounds[s.name()], rd)
		}
	}
	for _, s := range systems {
		progress("peers: crash test on %s (SIGKILL the %s with %d calls inside the tool)", s.name(), s.killTarget(), b.cfg.peer.crashCalls)
		cr, err := b.crashTest(ctx, s, tool)
		if err != nil {
			return nil, fmt.Errorf("%s: crash test: %w", s.name(), err)
		}
		pr.crash[s.name()] = cr
	}
	return pr, nil
}

// startPeers starts our side and each peer, and warms each up.
func (b *bench) startPeers(ctx context.Context, tool *effectTool, pa *ports) ([]peerSystem, error) {
	progress("peers: starting the executor and the gateway (tool %s)", tool.url())
	t, err := b.startToolexecPeer(ctx, tool, pa)
	if err != nil {
		return nil, err
	}
	systems := []peerSystem{t}
	for _, name := range b.cfg.peer.names {
		progress("peers: starting %s", name)
		var s peerSystem
		switch name {
		case peerRestate:
			s, err = b.startRestate(ctx, tool, pa)
		case peerPostgres:
			s, err = b.startPostgres(ctx, tool, pa)
		}
		if err != nil {
			return systems, fmt.Errorf("%s: %w", name, err)
		}
		systems = append(systems, s)
	}
	for _, s := range systems {
		if err := warmHTTP(ctx, s, s.name()+"w"); err != nil {
			return systems, err
		}
	}
	return systems, nil
}

// peerRound runs the three phases on s. Keys are "<system>.<round>.<phase>-<seq>",
// so that the tool's counts never mix systems or phases.
func (b *bench) peerRound(ctx context.Context, s peerSystem, tool *effectTool, r int) (peerRound, error) {
	var rd peerRound
	prefix := s.name() + "." + strconv.Itoa(r) + "."
	var done completedSeqs
	progress("  %s: new keys, %d clients", s.name(), b.cfg.httpClients)
	var err error
	if rd.fresh, err = b.peerPhase(ctx, s, tool, prefix+"n", uniqueHTTPKeys(prefix+"n"), done.add); err != nil {
		return rd, err
	}
	seqs := done.list()
	if len(seqs) == 0 {
		return rd, errors.New("no call succeeded in the new-keys phase")
	}
	progress("  %s: replays of %d completed keys", s.name(), len(seqs))
	if rd.replay, err = b.peerPhase(ctx, s, tool, prefix+"r", replayHTTPKeys(prefix+"n", seqs, uint64(r)), nil); err != nil {
		return rd, err
	}
	progress("  %s: duplicates in flight, pairs of clients on one new key", s.name())
	rd.dup, err = b.peerPhase(ctx, s, tool, prefix+"d", workload{group: 2, key: uniqueHTTPKeys(prefix + "d").key}, nil)
	return rd, err
}

// completedSeqs collects the seqs answered succeeded (not replays).
type completedSeqs struct {
	mu   sync.Mutex
	seqs []int
}

func (c *completedSeqs) add(seq int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seqs = append(c.seqs, seq)
}

func (c *completedSeqs) list() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int(nil), c.seqs...)
}

// replayHTTPKeys repeats uniformly random keys of uniqueHTTPKeys(tag)
// among seqs, with their arguments.
func replayHTTPKeys(tag string, seqs []int, seed uint64) workload {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 17))
	return workload{group: 1, key: func(int) (string, int) {
		mu.Lock()
		seq := seqs[rng.IntN(len(seqs))]
		mu.Unlock()
		return tag + "-" + strconv.Itoa(seq), seq
	}}
}

// peerPhase runs one closed loop of httpClients clients against s,
// between two snapshots of its processes' CPU time, and counts the
// tool's effects over the keys it sent.
func (b *bench) peerPhase(ctx context.Context, s peerSystem, tool *effectTool, tag string, w workload, onSuccess func(int)) (peerPhaseResult, error) {
	procs := s.procs()
	settleProcs(ctx, procs)
	keys := &keySet{m: map[string]bool{}}
	inner := w.key
	w.key = func(seq int) (string, int) {
		k, n := inner(seq)
		keys.add(k)
		return k, n
	}
	roots := pidsOf(procs)
	c0, h0 := cpuOfTrees(roots), selfCPU()
	ph := newPhase(tag, b.cfg.warm, b.cfg.duration)
	ph.onSuccess = onSuccess
	hc := newLoadClient(b.cfg.httpClients)
	httpClosedLoop(ctx, ph, s, hc, b.cfg.httpClients, w)
	hc.CloseIdleConnections()
	c1, h1 := cpuOfTrees(roots), selfCPU()
	out := peerPhaseResult{res: ph.result(), cpuUs: map[string]float64{}}
	if out.res.Err != nil {
		return out, fmt.Errorf("phase %s: %w", tag, out.res.Err)
	}
	answers := float64(out.res.Answers)
	for i, p := range procs {
		out.cpuUs[p.name] = 1e6 * perOr0(c1[i]-c0[i], answers)
	}
	out.cpuUs["bench"] = 1e6 * perOr0(h1-h0, answers)
	all := keys.list()
	out.keys, out.extra = len(all), extraEffects(tool.effectsOf(all))
	return out, nil
}

type keySet struct {
	mu sync.Mutex
	m  map[string]bool
}

func (k *keySet) add(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.m[key] = true
}

func (k *keySet) list() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]string, 0, len(k.m))
	for key := range k.m {
		out = append(out, key)
	}
	return out
}

func pidsOf(ps []proc) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = p.pid
	}
	return out
}

// settleProcs waits until the processes together use less than
// settleIdle of a core over half a second, or settleMax (as settle does
// for a member), so that a phase does not pay for the last one's
// background work (compactions, checkpoints). The real broker is left
// out: idle, its JVM alone uses about 6% of a core here, so the wait
// would always run to settleMax.
func settleProcs(ctx context.Context, ps []proc) {
	var roots []int
	for _, p := range ps {
		if p.name != brokerProc {
			roots = append(roots, p.pid)
		}
	}
	deadline := time.Now().Add(settleMax)
	prev := sum(cpuOfTrees(roots))
	for time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(500 * time.Millisecond)
		cur := sum(cpuOfTrees(roots))
		if cur-prev < settleIdle/2 {
			return
		}
		prev = cur
	}
}

func sum(xs []float64) float64 {
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t
}
