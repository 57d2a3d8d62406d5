package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"time"
)

// keysResult is scenario 5b: an executor that takes over the restore
// scenario's log, so that its state holds every key, then serves replays
// of random keys across the whole key space.
type keysResult struct {
	keys  int
	hwmKB int64 // peak RSS: restore plus the replay load
	// takeover is from the executor process's start (empty data
	// directory) to its answer on the last partition of the set: every
	// partition restored and deciding. firstDecision is to the first.
	takeover, firstDecision time.Duration
	ready                   time.Duration // to the member's ready line: executor.New returned
	restoreS                float64       // restore time the executor reports
	restoreEv               float64
	replay                  phaseResult
}

func (b *bench) keysScenario(ctx context.Context, e *env) (keysResult, error) {
	kr := keysResult{keys: b.cfg.keys}
	o := memberOpts{role: "executor", brokers: b.br.seeds, prefix: e.prefix, group: e.group, partitions: int(b.cfg.partitions),
		dataDir: filepath.Join(b.dir, "keys"), slowLatency: b.cfg.slowLatency, slowInFlight: b.cfg.slowInFlight}
	s := &side{name: "executor"}
	var err error
	if s.tgt, err = newTarget(b.br.seeds, e); err != nil {
		return kr, err
	}
	defer s.stop()
	progress("keys in state: an executor with an empty data directory takes over %d keys (restores every partition)", kr.keys)
	// The take-over is timed from the process's start: the replays are
	// produced first, so that they wait in the log for the executor.
	ph, sent := sendTakeOver(ctx, s.tgt, b.cfg.keys)
	if s.child, err = startChild("executor (keys in state)", o, filepath.Join(b.dir, "keys.log")); err != nil {
		return kr, err
	}
	kr.ready = time.Since(ph.base)
	if kr.takeover, kr.firstDecision, err = awaitTakeOver(ctx, ph, sent); err != nil {
		return kr, err
	}
	if b.cfg.cpuProfile != "" {
		if err := s.child.do("cpu "+b.cfg.cpuProfile+".executor-keys.pprof", nil); err != nil {
			return kr, err
		}
	}
	if err := b.replayKeySpace(ctx, s, &kr); err != nil {
		return kr, err
	}
	_ = s.child.do("cpustop", nil)
	c, err := s.child.stats()
	if err != nil {
		return kr, err
	}
	kr.hwmKB, kr.restoreS, kr.restoreEv = c.HWMKB, c.RestoreSec, c.RestoreEvents
	if int(kr.restoreEv) != 2*kr.keys {
		return kr, fmt.Errorf("keys in state: the executor restored %d events, want %d", int(kr.restoreEv), 2*kr.keys)
	}
	return kr, s.stop()
}

// sendTakeOver produces a replay of one restored key per partition and
// returns the phase that collects the answers (its base is now): the
// first record of a partition makes the executor restore it.
func sendTakeOver(ctx context.Context, t *target, keys int) (*phase, int) {
	parts := t.env.layout.Partitions
	var pick []int
	seen := map[int32]bool{}
	for i := 0; i < keys && len(seen) < int(parts); i++ {
		if p := partitionOf(restoredKey(i), parts); !seen[p] {
			seen[p] = true
			pick = append(pick, i)
		}
	}
	ph := newPhase("k", 0, time.Hour)
	t.register(ph)
	for seq, i := range pick {
		t.send(ctx, ph, seq, 0, func(int) (string, string, int) { return restoredKey(i), toolNoop, i })
	}
	return ph, len(pick)
}

// awaitTakeOver waits for every partition's answer and returns the time
// from the phase's base to the last one (every partition restored and
// deciding) and to the first.
func awaitTakeOver(ctx context.Context, ph *phase, sent int) (last, first time.Duration, err error) {
	ph.drain(ctx, 15*time.Minute)
	r := ph.result()
	if r.Lost > 0 || r.Err != nil {
		return 0, 0, fmt.Errorf("take-over: %d of %d partitions unanswered (produce error: %v)", r.Lost, r.Sent, r.Err)
	}
	if r.Statuses["succeeded"] != sent {
		return 0, 0, errors.New("take-over: restored keys were not replayed as succeeded: " + fmt.Sprint(r.Statuses))
	}
	return r.Max, r.Min, nil
}

// replayKeySpace is a closed loop of replays of uniformly random keys.
func (b *bench) replayKeySpace(ctx context.Context, s *side, kr *keysResult) error {
	rng := rand.New(rand.NewPCG(7, 7))
	next := func(int) (string, string, int) {
		i := rng.IntN(kr.keys)
		return restoredKey(i), toolNoop, i
	}
	progress("keys in state: replays of random keys, %d outstanding", b.cfg.window)
	var err error
	kr.replay, _, err = b.measure(ctx, s, "kr", func(ph *phase) error {
		return s.tgt.closedLoop(ctx, ph, b.cfg.window, next)
	})
	return err
}
