// Package chaos is the fault harness behind harness/cmd/chaos: it runs the product
// as real processes (executors built with -tags faults, the reconciler), a
// ledger tool server that is the judge of effects, agent-like load, and
// faults arriving at random (kill -9, kills at each protocol point,
// zombies, scale changes, broker bounces, network toxics, state loss,
// waves of hostile records), then checks the promise against the ledger,
// the results topic, the dead letters, the executors' metrics and the
// event log. See docs/RELIABILITY.md.
//
// A caller's duties, in order:
//
//  1. Fill a Config (harness/cmd/chaos has the defaults). With OwnBroker the
//     harness starts, bounces, stops and wipes a broker of its own with
//     deploy/kafka; never point it at a broker others use with OwnBroker.
//  2. Call Run once; it blocks for Duration plus the settle time and
//     cleans up every process it started, also when ctx is cancelled.
//  3. Read the Report: any entry in Violations is a broken promise. An
//     error from Run means the harness could not judge (the report is nil).
//
// Files: run.go (orchestration, settle), fleet.go and procs.go (processes,
// supervisor, broker scripts), faults.go (the injector), netfault.go
// (toxiproxy), hostile.go (poison records), ledger.go (the tool server),
// load.go (agents), approver.go (the person who approves, denies or lets
// lapse the calls of the tool that needs approval), track.go (intents and
// answers), eventscan.go (the event log), deadletters.go, counters.go (the
// executors' counters: aborted and unconfirmed transactions), check.go,
// checkhostile.go and checkapproval.go (the verdict), judge.go (the verdict
// as a library, for harness/chaos/sim), diagnose.go (what to look at when a run
// does not settle); with --cluster, cluster.go and run_cluster.go (the three
// nodes, a proxy each), faults_cluster.go (the node and disk faults),
// disk.go (the executors' tmpfs disks), clusterwatch.go (leader
// elections, ISR shrinks, the wait for every replica in sync).
package chaos
