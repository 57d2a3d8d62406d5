// Package sim is the seeded fault simulation behind harness/cmd/sim: one run
// drives the real executor members (executor.New, Run, Crash), a
// reconciler and agents using package client, in one process, against
// kfake, with a workload and a fault schedule drawn from the run's seed:
// every request kind the product sends refused, applied and answered with
// each error code Kafka documents for it (as a broker can answer it:
// truthfulWay), or applied with the answer lost;
// delays; members joining, leaving, crashing and losing their disk at
// random moments and at moments of the protocol (faults.go, anchored);
// the event log's start moved where retention may move it and past every
// snapshot round; Pebble WAL sync faults (members.go, disk); coordinator moves;
// hostile records. After healing every fault it waits for every intent's
// answer, stops the members, and judges with the chaos checks
// (chaos.Judge) and one of its own: no member starts a call for a
// partition after it released it (owners.go). See docs/RELIABILITY.md.
//
// A caller's duties, in order:
//
//  1. Fill a Config (harness/cmd/sim has the defaults); Seed picks the run.
//  2. Call Run once per process: it blocks for the load, the settle and
//     the verdict, and cleans up what it started, also when ctx is
//     cancelled. A panic of the product ends the process: harness/cmd/sim runs
//     each seed in a child process and counts that as a violation.
//  3. Read the RunReport: any entry in Violations is a broken promise; an
//     error from Run means the run could not be judged. A failed run's
//     directory (RunReport.Dir) keeps its log and report.
//
// A seed fixes the run's parameters, the workload's sequence of intents
// and the fault schedule's sequence of attempts; it does not fix time
// or goroutine scheduling, so a replay repeats the schedule, not always
// the violation.
//
// Files: config.go (the configuration, what a seed chooses), codes.go
// (the error codes per request kind, with their sources), network.go
// (refused, errored, lost and delayed requests; triggers), faults.go (the
// injector), members.go (the members and their disks), reconciler.go,
// workload.go (the agents), logstart.go (the harness's tail of the event
// log and the log mover), owners.go (the release check), run.go (one
// run), report.go (a run's report and the summary of many).
package sim
