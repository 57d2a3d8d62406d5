package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// The fault kinds of a --cluster run, aimed at one node of the cluster
// (or, disk_full, at one executor's disk).
const (
	FaultLeaderKill           = "leader_kill"            // SIGKILL the leader of an events or intents partition
	FaultTxnCoordinatorKill   = "txn_coordinator_kill"   // SIGKILL the transaction coordinator of a live executor
	FaultGroupCoordinatorKill = "group_coordinator_kill" // SIGKILL the executors' group coordinator
	FaultNodePause            = "node_pause"             // SIGSTOP a node past its session timeout, then SIGCONT
	FaultRollingRestart       = "rolling_restart"        // stop and start each node in turn, cleanly
	FaultNodeCut              = "node_cut"               // cut one node from the executors (toxiproxy)
	FaultDiskFull             = "disk_full"              // fill an executor's disk (a tmpfs under its data dir)
)

// clusterFaults lists them in report order.
var clusterFaults = []string{FaultLeaderKill, FaultTxnCoordinatorKill, FaultGroupCoordinatorKill, FaultNodePause,
	FaultRollingRestart, FaultNodeCut, FaultDiskFull}

// clusterFirstRound is their order in the first round: the quickest
// first, the rolling restart (three stops and starts) last.
var clusterFirstRound = []string{FaultNodeCut, FaultDiskFull, FaultNodePause, FaultLeaderKill, FaultTxnCoordinatorKill,
	FaultGroupCoordinatorKill, FaultRollingRestart}

// Bounds of the node faults.
const (
	// inSyncWait bounds the wait for every replica in sync before a node
	// fault: past it the fault goes ahead (and the log says so).
	inSyncWait = 90 * time.Second
	// brokerSessionTimeout is Kafka's broker.session.timeout.ms default: a
	// node paused longer is fenced by the controller (its leaderships
	// move, it leaves every ISR).
	brokerSessionTimeout = 9 * time.Second
)

// clusterFaultsOn is the cluster part of an Injector.
type clusterFaultsOn struct {
	cluster *Cluster
	adm     *kadm.Client // the harness's own client, straight to the nodes
	events  string       // the run's topics
	intents string
	group   string   // the executors' group
	txnIDs  []string // the executors' transactional ids, by slot
	disks   *disks   // nil: no disk faults
}

// injectCluster injects a cluster fault; false when p is not one.
func (in *Injector) injectCluster(p plan) bool {
	switch p.kind {
	case FaultLeaderKill:
		in.leaderKill(p.point)
	case FaultTxnCoordinatorKill:
		in.coordinatorKill(FaultTxnCoordinatorKill)
	case FaultGroupCoordinatorKill:
		in.coordinatorKill(FaultGroupCoordinatorKill)
	case FaultNodePause:
		in.nodePause()
	case FaultRollingRestart:
		in.rollingRestart()
	case FaultNodeCut:
		in.nodeCut()
	case FaultDiskFull:
		in.diskFull()
	default:
		return false
	}
	return true
}

// beforeNodeFault waits until every replica is in sync.
func (in *Injector) beforeNodeFault(kind string) {
	if !waitInSync(context.Background(), in.cl.adm, inSyncWait) {
		in.logf("fault %s: replicas still out of sync after %s; going ahead", kind, inSyncWait)
	}
}

// killNode SIGKILLs node n and starts it again after a moment.
func (in *Injector) killNode(kind, detail string, n int32) {
	in.logf("fault %s (%s): kill -9 node %d", kind, detail, n)
	if err := in.cl.cluster.Node("kill", int(n)); err != nil {
		in.logf("%s: %v", kind, err)
		return
	}
	in.count(kind, detail)
	time.Sleep(time.Duration(500+in.rng.IntN(1500)) * time.Millisecond)
	in.startNode(n)
}

// startNode starts node n, trying three times.
func (in *Injector) startNode(n int32) {
	var err error
	for i := 0; i < 3; i++ {
		if err = in.cl.cluster.Node("start", int(n)); err == nil {
			return
		}
		in.logf("node %d start: %v", n, err)
	}
}

// leaderKill kills the leader of a random partition of the events or the
// intents topic (point chooses the topic; "" picks one).
func (in *Injector) leaderKill(topic string) {
	in.beforeNodeFault(FaultLeaderKill)
	if topic == "" {
		topic = []string{"events", "intents"}[in.rng.IntN(2)]
	}
	name := map[string]string{"events": in.cl.events, "intents": in.cl.intents}[topic]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	td, err := in.cl.adm.ListTopics(ctx, name)
	if err != nil || len(td[name].Partitions) == 0 {
		in.logf("leader_kill: metadata of %s: %v", name, err)
		return
	}
	p := int32(in.rng.IntN(len(td[name].Partitions)))
	leader := td[name].Partitions[p].Leader
	if leader < 1 {
		in.logf("leader_kill: %s/%d has no leader now", name, p)
		return
	}
	in.killNode(FaultLeaderKill, fmt.Sprintf("%s/%d", topic, p), leader)
}

// coordinatorKill kills the transaction coordinator of a random live
// executor's transactional id, or the executors' group coordinator.
func (in *Injector) coordinatorKill(kind string) {
	in.beforeNodeFault(kind)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rs kadm.FindCoordinatorResponses
	var id string
	if kind == FaultGroupCoordinatorKill {
		id = in.cl.group
		rs = in.cl.adm.FindGroupCoordinators(ctx, id)
	} else {
		id = in.liveTxnID()
		rs = in.cl.adm.FindTxnCoordinators(ctx, id)
	}
	r := rs[id]
	if r.Err != nil || r.NodeID < 1 {
		in.logf("%s: no coordinator for %q: %v", kind, id, r.Err)
		return
	}
	in.killNode(kind, id, r.NodeID)
}

// liveTxnID is the transactional id of a running executor.
func (in *Injector) liveTxnID() string {
	if p := in.fleet.pick(in.rng); p != nil {
		return in.cl.txnIDs[in.fleet.slotOf(p)]
	}
	return in.cl.txnIDs[0]
}

// nodePause stops a node (SIGSTOP) past its session timeout: it keeps its
// sockets and its leaderships until the controller fences it, then wakes
// as a zombie broker.
func (in *Injector) nodePause() {
	in.beforeNodeFault(FaultNodePause)
	n := 1 + in.rng.IntN(clusterNodes)
	d := brokerSessionTimeout + time.Duration(1000+in.rng.IntN(3000))*time.Millisecond
	in.logf("fault node_pause: SIGSTOP node %d for %s", n, d)
	if err := in.cl.cluster.Node("pause", n); err != nil {
		in.logf("node_pause: %v", err)
		return
	}
	in.count(FaultNodePause, fmt.Sprintf("node%d", n))
	time.Sleep(d)
	if err := in.cl.cluster.Node("resume", n); err != nil {
		in.logf("node_pause: resume: %v", err)
	}
}

// rollingRestart stops and starts each node in turn, cleanly, waiting for
// every replica in sync before each, as an upgrade would.
func (in *Injector) rollingRestart() {
	in.logf("fault rolling_restart: nodes 1, 2, 3 in turn")
	for n := 1; n <= clusterNodes; n++ {
		in.beforeNodeFault(FaultRollingRestart)
		if err := in.cl.cluster.Node("stop", n); err != nil {
			in.logf("rolling_restart: stop node %d: %v", n, err)
		}
		in.startNode(int32(n))
	}
	in.count(FaultRollingRestart, "")
}

// nodeCut cuts one node from the executors (every byte between them held,
// both ways, as a network partition would) for a few seconds; the nodes
// still replicate among themselves.
func (in *Injector) nodeCut() {
	n := 1 + in.rng.IntN(clusterNodes)
	d := time.Duration(3000+in.rng.IntN(4000)) * time.Millisecond
	proxy := in.cl.cluster.proxy(n)
	in.logf("fault node_cut: node %d cut from the executors for %s", n, d)
	for _, stream := range []string{"upstream", "downstream"} {
		if err := proxy.Add(Toxic{Kind: "timeout", Stream: stream, Attrs: `{"timeout":0}`}); err != nil {
			in.logf("node_cut: %v", err)
			proxy.Remove()
			return
		}
	}
	in.count(FaultNodeCut, fmt.Sprintf("node%d", n))
	time.Sleep(d)
	proxy.Remove()
}

// diskFull fills the disk under a running executor's data dir: its next
// write of the view that needs new space fails, and it must stop deciding
// (it exits). Pebble writes its log into space allocated ahead, so a
// member may go on for a while: if it has not stopped after diskFullWait,
// it is restarted onto the full disk, where opening its view needs space
// and must fail. The disk is then freed and the member started again.
func (in *Injector) diskFull() {
	if in.cl.disks == nil {
		return
	}
	p := in.fleet.pick(in.rng)
	if p == nil {
		return
	}
	defer in.fleet.hold(p)()
	in.logf("fault disk_full: the disk of %s is full", p.Name)
	if err := in.cl.disks.fill(p.DataDir); err != nil {
		in.logf("disk_full: %v", err)
		return
	}
	detail := "stopped"
	select {
	case <-p.Done():
		in.logf("fault disk_full: %s stopped (exit %d)", p.Name, p.ExitCode())
	case <-time.After(diskFullWait):
		detail = in.restartOnFullDisk(p)
	}
	in.count(FaultDiskFull, detail)
	if err := in.cl.disks.free(p.DataDir); err != nil {
		in.logf("disk_full: %v", err)
	}
	if !p.Running() {
		in.fleet.start(p)
	}
}

// diskFullWait is how long a member with a full disk may go on before it
// is restarted onto it.
const diskFullWait = 6 * time.Second

// restartOnFullDisk kill -9s p and starts it again on its full disk.
func (in *Injector) restartOnFullDisk(p *Proc) string {
	in.logf("fault disk_full: %s still runs (its log had room ahead); kill -9 and start it on the full disk", p.Name)
	p.Kill()
	if err := p.Start(); err != nil {
		in.logf("disk_full: %v", err)
		return "restart_refused"
	}
	select {
	case <-p.Done():
		in.logf("fault disk_full: %s could not start on the full disk (exit %d)", p.Name, p.ExitCode())
		return "restart_refused"
	case <-time.After(diskFullWait):
		in.logf("fault disk_full: %s started on the full disk and runs", p.Name)
		return "restarted_and_runs"
	}
}
