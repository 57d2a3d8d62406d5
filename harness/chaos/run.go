package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/cli"
	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/internal/tokenfile"
	"github.com/atmostonce/toolexec/topics"
	"github.com/atmostonce/toolexec/wire"
)

// Run runs one chaos run: it starts the broker (when owned), the ledger,
// the network proxy, the executors and the reconciler, runs the load and
// the faults for cfg.Duration, lets the reconciler settle, and checks. It
// logs progress to logw. A non-nil error means the harness itself failed
// (the report is then incomplete); violations are in the report.
func Run(ctx context.Context, cfg Config, logw io.Writer) (*Report, error) {
	begin := time.Now()
	var logMu sync.Mutex
	logf := func(format string, a ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(logw, "%s chaos: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, a...))
	}
	logf("seed %d (replay: --seed %d)", cfg.Seed, cfg.Seed)
	rn := &run{cfg: cfg, logf: logf}
	defer rn.cleanup()
	if err := rn.loadKafkaConfig(ctx); err != nil {
		return nil, err
	}
	if err := rn.setup(ctx); err != nil {
		return nil, err
	}
	rep, err := rn.execute(ctx)
	if rep != nil {
		rep.Seconds = time.Since(begin).Seconds()
		rep.Seed = cfg.Seed
	}
	return rep, err
}

// run holds one run's parts, for setup and cleanup.
type run struct {
	cfg      Config
	logf     func(string, ...any)
	dir      string
	brokers  []string
	broker   *Broker
	cluster  *Cluster // a --cluster run's nodes; nil otherwise
	disks    *disks   // a --cluster run's executor disks; nil without disk faults
	ledger   *Ledger
	proxy    *NetProxy // executors -> ledger
	kproxy   *NetProxy // executors -> broker (own broker only)
	exBroker string    // the broker address the executors use
	fleet    *Fleet
	rec      *Proc
	names    topics.Names
	kopts    []kgo.Opt // Config.KafkaConfig's TLS and SASL options
	prod     *kgo.Client
	tr       *Tracker
	hostile  *Hostile
	counters *counterWatch
	// escalations: every call the reconciler listed escalated (facts.go)
	escalations escalationWatch
	undo        []func()
	recExits    int
	opToken     string // the reconciler's operator token: /pending is served to operators only
}

// loadKafkaConfig reads Config.KafkaConfig (checked against the broker at
// once) into rn.kopts.
func (rn *run) loadKafkaConfig(ctx context.Context) error {
	if rn.cfg.KafkaConfig == "" {
		return nil
	}
	if rn.cfg.OwnBroker {
		return fmt.Errorf("chaos: --kafka-config needs --own-broker=false: the private broker is plaintext")
	}
	conn, err := cli.Connect(ctx, rn.cfg.Brokers, rn.cfg.KafkaConfig, "", nil)
	if err != nil {
		return err
	}
	rn.kopts = conn.Opts
	return nil
}

// kafkaArgs are the processes' --kafka-config arguments, if any.
func (rn *run) kafkaArgs() []string {
	if rn.cfg.KafkaConfig == "" {
		return nil
	}
	return []string{"--kafka-config", rn.cfg.KafkaConfig}
}

func (rn *run) cleanup() {
	for i := len(rn.undo) - 1; i >= 0; i-- {
		rn.undo[i]()
	}
	if !rn.cfg.Keep && rn.dir != "" {
		_ = os.RemoveAll(rn.dir)
	} else if rn.dir != "" {
		rn.logf("kept %s (logs: ex*.log, reconciler.log)", rn.dir)
	}
}

func (rn *run) setup(ctx context.Context) error {
	var err error
	if rn.dir = rn.cfg.WorkDir; rn.dir == "" {
		if rn.dir, err = os.MkdirTemp("", "chaos-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(rn.dir, 0o755); err != nil {
		return err
	}
	rn.logf("work dir %s", rn.dir)
	if err := rn.startBroker(); err != nil {
		return err
	}
	rn.logf("building the executor (-tags faults) and the reconciler")
	exBin, recBin, err := Build(rn.cfg.Repo, rn.dir)
	if err != nil {
		return err
	}
	if err := rn.startTools(); err != nil {
		return err
	}
	// Not from the seed: a replay on a shared broker must not reuse the
	// topics (and stored outcomes) of the run it replays.
	tag := fmt.Sprintf("chaos%d-%x", rn.cfg.Seed, time.Now().UnixNano()&0xffffff)
	rn.names = topics.NamesWithPrefix(tag + ".")
	toolsFile := filepath.Join(rn.dir, "tools.yaml")
	if err := os.WriteFile(toolsFile, []byte(toolsYAML(rn.proxy.Addr())), 0o644); err != nil {
		return err
	}
	rn.fleet = &Fleet{bin: exBin, toolsFile: toolsFile, brokers: rn.exBroker, prefix: tag + ".", group: tag + "-ex",
		dir: rn.dir, partitions: rn.cfg.Partitions, logf: rn.logf, extraArgs: rn.kafkaArgs()}
	if rn.cluster != nil {
		// Stable ids, one per slot, as a StatefulSet would give: a
		// coordinator kill aims at a live executor's id.
		for i := 0; i < rn.cfg.Executors+2; i++ {
			rn.fleet.txnIDs = append(rn.fleet.txnIDs, fmt.Sprintf("%s-ex-%d", tag, i))
		}
		rn.fleet.disks = rn.disks
	}
	rn.undo = append(rn.undo, rn.fleet.stopAll)
	rn.logf("starting %d executors (group %s, topics %s*)", rn.cfg.Executors, tag+"-ex", tag+".")
	rn.fleet.ensure(rn.cfg.Executors)
	sctx, stopSupervisor := context.WithCancel(context.WithoutCancel(ctx))
	go rn.fleet.supervise(sctx)
	rn.undo = append(rn.undo, stopSupervisor)
	if len(rn.fleet.running()) == 0 {
		return fmt.Errorf("chaos: no executor started; see %s/ex0.log", rn.dir)
	}
	rn.rec = &Proc{Name: "reconciler", DataDir: filepath.Join(rn.dir, "rec-data"), HTTP: freeAddr(), Log: filepath.Join(rn.dir, "reconciler.log"), bin: recBin}
	operators, err := rn.operatorsFile()
	if err != nil {
		return err
	}
	rn.rec.args = []string{"--brokers", strings.Join(rn.brokers, ","), "--tools", toolsFile, "--data-dir", rn.rec.DataDir, "--http-addr", rn.rec.HTTP,
		"--topic-prefix", tag + ".", "--group", tag + "-rec", "--scan-interval", "1s", "--backoff", "1s", "--backoff-cap", "10s",
		"--session-timeout", "6s", "--command-timeout", "30s",
		// Over the recovery bound of the run's executors (12 s rebalance and
		// 10 s transaction timeouts, the broker's 1 s abort cleanup: 24 s,
		// docs/DESIGN.md) plus their facts' 5 s delivery backoff: what the
		// members know lands first, and the settle waits less.
		"--fact-grace", "40s", "--operators", operators}
	rn.rec.args = append(rn.rec.args, rn.kafkaArgs()...)
	if err := rn.rec.Start(); err != nil {
		return err
	}
	rn.undo = append(rn.undo, func() { rn.rec.Term(20 * time.Second) })
	if err := rn.rec.WaitReady(60 * time.Second); err != nil {
		return err
	}
	return rn.startClients(ctx)
}

func (rn *run) startBroker() error {
	if rn.cfg.Cluster {
		return rn.startCluster()
	}
	if !rn.cfg.OwnBroker {
		rn.brokers = []string{rn.cfg.Brokers}
		rn.exBroker = rn.cfg.Brokers
		rn.logf("using the broker at %s (no broker bounces and no broker network faults: it is not ours)", rn.cfg.Brokers)
		return nil
	}
	// The executors reach the broker through toxiproxy. A proxy in front
	// of a broker only works if the broker advertises the proxy's address
	// (clients connect to what metadata names), so the broker gets a
	// second listener, PROXIED, advertised at the proxy; the harness, the
	// load and the reconciler keep the direct PLAINTEXT listener.
	port := rn.cfg.BrokerPort
	rn.broker = &Broker{Repo: rn.cfg.Repo, RunDir: rn.cfg.BrokerRunDir, Port: port, CtlPort: port + 1, Features: rn.cfg.BrokerFeatures,
		Extra: proxiedListeners(port)}
	if err := rn.startOwned(rn.broker, "a private broker on "+rn.broker.Addr(), rn.broker.RunDir); err != nil {
		return err
	}
	rn.brokers = []string{rn.broker.Addr()}
	var err error
	rn.kproxy, err = proxyFor("kafka", port)
	if err != nil {
		return err
	}
	rn.undo = append(rn.undo, rn.kproxy.Close)
	rn.exBroker = rn.kproxy.Addr()
	rn.logf("executors reach the broker through toxiproxy on %s (listener PROXIED)", rn.exBroker)
	return nil
}

// ownedKafka is the private broker or cluster of a run.
type ownedKafka interface {
	Start() error
	Stop() error
	Wipe() error
}

// startOwned wipes k, starts it, and at the end of the run stops it,
// keeping its data with --keep, else wiping it.
func (rn *run) startOwned(k ownedKafka, what, runDir string) error {
	rn.logf("starting %s (run dir %s, wiped first)", what, runDir)
	_ = k.Wipe()
	if err := k.Start(); err != nil {
		return err
	}
	rn.undo = append(rn.undo, func() {
		if rn.cfg.Keep {
			// Its log is the evidence of a failure: the event log, the
			// answers and the transaction markers.
			rn.logf("stopping %s, data kept in %s (--keep)", what, runDir)
			_ = k.Stop()
			return
		}
		rn.logf("stopping %s", what)
		_ = k.Wipe()
	})
	return nil
}

// proxiedListeners are the listeners of a broker whose client port is
// port: PLAINTEXT for the harness, the controller's on port+1, and
// PROXIED on port+2, advertised at port+3 where its toxiproxy listens
// (clients connect to what metadata names, so a proxy only works if the
// broker advertises it).
func proxiedListeners(port int) string {
	return fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d,PROXIED://127.0.0.1:%d\n"+
		"advertised.listeners=PLAINTEXT://127.0.0.1:%d,PROXIED://127.0.0.1:%d\n"+
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,PROXIED:PLAINTEXT\n",
		port, port+1, port+2, port, port+3)
}

// proxyFor is the toxiproxy in front of the PROXIED listener of the
// broker whose client port is port (proxiedListeners).
func proxyFor(name string, port int) (*NetProxy, error) {
	return NewNetProxy(name, fmt.Sprintf("127.0.0.1:%d", port+3), fmt.Sprintf("127.0.0.1:%d", port+2))
}

func (rn *run) startTools() error {
	var err error
	if rn.ledger, err = NewLedger(rn.cfg.DropEvery); err != nil {
		return err
	}
	rn.undo = append(rn.undo, rn.ledger.Close)
	if rn.proxy, err = NewNetProxy("tools", "127.0.0.1:0", rn.ledger.Addr()); err != nil {
		return err
	}
	rn.undo = append(rn.undo, rn.proxy.Close)
	rn.logf("ledger on %s, executors reach it through toxiproxy on %s", rn.ledger.Addr(), rn.proxy.Addr())
	return nil
}

func (rn *run) startClients(ctx context.Context) error {
	var err error
	rn.prod, err = kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(rn.brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5 * time.Millisecond)}, rn.kopts...)...)
	if err != nil {
		return err
	}
	rn.undo = append(rn.undo, rn.prod.Close)
	rn.tr = newTracker(rn.names.Results)
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	rn.undo = append(rn.undo, cancel)
	if err := rn.tr.readResults(rctx, rn.brokers, rn.names.Results, rn.kopts...); err != nil {
		return err
	}
	if rn.hostile, err = newHostile(rn.brokers, rn.names, int32(rn.cfg.Partitions), rn.tr, rn.logf); err != nil {
		return err
	}
	rn.undo = append(rn.undo, rn.hostile.Close)
	rn.counters = &counterWatch{}
	go rn.counters.run(rctx, rn.fleet)
	return nil
}

// execute runs the load and the faults, settles and checks.
func (rn *run) execute(ctx context.Context) (*Report, error) {
	in := &Injector{rng: rand.New(rand.NewPCG(rn.cfg.Seed, 2)), fleet: rn.fleet, executors: rn.cfg.Executors, broker: rn.broker,
		net: rn.proxy, kafkaNet: rn.kproxy, gap: rn.cfg.FaultGap, logf: rn.logf, counts: map[string]int{}, detail: map[string]int{}, only: map[string]bool{},
		hostile: rn.hostile, waveCtx: ctx}
	rn.hostile.count = func(kind string) { in.note(FaultHostile, kind) }
	for _, k := range rn.cfg.Only {
		in.only[k] = true
	}
	adm := kadm.NewClient(rn.prod)
	if rn.cluster != nil {
		in.cl = clusterFaultsOn{cluster: rn.cluster, adm: adm, events: rn.names.Events, intents: rn.names.Intents,
			group: rn.fleet.group, txnIDs: rn.fleet.txnIDs, disks: rn.disks}
	}
	watch := newReplicaWatch(adm, rn.names.All()...)
	wctx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	go watch.run(wctx)
	ap := newApprover(rn.cfg.Seed, rn.prod, rn.names, int32(rn.cfg.Partitions))
	approverDone := make(chan struct{})
	go func() { defer close(approverDone); ap.Run(ctx) }()
	load := newLoad(rn.cfg.Seed, rn.cfg.Rate, rn.prod, rn.names, int32(rn.cfg.Partitions), rn.tr, fmt.Sprintf("s%d", rn.cfg.Seed), ap)
	lctx, cancel := context.WithTimeout(ctx, rn.cfg.Duration)
	defer cancel()
	stopWatch := rn.watchReconciler(lctx)
	ectx, stopEscalations := context.WithCancel(ctx)
	defer stopEscalations()
	go rn.watchEscalations(ectx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); load.Run(lctx) }()
	go func() { defer wg.Done(); in.Run(lctx) }()
	go rn.progress(lctx, in)
	wg.Wait()
	ap.Close()
	<-approverDone // its last decisions are sent before the settle
	rn.hostile.Wait()
	stopWatch()
	rn.logf("load and faults stopped; %v; settling (at most %s)", in, rn.cfg.Settle)
	escalated, err := rn.settle(ctx)
	if err != nil {
		return nil, err
	}
	stopWatching()
	rep, err := rn.verdict(ctx, in, load, escalated)
	if rep != nil {
		rep.LeaderElections, rep.ISRShrinks = watch.Counts()
		rep.Approver = ap.Counts()
	}
	return rep, err
}

// watchReconciler restarts the reconciler if it exits (it is not a fault
// target; an exit is logged, since it may be a bug).
func (rn *run) watchReconciler(ctx context.Context) func() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-rn.rec.Done():
				rn.recExits++
				rn.logf("the reconciler exited (see %s); restarting it", rn.rec.Log)
				time.Sleep(time.Second)
				_ = rn.rec.Start()
			}
		}
	}()
	return func() { <-done }
}

func (rn *run) progress(ctx context.Context, in *Injector) {
	t := time.NewTicker(15 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m, answers, _ := rn.tr.snapshot()
			rn.logf("progress: %d intents, %d answers, %d executors up, faults %v", len(m), answers, len(rn.fleet.running()), in)
		}
	}
}

// settle heals everything and waits until every intent has its terminal
// answer except those of escalated keys, and the reconciler has nothing
// left but escalations.
func (rn *run) settle(ctx context.Context) (map[string]bool, error) {
	rn.proxy.Remove()
	if rn.kproxy != nil {
		rn.kproxy.Remove()
	}
	if rn.broker != nil {
		if err := rn.broker.Start(); err != nil {
			return nil, err
		}
	}
	if err := rn.healCluster(); err != nil {
		return nil, err
	}
	rn.fleet.ensure(rn.cfg.Executors)
	if !rn.rec.Running() {
		_ = rn.rec.Start()
	}
	deadline := time.Now().Add(rn.cfg.Settle)
	var escalated map[string]bool
	for {
		rows, err := rn.pendingRows()
		rn.escalations.note(rows)
		escalated = map[string]bool{}
		busy := 0
		for _, w := range rows {
			if w.State == "escalated" {
				escalated[wire.RoutingKey(w.Tenant, w.Key)] = true
			} else {
				busy++
			}
		}
		open := 0
		for _, r := range rn.tr.open(time.Now()) {
			if !escalated[wire.RoutingKey(r.Tenant, r.Key)] {
				open++
			}
		}
		if err == nil && busy == 0 && open == 0 {
			rn.logf("settled: nothing open, %d keys escalated", len(escalated))
			return escalated, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			rn.logf("settle timeout: %d intents open, %d keys under investigation (pending err %v)", open, busy, err)
			diagnose(ctx, rn.brokers, rn.names, rn.fleet.group, rn.logf, rn.kopts...)
			return escalated, nil
		}
		time.Sleep(2 * time.Second)
	}
}

// pendingRow is the part of the reconciler's /pending rows the harness reads.
type pendingRow struct {
	Tenant, Key, Tool, State, Status string
	DownstreamKey                    string `json:"downstream_key"`
}

// operatorsFile writes the reconciler's operators file, one operator with
// a fresh token, which the harness keeps to read /pending.
func (rn *run) operatorsFile() (string, error) {
	rn.opToken = "chaos-" + client.NewID()
	path := filepath.Join(rn.dir, "operators.yaml")
	body := fmt.Sprintf("operators:\n  - name: chaos\n    tokens: [%q]\n", tokenfile.HashToken(rn.opToken))
	return path, os.WriteFile(path, []byte(body), 0o600)
}

func (rn *run) pendingRows() ([]pendingRow, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+rn.rec.HTTP+"/pending", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+rn.opToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("chaos: /pending: %s", resp.Status)
	}
	var body struct{ Rows []pendingRow }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("chaos: /pending: %w", err)
	}
	return body.Rows, nil
}

func (rn *run) verdict(ctx context.Context, in *Injector, load *Load, escalated map[string]bool) (*Report, error) {
	sctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	hist, stuck, err := scanEvents(sctx, rn.brokers, rn.names, rn.kopts...)
	if err != nil {
		return nil, err
	}
	dead, err := readDeadLetters(sctx, rn.brokers, rn.names)
	if err != nil {
		return nil, err
	}
	facts, err := readFacts(sctx, rn.brokers, rn.names, rn.kopts...)
	if err != nil {
		return nil, err
	}
	intents, answers, strays := rn.tr.snapshot()
	rep := &Report{Answers: answers, Load: load.counts}
	rep.Faults, rep.FaultDetail = in.Counts()
	check(checkInput{intents: intents, ledger: rn.ledger.Stats(), hist: hist, escalated: escalated, stuck: stuck,
		escalatedCalls: rn.escalations.calls(), facts: facts,
		hostile: rn.hostile.Records(), deadLetters: dead, aborted: rn.counters.Total(abortedMetric), faults: sumFaults(rep.Faults)}, rep)
	rep.CommitsUnconfirmed = rn.counters.Total(unconfirmedMetric)
	rep.CommitsAbortedAfterSuccess = rn.counters.Total(abortedAfterCommitMetric)
	rep.AbortedBehindOffsets = rn.counters.Total(abortedBehindOffsetsMetric)
	rep.FactsKept, rep.FactsDelivered = rn.counters.Total(factsKeptMetric), rn.counters.Total(factsDeliveredMetric)
	if rn.cfg.RequireAll {
		if len(rn.cfg.Only) == 0 || slices.Contains(rn.cfg.Only, FaultHostile) {
			for _, k := range poisonKinds {
				if rep.FaultDetail[FaultHostile+":"+k] == 0 {
					rep.violate("fault_not_injected: hostile %s (no wave sent it)", k)
				}
			}
		}
		for _, k := range in.kinds() {
			if rep.Faults[k] == 0 {
				rep.violate("fault_not_injected: %s (the run was too short to reach it)", k)
			}
		}
		for _, target := range in.netTargets() {
			if !hasPrefixKey(rep.FaultDetail, FaultNetwork+":"+target+":") {
				rep.violate("fault_not_injected: network between the executors and the %s", target)
			}
		}
	}
	rep.ExecutorExits = len(rn.fleet.Exits())
	rep.ReconcilerExits = rn.recExits
	for _, e := range rn.fleet.Exits() {
		rn.logf("unexpected executor exit: %s", e)
	}
	for _, c := range rn.fleet.Crashes() {
		rep.violate("executor_crash: %s", c)
	}
	for st, n := range strays {
		rep.Load["command_answers_"+st] = n
	}
	for rk := range escalated {
		h := hist[rk]
		tool, st := "?", "?"
		if h != nil {
			tool, st = h.Tool, h.LastStatus.String()
		}
		rn.logf("escalated: %s (%s, %s)", rk, tool, st)
	}
	return rep, nil
}

func hasPrefixKey(m map[string]int, prefix string) bool {
	for k, n := range m {
		if n > 0 && strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

func sumFaults(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
