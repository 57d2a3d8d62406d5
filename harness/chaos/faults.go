package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"time"
)

const (
	sigCONT = syscall.SIGCONT
	sigSTOP = syscall.SIGSTOP
)

// Fault kinds, as counted in the report.
const (
	FaultKill         = "kill"
	FaultZombie       = "zombie"
	FaultScale        = "scale"
	FaultBrokerBounce = "broker_bounce"
	FaultNetwork      = "network"
	FaultStateLoss    = "state_loss"
	FaultHostile      = "hostile"
)

// allFaults lists the fault kinds in report order.
var allFaults = []string{FaultKill, FaultZombie, FaultScale, FaultBrokerBounce, FaultNetwork, FaultStateLoss, FaultHostile}

// protocolPoints are the executor's fault points (executor/hooks.go), in
// the order of the protocol.
var protocolPoints = []string{"before_started_commit", "after_started_commit", "during_call", "after_call", "during_outcome_commit"}

// Injector injects one fault at a time while the load runs. The sequence
// of choices comes from the seed; the moments they hit do not (real
// processes), which is why every fault is logged with its time.
type Injector struct {
	rng       *rand.Rand
	fleet     *Fleet
	executors int
	broker    *Broker   // nil: no bounces (an external broker)
	net       *NetProxy // executors <-> tools
	kafkaNet  *NetProxy // executors <-> broker; nil with an external broker
	gap       time.Duration
	only      map[string]bool // empty: every kind
	logf      func(string, ...any)
	hostile   *Hostile        // nil: no hostile waves
	cl        clusterFaultsOn // a --cluster run's node and disk faults; zero otherwise
	// waveCtx outlives the load: a wave in progress when the load stops is
	// finished, so that its records are judged whole.
	waveCtx context.Context

	mu     sync.Mutex
	counts map[string]int
	detail map[string]int // kill points, bounce kinds, toxics
	scaled int            // executors above cfg.Executors right now (-1: one removed)
}

func (in *Injector) count(kind, detail string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.counts[kind]++
	if detail != "" {
		in.detail[kind+":"+detail]++
	}
}

// Counts returns the faults injected, by kind, and by detail.
func (in *Injector) Counts() (map[string]int, map[string]int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	c, d := map[string]int{}, map[string]int{}
	for _, k := range in.allKinds() {
		c[k] = in.counts[k]
	}
	for k, v := range in.detail {
		d[k] = v
	}
	return c, d
}

// note counts a detail of a fault kind without counting a fault.
func (in *Injector) note(kind, detail string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.detail[kind+":"+detail]++
}

// allKinds is every fault kind of this run's mode: a --cluster run has
// the cluster's kinds and no broker bounce (a rolling restart and node
// kills instead).
func (in *Injector) allKinds() []string {
	if in.cl.cluster == nil {
		return allFaults
	}
	var out []string
	for _, k := range allFaults {
		if k != FaultBrokerBounce {
			out = append(out, k)
		}
	}
	return append(out, clusterFaults...)
}

// kinds lists the fault kinds this run can inject: all of its mode's,
// less broker bounces with a broker that is not ours, disk faults without
// the disks for them, and those --only leaves out.
func (in *Injector) kinds() []string {
	var out []string
	for _, k := range in.allKinds() {
		if k == FaultBrokerBounce && in.broker == nil || k == FaultHostile && in.hostile == nil ||
			k == FaultDiskFull && in.cl.disks == nil || len(in.only) > 0 && !in.only[k] {
			continue
		}
		out = append(out, k)
	}
	return out
}

// netTargets lists where network faults go: the tools, and the broker
// when it is ours.
func (in *Injector) netTargets() []string {
	if len(in.only) > 0 && !in.only[FaultNetwork] {
		return nil
	}
	if in.kafkaNet != nil {
		return []string{"tools", "kafka"}
	}
	return []string{"tools"}
}

// plan is one fault to inject: a kind, and for protocol kills the point.
type plan struct{ kind, point string }

// firstRound covers every kind once (in a seeded order, first), then every
// protocol point and the other direction of scale and bounce, so that even
// a short run injects them all. (The first hostile wave starts beside it,
// see Run.)
func (in *Injector) firstRound() []plan {
	kinds := []plan{{FaultKill, ""}, {FaultZombie, ""}, {FaultScale, ""}, {FaultNetwork, "tools"}, {FaultStateLoss, ""}}
	rest := []plan{{FaultScale, ""}}
	if in.kafkaNet != nil {
		rest = append(rest, plan{FaultNetwork, "kafka"})
	}
	if in.broker != nil {
		kinds = append(kinds, plan{FaultBrokerBounce, "clean"})
		rest = append(rest, plan{FaultBrokerBounce, "hard"})
	}
	for _, p := range protocolPoints {
		rest = append(rest, plan{FaultKill, p})
	}
	var cluster []plan
	if in.cl.cluster != nil {
		// After the other kinds, shortest first and the rolling restart
		// last: a fault in progress when the run ends is finished, so a
		// short run reaches every kind.
		for _, k := range clusterFirstRound {
			cluster = append(cluster, plan{k, ""})
		}
		rest = append(rest, plan{FaultLeaderKill, "events"}, plan{FaultLeaderKill, "intents"})
	}
	shuffle := func(ps []plan) { in.rng.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] }) }
	shuffle(kinds)
	shuffle(rest)
	return append(append(kinds, cluster...), rest...)
}

func (in *Injector) randomPlan() plan {
	if in.cl.cluster != nil && in.rng.IntN(100) < 40 {
		return plan{clusterFaults[in.rng.IntN(len(clusterFaults))], ""}
	}
	r := in.rng.IntN(100)
	switch {
	case r < 25:
		return plan{FaultKill, ""}
	case r < 40:
		return plan{FaultKill, protocolPoints[in.rng.IntN(len(protocolPoints))]}
	case r < 52:
		return plan{FaultZombie, ""}
	case r < 64:
		return plan{FaultScale, ""}
	case r < 70 && in.broker != nil:
		return plan{FaultBrokerBounce, []string{"clean", "hard"}[in.rng.IntN(2)]}
	case r < 88:
		return plan{FaultNetwork, ""}
	case r < 96:
		return plan{FaultStateLoss, ""}
	default:
		return plan{FaultHostile, ""}
	}
}

// firstWaveAfter is when the first hostile wave starts. It runs beside
// the first round instead of taking a turn in it, so that a short run
// covers every other kind as before.
const firstWaveAfter = 10 * time.Second

// Run injects faults until ctx ends; the fault in progress is finished.
func (in *Injector) Run(ctx context.Context) {
	if len(in.only) == 0 || in.only[FaultHostile] {
		go func() {
			select {
			case <-ctx.Done():
			case <-time.After(firstWaveAfter):
				in.hostileWave()
			}
		}()
	}
	queue := in.firstRound()
	for ctx.Err() == nil {
		var p plan
		if len(queue) > 0 {
			p, queue = queue[0], queue[1:]
		} else {
			p = in.randomPlan()
		}
		if len(in.only) > 0 && !in.only[p.kind] {
			continue
		}
		in.inject(p)
		select {
		case <-ctx.Done():
		case <-time.After(in.gap/2 + time.Duration(in.rng.Int64N(int64(in.gap)))):
		}
	}
}

func (in *Injector) inject(p plan) {
	switch p.kind {
	case FaultKill:
		if p.point == "" {
			in.kill()
		} else {
			in.killAt(p.point)
		}
	case FaultZombie:
		in.zombie()
	case FaultScale:
		in.scale()
	case FaultBrokerBounce:
		in.bounce(p.point)
	case FaultNetwork:
		in.network(p.point)
	case FaultStateLoss:
		in.stateLoss()
	case FaultHostile:
		in.hostileWave()
	default:
		in.injectCluster(p)
	}
}

// hostileWave starts a wave of poison records in the background (one at a
// time: a wave in progress makes this a no-op), so that the other faults
// go on meanwhile.
func (in *Injector) hostileWave() {
	if in.hostile == nil {
		return
	}
	if in.hostile.Start(in.waveCtx) {
		in.logf("fault hostile: a wave of poison records")
		in.count(FaultHostile, "")
	}
}

// kill: kill -9 a random executor, restart it after a moment.
func (in *Injector) kill() {
	p := in.fleet.pick(in.rng)
	if p == nil {
		return
	}
	defer in.fleet.hold(p)()
	in.logf("fault kill -9 %s", p.Name)
	p.Kill()
	in.count(FaultKill, "random")
	time.Sleep(time.Duration(200+in.rng.IntN(2000)) * time.Millisecond)
	in.fleet.start(p)
}

// killAt: restart an executor with TOOLEXEC_FAULT=<point>:exit for one
// life; it dies (exit 137, as kill -9 leaves it) the first time its loop
// reaches the point. If it does not within 30 s, it is killed anyway.
func (in *Injector) killAt(point string) {
	p := in.fleet.pick(in.rng)
	if p == nil {
		return
	}
	defer in.fleet.hold(p)()
	in.logf("fault kill at %s: restarting %s armed", point, p.Name)
	p.Kill()
	in.fleet.start(p, "TOOLEXEC_FAULT="+point+":exit")
	select {
	case <-p.Done():
		in.logf("fault kill at %s: %s died at the point", point, p.Name)
		in.count(FaultKill, point)
	case <-time.After(30 * time.Second):
		in.logf("fault kill at %s: %s never reached it in 30s; kill -9", point, p.Name)
		p.Kill()
		in.count(FaultKill, point+"(not reached)")
	}
	in.fleet.start(p)
}

// zombie: SIGSTOP past the session timeout, SIGCONT after the rebalance.
func (in *Injector) zombie() {
	p := in.fleet.pick(in.rng)
	if p == nil {
		return
	}
	defer in.fleet.hold(p)()
	d := sessionTimeout + time.Duration(2000+in.rng.IntN(4000))*time.Millisecond
	in.logf("fault zombie: SIGSTOP %s for %s", p.Name, d)
	p.Signal(sigSTOP)
	in.count(FaultZombie, "")
	time.Sleep(d)
	p.Signal(sigCONT)
}

// scale: add an executor (up to Executors+1) or remove one (down to
// Executors-1), alternating around the nominal size.
func (in *Injector) scale() {
	in.mu.Lock()
	up := in.scaled <= 0
	if up {
		in.scaled++
	} else {
		in.scaled--
	}
	target := in.executors + in.scaled
	in.mu.Unlock()
	in.logf("fault scale to %d executors", target)
	in.fleet.ensure(target)
	in.count(FaultScale, map[bool]string{true: "up", false: "down"}[up])
}

// bounce: stop and start the broker, cleanly or with kill -9.
func (in *Injector) bounce(kind string) {
	if in.broker == nil {
		return
	}
	in.logf("fault broker bounce (%s)", kind)
	var err error
	if kind == "hard" {
		err = in.broker.KillHard()
	} else {
		err = in.broker.Stop()
	}
	if err != nil {
		in.logf("broker bounce: %v", err)
	}
	time.Sleep(time.Duration(500+in.rng.IntN(3000)) * time.Millisecond)
	for i := 0; i < 3; i++ {
		if err = in.broker.Start(); err == nil {
			break
		}
		in.logf("broker start: %v", err)
	}
	in.count(FaultBrokerBounce, kind)
}

// network: one toxic between the executors and the tool server, or
// (with our own broker, half the time) between the executors and the
// broker.
func (in *Injector) network(target string) {
	if target == "" && in.kafkaNet != nil && in.rng.IntN(2) == 0 || target == "kafka" && in.kafkaNet != nil {
		target = "kafka"
	}
	proxy, menu := in.net, toolToxics
	if target == "kafka" {
		proxy, menu = in.kafkaNet, kafkaToxics
	}
	t := menu[in.rng.IntN(len(menu))]
	d := time.Duration(2000+in.rng.IntN(4000)) * time.Millisecond
	in.logf("fault network %s: %s for %s", proxy.name, t, d)
	if err := proxy.Add(t); err != nil {
		in.logf("toxic: %v", err)
		return
	}
	in.count(FaultNetwork, proxy.name+":"+t.Kind+"/"+t.Stream)
	time.Sleep(d)
	proxy.Remove()
}

// stateLoss: kill -9 an executor, delete its Pebble view, restart it.
func (in *Injector) stateLoss() {
	p := in.fleet.pick(in.rng)
	if p == nil {
		return
	}
	defer in.fleet.hold(p)()
	in.logf("fault state loss: kill -9 %s, rm -rf %s", p.Name, p.DataDir)
	p.Kill()
	if err := in.fleet.wipe(p); err != nil {
		in.logf("wipe: %v", err)
	}
	in.count(FaultStateLoss, "")
	in.fleet.start(p)
}

func (in *Injector) String() string { c, _ := in.Counts(); return fmt.Sprint(c) }
