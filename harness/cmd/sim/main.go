// Command sim is the seeded fault simulation (package harness/chaos/sim): each run
// drives the real executor members, their transaction sessions and
// dispatchers, a reconciler and agents using package client, in one
// process, against kfake, with a workload and a fault schedule drawn
// from the run's seed; faults cover every request kind the product
// sends with every error code Kafka documents for it, in three ways
// (refused, applied and answered with the code, applied and the answer
// lost), delays, rebalances, member crashes and restarts, moves of the
// event log's start and Pebble write faults. After the faults it heals
// everything, lets the reconciler settle, and checks the chaos harness's
// invariants plus that no member started a call after releasing its
// partition.
//
// Run N uses seed --seed+N, each in a child process of its own (a panic
// is a finding, not the end of the sequence). Progress goes to stderr;
// the last line of stdout is a JSON summary; a failing run prints the
// command that replays it. The exit status is 1 on any violation, 2 when
// the simulation itself failed. See docs/RELIABILITY.md.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/atmostonce/toolexec/harness/chaos/sim"
)

type options struct {
	cfg    sim.Config
	runs   int
	budget time.Duration
	child  bool
	passed []string // the flags given, for the children and the replay
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "sim:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.child {
		os.Exit(runChild(ctx, o.cfg))
	}
	os.Exit(runAll(ctx, o))
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	seed := fs.Uint64("seed", 0, "seed of the first run (run i uses seed+i); 0 picks one from the clock")
	fs.IntVar(&o.runs, "runs", 1, "runs to make; 0: as many as --budget allows")
	fs.DurationVar(&o.budget, "budget", 0, "start no run after this much time (0: no bound)")
	fs.DurationVar(&o.cfg.Duration, "duration", 20*time.Second, "load and faults of each run")
	fs.DurationVar(&o.cfg.Settle, "settle", 120*time.Second, "longest wait, after the faults, for every intent's answer")
	fs.IntVar(&o.cfg.Members, "members", 0, "executor members at start (0: 2 to 4, from the seed)")
	fs.IntVar(&o.cfg.Partitions, "partitions", 0, "partitions of the topics (0: 2 to 6, from the seed)")
	fs.Float64Var(&o.cfg.Rate, "rate", 0, "intents a second (0: 15 to 40, from the seed)")
	fs.DurationVar(&o.cfg.FaultGap, "fault-gap", 300*time.Millisecond, "mean pause between two faults")
	faults := fs.String("faults", "", "comma-separated fault kinds allowed ("+strings.Join(sim.FaultKinds, ", ")+"); empty: all but leader_move (a kfake artefact, see harness/chaos/sim DefaultFaults); each run injects a subset chosen by its seed")
	codes := fs.String("codes", string(sim.CodesAny), "error codes of the network faults: documented (Kafka's per-request lists) or any (those and the codes any request may get)")
	fs.StringVar(&o.cfg.WorkDir, "work-dir", "", "a run's data dirs and log (default: a temp dir, kept only when the run fails)")
	fs.BoolVar(&o.cfg.Keep, "keep", false, "keep every run's dir")
	fs.BoolVar(&o.child, "child", false, "run one seed in this process (what the runs do)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name != "seed" && f.Name != "runs" && f.Name != "budget" && f.Name != "child" {
			o.passed = append(o.passed, "--"+f.Name+"="+f.Value.String())
		}
	})
	o.cfg.Seed, o.cfg.Codes = *seed, sim.CodeSet(*codes)
	if *faults != "" {
		o.cfg.Faults = strings.Split(*faults, ",")
	}
	if o.cfg.Seed == 0 {
		o.cfg.Seed = uint64(time.Now().UnixNano() % 1_000_000_000)
	}
	if o.runs < 0 || (o.runs == 0 && o.budget <= 0) {
		return o, errors.New("--runs must be positive, or 0 with a --budget")
	}
	return o, nil
}

// runChild runs one seed and prints its report as the last line.
func runChild(ctx context.Context, cfg sim.Config) int {
	cfg.Log = os.Stderr
	rep, err := sim.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sim: the run could not be judged:", strings.TrimPrefix(err.Error(), "sim: "))
		return 2
	}
	b, _ := json.Marshal(rep)
	fmt.Println(string(b))
	if len(rep.Violations) > 0 {
		return 1
	}
	return 0
}

// runAll runs the seeds one after the other, each in a child process.
func runAll(ctx context.Context, o options) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sim:", err)
		return 2
	}
	sum := sim.NewSummary(o.cfg.Seed)
	start := time.Now()
	fmt.Fprintf(os.Stderr, "sim: seed %d, %d runs, budget %s\n", o.cfg.Seed, o.runs, o.budget)
	harnessFailed := false
	for i := 0; (o.runs == 0 || i < o.runs) && ctx.Err() == nil; i++ {
		if o.budget > 0 && time.Since(start) >= o.budget {
			break
		}
		seed := o.cfg.Seed + uint64(i)
		replay := replayCommand(seed, o.passed)
		rep, why := child(ctx, exe, seed, o.passed)
		switch {
		case rep != nil:
			sum.Add(rep, replay)
			fmt.Fprintf(os.Stderr, "sim: run %d seed %d: %d violations, %d intents, %.0fs\n", i, seed, len(rep.Violations), intents(rep), rep.Seconds)
			for _, v := range first(rep.Violations, 5) {
				fmt.Fprintf(os.Stderr, "sim:   %s\n", v)
			}
			if len(rep.Violations) > 0 {
				fmt.Fprintf(os.Stderr, "sim:   replay: %s (log: %s/run.log)\n", replay, rep.Dir)
			}
		case ctx.Err() != nil:
		case strings.HasPrefix(why, "sim:"):
			harnessFailed = true
			fmt.Fprintf(os.Stderr, "sim: run %d seed %d could not be judged: %s\n", i, seed, why)
		default:
			sum.Crashed(seed, why, replay)
			fmt.Fprintf(os.Stderr, "sim: run %d seed %d crashed: %s\n  replay: %s\n", i, seed, why, replay)
		}
	}
	sum.Seconds = time.Since(start).Seconds()
	b, _ := json.Marshal(sum)
	fmt.Println(string(b))
	switch {
	case sum.Violations > 0:
		return 1
	case harnessFailed || sum.Runs == 0:
		return 2
	}
	return 0
}

func intents(r *sim.RunReport) int {
	if r.Verdict == nil {
		return 0
	}
	return r.Verdict.Intents
}

func first(v []string, n int) []string { return v[:min(n, len(v))] }

// replayCommand is the shortest command that runs seed again as it ran.
func replayCommand(seed uint64, passed []string) string {
	return strings.Join(append([]string{"go run ./harness/cmd/sim", fmt.Sprintf("--seed=%d", seed)}, passed...), " ")
}

// child runs one seed in a child process and returns its report, or why
// there is none: the child's own error line ("sim: ..."), or the start of
// a panic or a signal.
func child(ctx context.Context, exe string, seed uint64, passed []string) (*sim.RunReport, string) {
	cmd := exec.CommandContext(ctx, exe, append([]string{"--child", fmt.Sprintf("--seed=%d", seed)}, passed...)...)
	var out bytes.Buffer
	stderr := &tailBuffer{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = &out, stderr
	err := cmd.Run()
	if line := lastLine(out.Bytes()); len(line) > 0 {
		var rep sim.RunReport
		if json.Unmarshal(line, &rep) == nil {
			return &rep, ""
		}
	}
	return nil, crashReason(err, stderr.String())
}

func lastLine(b []byte) []byte {
	var last []byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			last = append(last[:0], sc.Bytes()...)
		}
	}
	return last
}

// crashReason names why a child gave no report: its "sim:" error, or the
// first lines of its panic, or its exit.
func crashReason(err error, stderr string) string {
	lines := strings.Split(stderr, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "fatal error:") {
			return strings.Join(lines[i:min(i+12, len(lines))], " | ")
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "sim:") {
			return lines[i]
		}
	}
	return fmt.Sprintf("exit %v", err)
}

// tailBuffer keeps the last max bytes written to it (a panic prints only
// its own goroutine's trace, well within them).
type tailBuffer struct {
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = t.b[over:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }
