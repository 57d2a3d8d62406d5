package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// executorMaxInFlight is executor.Config's default MaxInFlight: the slow
// tool's limit is the smaller of it and the tool's own max_in_flight.
const executorMaxInFlight = 256

// round is one repetition of the load scenarios (1, 2, 3, 5a, 6, 7) with a
// fresh executor and a fresh baseline, each on its own topics.
type round struct {
	execSat, baseSat   phaseResult
	execHalf, baseHalf phaseResult
	halfRate           float64 // offered to both in the half phases
	replay, slow       phaseResult
	slowLimit          float64

	execSatC, baseSatC, execHalfC counters // deltas over the phase
	replayC, slowC                counters
	baseReplay                    phaseResult // the baseline on scenario 2's stream, for its CPU per intent
	baseReplayC                   counters
	execHWMKB, baseHWMKB          int64 // peak RSS after the unique phases

	kafkaPath, httpPath phaseResult // scenario 7, httpClients outstanding each
	gatewayC            counters    // the gateway process over the HTTP phase
}

// side is one member under load: its process and its agent.
type side struct {
	name  string
	child *child
	tgt   *target

	mu        sync.Mutex
	completed []keyRef // unique keys answered succeeded, for replays
}

type keyRef struct {
	tag string
	seq int
}

func (b *bench) loadRound(ctx context.Context, r int) (*round, error) {
	ex, err := b.startSide(ctx, "executor", fmt.Sprintf("x%d", r))
	if err != nil {
		return nil, err
	}
	defer ex.stop()
	bl, err := b.startSide(ctx, "baseline", fmt.Sprintf("b%d", r))
	if err != nil {
		return nil, err
	}
	defer bl.stop()
	rd := &round{}
	if err := b.uniquePhases(ctx, r, rd, ex, bl); err != nil {
		return nil, err
	}
	if rd.replay, rd.replayC, err = b.replayPhase(ctx, r, ex); err != nil {
		return nil, err
	}
	if rd.baseReplay, rd.baseReplayC, err = b.replayPhase(ctx, r, bl); err != nil {
		return nil, err
	}
	if err := b.slowPhase(ctx, r, rd, ex); err != nil {
		return nil, err
	}
	if err := b.gatewayPhases(ctx, r, rd, ex); err != nil {
		return nil, err
	}
	if b.cfg.memProfile != "" && r == 0 {
		if err := ex.child.do("heap "+b.cfg.memProfile+".executor.heap.pprof", nil); err != nil {
			return nil, err
		}
	}
	return rd, errors.Join(ex.stop(), bl.stop())
}

// startSide creates the member's topics, starts its process and its
// agent, and warms it up: every partition answered once.
func (b *bench) startSide(ctx context.Context, role, name string) (*side, error) {
	s, _, err := b.startSideWith(ctx, role, name, "", false)
	return s, err
}

// startSideWith is startSide for a member that also has the HTTP tool at
// toolURL (when set) and records hop events when trace is set; it returns
// the member's options, to start it again.
func (b *bench) startSideWith(ctx context.Context, role, name, toolURL string, trace bool) (*side, memberOpts, error) {
	e, err := b.br.newEnv(ctx, name, b.cfg.partitions)
	if err != nil {
		return nil, memberOpts{}, err
	}
	o := memberOpts{role: role, brokers: b.br.seeds, prefix: e.prefix, group: e.group, partitions: int(b.cfg.partitions),
		dataDir: filepath.Join(b.dir, name), slowLatency: b.cfg.slowLatency, slowInFlight: b.cfg.slowInFlight, toolURL: toolURL, trace: trace}
	s, err := b.launchSide(ctx, o, e, name)
	return s, o, err
}

// launchSide starts a member of env e with options o, its agent, and
// warms it up.
func (b *bench) launchSide(ctx context.Context, o memberOpts, e *env, name string) (*side, error) {
	role := o.role
	var err error
	s := &side{name: role}
	if s.child, err = startChild(role+" "+name, o, filepath.Join(b.dir, name+".log")); err != nil {
		return nil, err
	}
	if s.tgt, err = newTarget(b.br.seeds, e); err != nil {
		s.stop()
		return nil, err
	}
	if err := warmUp(ctx, s.tgt, name+"w"); err != nil {
		s.stop()
		return nil, fmt.Errorf("%s %s: %w", role, name, err)
	}
	return s, nil
}

// stop stops the member and its agent. Idempotent.
func (s *side) stop() error {
	var err error
	if s.child != nil {
		err = s.child.stop()
		s.child = nil
	}
	if s.tgt != nil {
		s.tgt.close()
		s.tgt = nil
	}
	return err
}

func (s *side) remember(tag string) func(int) {
	return func(seq int) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.completed = append(s.completed, keyRef{tag, seq})
	}
}

func (s *side) completedKeys() []keyRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]keyRef(nil), s.completed...)
}

// warmUp sends one intent to every partition (the member joins its group
// and, for the executor, restores each partition) and waits for all the
// answers.
func warmUp(ctx context.Context, t *target, tag string) error {
	keys := keysCoveringPartitions(tag, t.env.layout.Partitions)
	ph := newPhase(tag, 0, time.Hour)
	t.register(ph)
	for i, k := range keys {
		t.send(ctx, ph, i, 0, func(int) (string, string, int) { return k, toolNoop, i })
	}
	ph.drain(ctx, 3*time.Minute)
	if r := ph.result(); r.Lost > 0 || r.Err != nil {
		return fmt.Errorf("warm-up: %d of %d intents unanswered after 3m (produce error: %v)", r.Lost, r.Sent, r.Err)
	}
	return nil
}

// keysCoveringPartitions returns keys "<tag>-<i>", at least one owned by
// every partition.
func keysCoveringPartitions(tag string, parts int32) []string {
	seen := map[int32]bool{}
	var keys []string
	for i := 0; len(seen) < int(parts); i++ {
		k := tag + "-" + strconv.Itoa(i)
		p := partitionOf(k, parts)
		if !seen[p] {
			seen[p] = true
			keys = append(keys, k)
		}
	}
	return keys
}

// uniquePhases is scenario 1: each member saturated (closed loop), then
// both at half the executor's saturating rate. The order of the members
// alternates between rounds so that drift on a shared machine does not
// always favour one.
func (b *bench) uniquePhases(ctx context.Context, r int, rd *round, ex, bl *side) error {
	first, second := ex, bl
	if r%2 == 1 {
		first, second = bl, ex
	}
	for _, s := range []*side{first, second} {
		res, c, err := b.saturate(ctx, s, fmt.Sprintf("s%d", r), r == 0)
		if err != nil {
			return err
		}
		if s == ex {
			rd.execSat, rd.execSatC = res, c
		} else {
			rd.baseSat, rd.baseSatC = res, c
		}
	}
	rd.halfRate = rd.execSat.Rate / 2
	for _, s := range []*side{first, second} {
		res, c, err := b.pace(ctx, s, fmt.Sprintf("h%d", r), rd.halfRate)
		if err != nil {
			return err
		}
		if s == ex {
			rd.execHalf, rd.execHalfC = res, c
		} else {
			rd.baseHalf = res
		}
	}
	return b.peakMemory(rd, ex, bl)
}

func (b *bench) peakMemory(rd *round, ex, bl *side) error {
	ec, err := ex.child.stats()
	if err != nil {
		return err
	}
	bc, err := bl.child.stats()
	if err != nil {
		return err
	}
	rd.execHWMKB, rd.baseHWMKB = ec.HWMKB, bc.HWMKB
	return nil
}

// saturate runs a closed loop of unique no-op calls against s, with a CPU
// profile of the member in the first round when asked.
func (b *bench) saturate(ctx context.Context, s *side, tag string, profile bool) (phaseResult, counters, error) {
	progress("  %s: saturating, %d outstanding, %s", s.name, b.cfg.window, b.cfg.warm+b.cfg.duration)
	if profile && b.cfg.cpuProfile != "" {
		if err := s.child.do("cpu "+b.cfg.cpuProfile+"."+s.name+".pprof", nil); err != nil {
			return phaseResult{}, counters{}, err
		}
		defer func() { _ = s.child.do("cpustop", nil) }()
	}
	return b.measure(ctx, s, tag, func(ph *phase) error {
		ph.onSuccess = s.remember(tag)
		return s.tgt.closedLoop(ctx, ph, b.cfg.window, uniqueKeys(tag, toolNoop))
	})
}

func (b *bench) pace(ctx context.Context, s *side, tag string, rate float64) (phaseResult, counters, error) {
	progress("  %s: paced at %.0f intents/s, %s", s.name, rate, b.cfg.warm+b.cfg.duration)
	return b.measure(ctx, s, tag, func(ph *phase) error {
		ph.onSuccess = s.remember(tag)
		return s.tgt.paced(ctx, ph, rate, uniqueKeys(tag, toolNoop))
	})
}

// measure runs one phase between two snapshots of the member's counters.
func (b *bench) measure(ctx context.Context, s *side, tag string, load func(*phase) error) (phaseResult, counters, error) {
	c0, err := settle(ctx, s)
	if err != nil {
		return phaseResult{}, counters{}, err
	}
	host, start := selfCPU(), time.Now()
	ph := newPhase(tag, b.cfg.warm, b.cfg.duration)
	if err := load(ph); err != nil {
		return phaseResult{}, counters{}, err
	}
	ph.drain(ctx, time.Minute)
	c1, err := s.child.stats()
	if err != nil {
		return phaseResult{}, counters{}, err
	}
	res := ph.result()
	res.HostCPU = perOr0(selfCPU()-host, float64(res.Answers))
	res.Wall = time.Since(start)
	if res.Err != nil {
		return res, counters{}, fmt.Errorf("%s phase %s: produce: %w", s.name, tag, res.Err)
	}
	return res, c1.sub(c0), nil
}

// Settling: a phase starts once the member is quiet, so that it does not
// pay for the previous phase's background work (Pebble compactions after a
// saturated phase would otherwise land in the next phase's latency).
const (
	settleIdle = 0.05 // CPU seconds per second below which a member is quiet
	settleMax  = 30 * time.Second
)

// settle waits until the member uses less than settleIdle of a core over
// half a second, or settleMax, and returns its counters then.
func settle(ctx context.Context, s *side) (counters, error) {
	deadline := time.Now().Add(settleMax)
	prev, err := s.child.stats()
	for err == nil && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(500 * time.Millisecond)
		var cur counters
		if cur, err = s.child.stats(); err == nil && cur.CPUSec-prev.CPUSec < settleIdle/2 {
			return cur, nil
		}
		prev = cur
	}
	return prev, err
}

func uniqueKeys(tag, tool string) intentFn {
	return func(seq int) (string, string, int) { return tag + "-" + strconv.Itoa(seq), tool, seq }
}

// replayPhase is scenario 2: a closed loop in which dupFraction of the
// intents repeat a key the member completed in scenario 1 (same
// arguments: a replay for the executor), the rest are new keys. The
// baseline runs it too, for its CPU per intent on the same stream.
func (b *bench) replayPhase(ctx context.Context, r int, s *side) (phaseResult, counters, error) {
	done := s.completedKeys()
	if len(done) == 0 {
		return phaseResult{}, counters{}, errors.New("replay: no completed keys to repeat")
	}
	tag := fmt.Sprintf("d%d", r)
	if s.name != "executor" {
		tag = fmt.Sprintf("e%d", r)
	}
	rng := rand.New(rand.NewPCG(uint64(r), 42))
	frac := b.cfg.dupFraction
	next := func(seq int) (string, string, int) {
		if rng.Float64() < frac {
			k := done[rng.IntN(len(done))]
			return k.tag + "-" + strconv.Itoa(k.seq), toolNoop, k.seq
		}
		return tag + "-" + strconv.Itoa(seq), toolNoop, seq
	}
	progress("  %s: replay, %.0f%% repeats of %d completed keys", s.name, frac*100, len(done))
	if r == 0 && b.cfg.cpuProfile != "" && s.name == "executor" {
		if err := s.child.do("cpu "+b.cfg.cpuProfile+".executor-replay.pprof", nil); err != nil {
			return phaseResult{}, counters{}, err
		}
		defer func() { _ = s.child.do("cpustop", nil) }()
	}
	return b.measure(ctx, s, tag, func(ph *phase) error {
		return s.tgt.closedLoop(ctx, ph, b.cfg.window, next)
	})
}

// slowPhase is scenario 3: unique keys on a tool that takes slowLatency,
// with enough outstanding intents to keep every slot of max_in_flight
// busy. The limit is max_in_flight / latency, whatever the partitions.
func (b *bench) slowPhase(ctx context.Context, r int, rd *round, ex *side) error {
	inflight := min(b.cfg.slowInFlight, executorMaxInFlight)
	rd.slowLimit = float64(inflight) / b.cfg.slowLatency.Seconds()
	window := max(8*inflight, 256)
	tag := fmt.Sprintf("t%d", r)
	progress("  executor: slow tool (%s, max_in_flight %d), %d outstanding", b.cfg.slowLatency, inflight, window)
	var err error
	rd.slow, rd.slowC, err = b.measure(ctx, ex, tag, func(ph *phase) error {
		return ex.tgt.closedLoop(ctx, ph, window, uniqueKeys(tag, toolSlow))
	})
	return err
}
