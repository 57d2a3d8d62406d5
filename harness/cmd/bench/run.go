package main

import (
	"context"
	"fmt"
	"os"
	"time"
)

// bench is one run: one broker, one scratch directory, the results.
type bench struct {
	cfg config
	br  *broker
	dir string // data directories and member logs; removed at the end
	rep report
}

var runStart = time.Now()

// progress prints a line to stderr with the time since the start.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%5.1fs] %s\n", time.Since(runStart).Seconds(), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, cfg config) error {
	br, err := startBroker(cfg.brokers)
	if err != nil {
		return err
	}
	defer br.close(cfg.keepTopics)
	dir, err := os.MkdirTemp("", "toolexec-bench-")
	if err != nil {
		return err
	}
	if !cfg.keepScratch {
		defer os.RemoveAll(dir)
	}
	b := &bench{cfg: cfg, br: br, dir: dir, rep: report{cfg: cfg, runPrefix: br.runPrefix}}
	sink, err := memberTracing(cfg.tracing)
	if err != nil {
		return err
	}
	defer sink.close()
	progress("broker %s, topics %s*, scratch %s, tracing %v", cfg.brokerName(), br.runPrefix, dir, cfg.tracing)
	if err := b.scenarios(ctx); err != nil {
		return err
	}
	if sink != nil {
		progress("tracing: the members exported %d spans (%d bytes of OTLP)", sink.spans.Load(), sink.bytes.Load())
	}
	b.rep.elapsed = time.Since(runStart)
	b.rep.print(os.Stdout)
	return nil
}

func (b *bench) scenarios(ctx context.Context) error {
	if b.cfg.scenario == "flood" {
		runs, err := b.floodScenario(ctx)
		b.rep.flood = runs
		return err
	}
	if b.cfg.oneCaller > 0 {
		oc, err := b.oneCallerScenario(ctx)
		if err != nil {
			return err
		}
		b.rep.oneCaller = oc
	}
	if !b.cfg.skipLoad {
		for r := range b.cfg.repeats {
			progress("round %d/%d: unique keys, replay, slow tool", r+1, b.cfg.repeats)
			rd, err := b.loadRound(ctx, r)
			if err != nil {
				return fmt.Errorf("round %d: %w", r+1, err)
			}
			b.rep.rounds = append(b.rep.rounds, rd)
		}
	}
	if !b.cfg.skipRestore {
		if err := b.restoreScenarios(ctx); err != nil {
			return err
		}
	}
	if !b.cfg.peer.enabled() {
		return nil
	}
	pr, err := b.peerComparison(ctx)
	if err != nil {
		return fmt.Errorf("peers: %w", err)
	}
	b.rep.peers = pr
	return nil
}

// restoreScenarios are scenarios 4 and 5b.
func (b *bench) restoreScenarios(ctx context.Context) error {
	e, rr, err := b.restoreScenario(ctx)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	b.rep.restore = &rr
	kr, err := b.keysScenario(ctx, e)
	if err != nil {
		return fmt.Errorf("keys in state: %w", err)
	}
	b.rep.keys = &kr
	return nil
}
