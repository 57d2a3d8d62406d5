package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/harness/chaos"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/topicadmin"
	"github.com/atmostonce/toolexec/topics"
	"github.com/atmostonce/toolexec/wire"
)

// world is one run's everything: the broker, the tools, the members, the
// reconciler, the agents, the harness's readers, the faults.
type world struct {
	cfg     Config
	p       params
	dir     string
	logFile *os.File
	log     *slog.Logger
	logMu   sync.Mutex

	names   topics.Names
	group   string
	cluster *kfake.Cluster
	brokers []string
	net     *network

	ledger *chaos.Ledger
	reg    *tools.Registry

	harness    *kgo.Client // the raw agents' producer and the harness's admin requests
	harnessAdm *kadm.Client
	moverCl    *kgo.Client
	agents     *client.Client

	tr      *chaos.Tracker
	escal   chaos.Escalations
	hist    *chaos.History
	tail    *tail
	owners  *owners
	fleet   *fleet
	rec     *recon
	mover   *mover
	hostile *chaos.Hostile

	runCtx   context.Context // the run's: ends after the verdict
	wedged   string          // why the run could not go on; "" while it can
	eventsID [16]byte        // the events topic's id (fetches name topics by id)

	landedMu sync.Mutex
	landedOn map[string]int32     // tenant\x00id -> partition, of misrouted raw intents
	placedAt map[string]placement // tenant\x00id -> where it was produced (raw and hostile intents)

	undo []func() // in reverse order at the end
	keep bool     // a violation: keep the run's dir
}

// logf writes a line to the run's log.
func (w *world) logf(format string, a ...any) {
	w.log.Info(fmt.Sprintf(format, a...), "member", "sim")
}

// Run runs one seed: it builds the world, runs the load and the faults
// for Duration, heals every fault, waits (up to Settle) until every
// intent is answered or its key escalated, and judges. An error means
// the run could not be judged.
func Run(ctx context.Context, cfg Config) (*RunReport, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	start := time.Now()
	w := &world{cfg: cfg, p: choose(cfg), landedOn: map[string]int32{}, placedAt: map[string]placement{}}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	w.runCtx = rctx
	defer w.cleanup()
	if err := w.setup(ctx); err != nil {
		return nil, err
	}
	rep, err := w.execute(ctx)
	if err != nil {
		return nil, err
	}
	rep.Seconds = time.Since(start).Seconds()
	if len(rep.Violations) > 0 || cfg.Keep {
		rep.Dir = w.dir
		if b, err := json.MarshalIndent(rep, "", "  "); err == nil {
			_ = os.WriteFile(filepath.Join(w.dir, "report.json"), b, 0o644)
		}
	}
	return rep, nil
}

func (w *world) cleanup() {
	for i := len(w.undo) - 1; i >= 0; i-- {
		w.undo[i]()
	}
}

func (w *world) setup(ctx context.Context) error {
	if err := w.workDir(); err != nil {
		return err
	}
	w.names, w.group = topics.NamesWithPrefix("sim."), "sim-executor"
	w.net = newNetwork()
	w.net.log = w.logf
	opts := []kfake.Opt{kfake.NumBrokers(w.p.Brokers), kfake.ListenFn(w.net.ip.Listen), kfake.GroupMinSessionTimeout(500 * time.Millisecond)}
	if w.p.Kafka == "3.9" {
		opts = append(opts, kfake.MaxVersions(kversion.V3_9_0()))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return fmt.Errorf("sim: kfake: %w", err)
	}
	w.cluster, w.brokers = c, c.ListenAddrs()
	w.undo = append(w.undo, c.Close)
	if err := w.startTools(); err != nil {
		return err
	}
	if err := w.startHarness(ctx); err != nil {
		return err
	}
	w.owners = newOwners(w.p.Partitions)
	w.fleet = newFleet(w)
	w.undo = append(w.undo, w.fleet.stopAll)
	for i := 0; i < w.p.Members; i++ {
		if err := w.fleet.start(ctx, ""); err != nil {
			return fmt.Errorf("sim: start member: %w", err)
		}
	}
	w.rec = newRecon(w)
	w.undo = append(w.undo, w.rec.stop)
	if err := w.rec.start(ctx); err != nil {
		return fmt.Errorf("sim: start reconciler: %w", err)
	}
	if ti := c.TopicInfo(w.names.Events); ti != nil {
		w.eventsID = ti.TopicID
	}
	w.net.start(c)
	return nil
}

// workDir makes the run's directory and its log.
func (w *world) workDir() error {
	dir := w.cfg.WorkDir
	if dir == "" {
		d, err := os.MkdirTemp("", fmt.Sprintf("toolexec-sim-%d-", w.cfg.Seed))
		if err != nil {
			return err
		}
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	w.dir = dir
	f, err := os.Create(filepath.Join(dir, "run.log"))
	if err != nil {
		return err
	}
	w.logFile = f
	w.log = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo}))
	w.undo = append(w.undo, func() {
		_ = f.Close()
		switch {
		case w.cfg.Keep:
		case w.keep: // a violation: the log and the report stay, the data dirs (Pebble's preallocated logs) go
			_ = os.RemoveAll(filepath.Join(dir, "data"))
			_ = os.RemoveAll(filepath.Join(dir, "reconciler"))
		default:
			_ = os.RemoveAll(dir)
		}
	})
	return nil
}

// startTools starts the ledger (the tools' downstream and the judge of
// effects) and the registry the members and the reconciler share.
func (w *world) startTools() error {
	l, err := chaos.NewLedger(7)
	if err != nil {
		return err
	}
	w.ledger = l
	w.undo = append(w.undo, l.Close)
	l.SetLatency(w.p.ToolLatency)
	yaml := chaos.ToolsYAML(l.Addr(), func(tool string) string {
		if n := w.p.ToolMaxInFlight[tool]; n > 0 {
			return fmt.Sprintf("    max_in_flight: %d\n", n)
		}
		return ""
	})
	cfg, err := tools.Parse([]byte(yaml))
	if err != nil {
		return fmt.Errorf("sim: tools: %w", err)
	}
	if w.reg, err = tools.FromConfig(cfg, nil, nil); err != nil {
		return fmt.Errorf("sim: tools: %w", err)
	}
	return nil
}

// startHarness creates the topics and starts the harness's clients: the
// raw agents' producer, the answers' tracker, the events' tail, the log
// mover, the agents' client (package client: product code, faulted), and
// the hostile sender.
func (w *world) startHarness(ctx context.Context) error {
	var err error
	if w.harness, err = kgo.NewClient(kgo.SeedBrokers(w.brokers...), kgo.ClientID(harnessID), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond)); err != nil {
		return err
	}
	w.undo = append(w.undo, w.harness.Close)
	w.harnessAdm = kadm.NewClient(w.harness)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := topicadmin.Ensure(cctx, w.harnessAdm, w.names, topicadmin.Settings{Partitions: w.p.Partitions, MinEventRetention: 48 * time.Hour}); err != nil {
		return fmt.Errorf("sim: topics: %w", err)
	}
	rctx, stop := context.WithCancel(context.Background())
	w.undo = append(w.undo, stop)
	w.tr = chaos.NewTracker(w.names.Results)
	if err := w.tr.Follow(rctx, w.brokers, w.names.Results, kgo.ClientID(harnessID+"-answers")); err != nil {
		return err
	}
	w.hist = chaos.NewHistory()
	w.tail = newTail(w.hist)
	w.tail.logf = w.logf
	tailDone := make(chan struct{})
	if err := w.tail.run(rctx, w.brokers, w.names.Events, tailDone); err != nil {
		return err
	}
	w.undo = append(w.undo, func() { stop(); <-tailDone })
	if w.moverCl, err = kgo.NewClient(kgo.SeedBrokers(w.brokers...), kgo.ClientID("sim-logstart")); err != nil {
		return err
	}
	w.undo = append(w.undo, w.moverCl.Close)
	w.mover = newMover(w, w.moverCl)
	if w.agents, err = client.New(cctx, client.Config{Brokers: w.brokers, Prefix: "sim.", ClientOpts: []kgo.Opt{kgo.ClientID("agents")}}); err != nil {
		return fmt.Errorf("sim: agents' client: %w", err)
	}
	w.undo = append(w.undo, w.agents.Close)
	if slices.Contains(w.p.Faults, FaultHostile) {
		if w.hostile, err = chaos.NewHostile(w.brokers, w.names, w.p.Partitions, w.tr, w.logf, kgo.ClientID(harnessID+"-hostile")); err != nil {
			return err
		}
		w.undo = append(w.undo, w.hostile.Close)
	}
	return nil
}

// execute runs the load and the faults, heals, settles and judges.
func (w *world) execute(ctx context.Context) (*RunReport, error) {
	in := newInjector(w)
	if w.hostile != nil {
		w.hostile.OnSent(func(kind string) { in.note(FaultHostile, kind) })
	}
	load := newWorkload(w, w.harness, w.agents)
	lctx, cancel := context.WithTimeout(ctx, w.cfg.Duration)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); load.run(lctx) }()
	go func() { defer wg.Done(); in.run(lctx) }()
	// The watch outlives the load: after it, the injector and the hostile
	// waves still wait on answers (a wave waits up to a minute), and a
	// member that exits then (its producer failed for good) must be
	// started again as a supervisor would, not left out until the heal:
	// a fleet left with no member for the minute a hostile wave waits
	// decides nothing, and the reconciler escalates keys whose facts the
	// dead member holds.
	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { defer close(watched); w.watch(wctx, in) }()
	endWatch := func() { stopWatch(); <-watched }
	defer endWatch()
	if !w.within(w.cfg.Duration+loadGrace, "the load and the faults", func() {
		wg.Wait()
		if w.hostile != nil {
			w.hostile.Wait()
		}
	}) {
		return w.wedgedReport(in, load), nil
	}
	w.logf("load and faults stopped: %v; healing", in.snapshot())
	endWatch()
	w.net.heal()
	w.fleet.reap()
	w.fleet.heal(ctx, w.p.Members)
	if err := w.rec.start(ctx); err != nil {
		w.logf("reconciler start during the heal: %v", err)
	}
	escalated, settled := w.settle(ctx)
	// The verdict reads the log, the answers and the ledger one after the
	// other: a member still deciding between two of those reads (one that
	// took an undecided partition back with a view that has it, a call
	// started as the settle ended) would make them disagree. The members
	// leave (draining what they run) and the reconciler stops first.
	if !w.within(stopGrace, "stopping the members and the reconciler", func() { w.fleet.stopAll(); w.rec.stop() }) {
		return w.wedgedReport(in, load), nil
	}
	return w.verdict(ctx, in, load, escalated, settled)
}

// Bounds on the steps of a run that wait for the product: past them the
// run is wedged (a member's Crash that never returns, a drain that never
// ends), a violation, and the run ends there with every goroutine's stack
// in its dir. loadGrace covers a hostile wave's waits after the load.
const (
	loadGrace = 3 * time.Minute
	stopGrace = 2 * time.Minute
)

// within runs step, waiting at most d; false when it did not finish: the
// run is wedged, and what it started is abandoned (the cleanup would
// wait on it too).
func (w *world) within(d time.Duration, what string, step func()) bool {
	done := make(chan struct{})
	go func() { defer close(done); step() }()
	select {
	case <-done:
		return true
	case <-time.After(d):
	}
	w.wedged = fmt.Sprintf("wedged: %s did not end within %s; goroutines in %s", what, d, w.dumpGoroutinesTo("wedged-goroutines.txt"))
	w.logf("%s", w.wedged)
	w.undo = nil
	w.keep = true
	return false
}

// wedgedReport is the report of a run that could not go on.
func (w *world) wedgedReport(in *injector, load *workload) *RunReport {
	hits, seen := w.net.counts()
	rep := &RunReport{Seed: w.cfg.Seed, Params: w.p, Injected: hits, Requests: seen, Faults: in.snapshot(), Exits: w.fleet.exitCounts(),
		Violations: []string{w.wedged}}
	load.mu.Lock()
	rep.Load = maps.Clone(load.counts)
	load.mu.Unlock()
	return rep
}

// watch reaps members whose Run ended on its own and starts them again,
// and restarts a reconciler that exited, until ctx ends.
func (w *world) watch(ctx context.Context, in *injector) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	var restarts sync.WaitGroup
	defer restarts.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			// A member that exited is started again on its dir, as a
			// supervisor would (a pod's restart): exits by design (a
			// broken disk, an outage past BrokerOutage) must not leave the
			// partitions without an owner for the rest of the load.
			for n := w.fleet.reap(); n > 0; n-- {
				restarts.Add(1)
				go func() {
					defer restarts.Done()
					w.restart(ctx)
				}()
			}
			rows, ok := w.rec.rows()
			if !ok {
				_ = w.rec.start(ctx)
			}
			w.escal.Note(rows)
		}
	}
}

// restart starts a member on a stopped dir after one exited on its own,
// as a supervisor would: after a second, and again with a growing pause
// while the start fails (a fault can fail it), until it succeeds or ctx
// ends (the dir then stays stopped: the heal starts it). A single try
// left a fleet whose only member had exited empty for the minute a
// hostile wave waited, and the reconciler escalated keys whose facts the
// stopped member held.
func (w *world) restart(ctx context.Context) {
	for pause := time.Second; ; pause = min(2*pause, 8*time.Second) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		err := w.fleet.start(ctx, w.fleet.stoppedDir(func(int) int { return 0 }))
		if err == nil {
			return
		}
		w.logf("restart after an exit: %v; trying again", err)
	}
}

// landed notes the partition a raw intent was produced to, when it is
// not its key's (another client's partitioner: the executor forwards it).
func (w *world) landed(in *wire.Intent, p int32) {
	if p == wire.Partition(in.RoutingKey(), w.p.Partitions) {
		return
	}
	w.landedMu.Lock()
	w.landedOn[in.Tenant+"\x00"+in.ID] = p
	w.landedMu.Unlock()
}

// undecided reports whether an intent (or, with no id, a key) lies on a
// partition whose log start was moved past its snapshot rounds: its key's
// partition, or the one it landed on.
func (w *world) undecided(tenant, id, rk string) bool {
	if w.mover.movedPast(wire.Partition(rk, w.p.Partitions)) {
		return true
	}
	if id == "" {
		return false
	}
	w.landedMu.Lock()
	p, ok := w.landedOn[tenant+"\x00"+id]
	w.landedMu.Unlock()
	return ok && w.mover.movedPast(p)
}

// settle waits until every intent has its terminal answer, except those
// of escalated keys and of undecided partitions, and the reconciler has
// nothing left but escalations; it returns the escalated keys and
// whether it settled in time.
func (w *world) settle(ctx context.Context) (map[string]bool, bool) {
	deadline := time.Now().Add(w.cfg.Settle)
	for {
		w.fleet.reap()
		if w.fleet.count() < w.p.Members {
			w.fleet.heal(ctx, w.p.Members)
		}
		rows, ok := w.rec.rows()
		if !ok {
			_ = w.rec.start(ctx)
		}
		w.escal.Note(rows)
		escalated, busy := map[string]bool{}, 0
		for _, r := range rows {
			switch rk := r.RoutingKey(); {
			case r.State == "escalated":
				escalated[rk] = true
			case !w.undecided("", "", rk):
				busy++
			}
		}
		open := 0
		for _, o := range w.tr.Open() {
			if rk := wire.RoutingKey(o.Tenant, o.Key); !escalated[rk] && !w.undecided(o.Tenant, o.ID, rk) {
				open++
			}
		}
		if ok && busy == 0 && open == 0 {
			w.logf("settled: nothing open, %d keys escalated", len(escalated))
			return escalated, true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			w.logf("settle timeout: %d intents open, %d keys under investigation; goroutines in %s", open, busy, w.dumpGoroutines())
			return escalated, false
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// dumpGoroutines writes every goroutine's stack into the run's dir, to
// see where a run that did not settle waits.
func (w *world) dumpGoroutines() string {
	path := w.dumpGoroutinesTo("goroutines.txt")
	for _, m := range w.fleet.members() {
		w.logf("%s at the settle timeout: ready %v, in flight %d", m.name, m.ex.Ready(), int(gaugeValue(m.ex.Metrics().InFlight)))
	}
	w.logf("the reconciler at the settle timeout: %s", w.rec.describe())
	w.logf("the group at the settle timeout: %s", w.consumed())
	return path
}

// consumed says, per partition of the intents and control topics, how far
// the group committed against the log's end.
func (w *world) consumed() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	committed, err := w.harnessAdm.FetchOffsets(ctx, w.group)
	if err != nil {
		return err.Error()
	}
	ends, err := w.harnessAdm.ListEndOffsets(ctx, w.names.Intents, w.names.Control)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	ends.Each(func(o kadm.ListedOffset) {
		c, _ := committed.Lookup(o.Topic, o.Partition)
		fmt.Fprintf(&b, "%s/%d committed %d of %d; ", o.Topic, o.Partition, c.At, o.Offset)
	})
	return b.String()
}

// dumpGoroutinesTo writes every goroutine's stack into a file of the
// run's dir and returns its path.
func (w *world) dumpGoroutinesTo(name string) string {
	path := filepath.Join(w.dir, name)
	f, err := os.Create(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	_ = pprof.Lookup("goroutine").WriteTo(f, 2)
	return path
}

// verdict reads the rest of the log and the dead letters and judges.
func (w *world) verdict(ctx context.Context, in *injector, load *workload, escalated map[string]bool, settled bool) (*RunReport, error) {
	vctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var stuck []string
	ends := map[int32]int64{}
	for p := int32(0); p < w.p.Partitions; p++ {
		end, err := eventlog.Target(vctx, w.harnessAdm, w.names.Events, p, 20*time.Second)
		if err != nil {
			stuck = append(stuck, err.Error())
			continue
		}
		ends[p] = end
	}
	if !w.tail.caughtUp(vctx, ends, 30*time.Second) {
		return nil, fmt.Errorf("sim: the harness's tail of %s did not reach its end", w.names.Events)
	}
	dead, err := chaos.ReadDeadLetters(vctx, w.brokers, w.names)
	if err != nil {
		return nil, err
	}
	facts, err := chaos.ReadFacts(vctx, w.brokers, w.names, kgo.ClientID(harnessID+"-facts"))
	if err != nil {
		return nil, err
	}
	aborted := w.fleet.abortedTotal()
	verdict := chaos.Judge(chaos.Evidence{Tracker: w.tr, Ledger: w.ledger.Stats(), History: w.hist, Escalated: escalated,
		Undecided: w.undecided, Stuck: stuck, Hostile: w.hostile, DeadLetters: dead, Aborted: aborted, Faults: in.total(),
		Escalations: &w.escal, Facts: facts})
	rep := w.report(in, load, verdict)
	if !settled {
		rep.Notes = append(rep.Notes, "the run did not settle within the settle time")
	}
	return rep, nil
}

func gaugeValue(g interface{ Write(*dto.Metric) error }) float64 {
	var m dto.Metric
	if err := g.Write(&m); err != nil || m.Gauge == nil {
		return 0
	}
	return m.Gauge.GetValue()
}

// explain logs each violation with the event log of its key and, for an
// intent without an answer, where it is on the intents topic.
func (w *world) explain(vs []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if w.hostile != nil {
		for _, h := range w.hostile.Records() {
			if h.ID != "" {
				w.placed(h.Tenant, h.ID, h.Partition, h.Offset)
			}
		}
	}
	committed, err := w.harnessAdm.FetchOffsets(ctx, w.group)
	if err != nil {
		w.logf("committed offsets of %s: %v", w.group, err)
	}
	for _, v := range vs {
		w.logf("VIOLATION %s", v)
		rk := routingKeyIn(v)
		if rk == "" {
			continue
		}
		w.logf("  log of %s: %s", rk, w.hist.Trail(rk))
		if id := intentIn(v); id != "" {
			w.logf("  intent %s: %s", id, w.whereIs(ctx, rk, id, committed))
		}
	}
}

// counterValue reads a counter's value.
func counterValue(c interface{ Write(*dto.Metric) error }) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil || m.Counter == nil {
		return 0
	}
	return m.Counter.GetValue()
}

func (w *world) report(in *injector, load *workload, v *chaos.Report) *RunReport {
	hits, seen := w.net.counts()
	starts, released := w.owners.result()
	rep := &RunReport{Seed: w.cfg.Seed, Params: w.p, Injected: hits, Requests: seen, Faults: in.snapshot(),
		Exits: w.fleet.exitCounts(), CallStarts: starts, Verdict: v}
	load.mu.Lock()
	rep.Load = load.counts
	load.mu.Unlock()
	rep.Commands, rep.CommandErrors = w.tr.Strays()
	rep.Violations = append(append([]string(nil), v.Violations...), released...)
	if w.tail.errs > 0 {
		rep.Violations = append(rep.Violations, fmt.Sprintf("undecodable_event: %d events the harness could not decode", w.tail.errs))
	}
	sort.Strings(rep.Violations)
	if len(rep.Violations) > 0 {
		w.keep = true
		w.explain(rep.Violations)
	}
	return rep
}

// routingKeyIn finds the first "<tenant>/<key>" word of a violation.
func routingKeyIn(v string) string {
	for _, f := range strings.Fields(v) {
		f = strings.Trim(f, ",:()")
		if strings.Count(f, "/") == 1 && !strings.HasPrefix(f, "/") && !strings.HasSuffix(f, "/") {
			return f
		}
	}
	return ""
}

// intentIn finds the intent id of a violation that names one ("intent
// <id> of").
func intentIn(v string) string {
	f := strings.Fields(v)
	for i := 0; i+2 < len(f); i++ {
		if f[i] == "intent" && f[i+2] == "of" {
			return f[i+1]
		}
	}
	return ""
}

// placed remembers where an intent was produced on the intents topic.
func (w *world) placed(tenant, id string, p int32, offset int64) {
	w.landedMu.Lock()
	w.placedAt[tenant+"\x00"+id] = placement{p, offset}
	w.landedMu.Unlock()
}

type placement struct {
	p      int32
	offset int64
}

// whereIs says where an unanswered intent is on the intents topic and
// whether the group has consumed past it (then a member decided it, or
// dropped it), for a person diagnosing a violation.
func (w *world) whereIs(ctx context.Context, rk, id string, committed kadm.OffsetResponses) string {
	tenant, _, _ := strings.Cut(rk, "/")
	w.landedMu.Lock()
	pl, ok := w.placedAt[tenant+"\x00"+id]
	w.landedMu.Unlock()
	if !ok {
		return "sent through package client (no offset known)"
	}
	c, found := committed.Lookup(w.names.Intents, pl.p)
	return fmt.Sprintf("produced to %s/%d@%d; the group's committed offset there is %d (found %v)", w.names.Intents, pl.p, pl.offset, c.At, found)
}
