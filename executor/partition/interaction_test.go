package partition_test

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/atmostonce/toolexec/executor/partition"
	"github.com/atmostonce/toolexec/overlay"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/wire"
)

// Interaction tests of the partition core, in the style of etcd raft's:
// each file in testdata is a conversation with one member's core, the
// commands as inputs and the Decisions (or the state) as the expected output.
// Run with -rewrite to regenerate the expected outputs after a deliberate
// change, then read the diff.
//
// Commands:
//
//	assign p=0,1            take partitions on (new epochs)
//	revoke p=0              give one up
//	tick                    step a batch (one input per line, below), print the Decisions
//	commit [unwritten]      the pending Decisions' transaction committed: write the log and the view
//	                        (unwritten: the view write failed, the log has it)
//	snapshot-step n=1       a new core (same view and log) restating n records a tick
//	abort [unknown] [committed] [poison=N,M] [gone=N]
//	                        it did not (unknown: the end's outcome is unknown;
//	                        committed: it did commit after all, in the log only;
//	                        poison: records of those inputs could not be produced;
//	                        gone: input N's answer went to a deleted reply_to topic)
//	restored p=0            the partition's restore succeeded (the log is folded into the view first)
//	gapped p=0              its restore found a gap
//	gapwait p=0             may its records be decided?
//	background              the restores the core wants without a record (idle, gap retry)
//	finish call=A status=succeeded [result=r] [epoch=N]
//	                        a dispatched call returned
//	advance d=5s            move time on
//	crash                   the member dies; a new core (same view and log) owns nothing
//	doubt p=0               keys in doubt on p with no call running here
//	view                    the records and pending reads of the view
//	places member=N tool=N  a new core whose member, and each named tool, hold at most N calls
//	held tenants=a,b [tool=pay]
//	                        the places each tenant holds, at the tool or in the member
//
// Input lines of tick:
//
//	call id=A key=k tool=pay [args=1] [on=P] [tenant=t] [reply=topic]
//	compensate id=C key=k [callid=A] [force]
//	resolve id=R key=k outcome=succeeded [force]
//	approve id=P key=k [callid=A] [args=1]     (deny likewise; args: the digest decided on)
//	bad id=X key=k reason=undecodable
func TestInteraction(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := newHarness()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := h.run(d)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
	})
}

const partitions = 2

var base = time.UnixMilli(1_000_000)

func policies(tool string) (saga.Policy, bool) {
	switch tool {
	case "pay":
		return saga.Policy{PendingTTLMs: 100, RetentionMs: 1000, CompensateWith: "refund"}, true
	case "refund":
		return saga.Policy{PendingTTLMs: 100, RetentionMs: 1000}, true
	case "email":
		return saga.Policy{PendingTTLMs: 100, RetentionMs: 1000}, true
	case "lookup":
		return saga.Policy{ReadOnly: true}, true
	case "wire": // approval: required
		return saga.Policy{PendingTTLMs: 100, RetentionMs: 1000, ApprovalTTLMs: 5000, Approvers: "ops"}, true
	}
	return saga.Policy{}, false
}

// harness is one member's core over a view and a log that survive it.
type harness struct {
	now      time.Time
	snapStep int // the core's SnapshotStep; 0: the default
	places   partition.Admission
	view     *memView
	log      map[int32][]saga.Event // committed events, per partition
	core     *partition.Core
	pending  *partition.Decisions
	batch    *partition.Poll
	running  map[string]partition.Call // dispatched calls by call id
}

func newHarness() *harness {
	h := &harness{now: base, view: newMemView(), log: map[int32][]saga.Event{}, running: map[string]partition.Call{}}
	h.core = h.newCore()
	return h
}

func (h *harness) newCore() *partition.Core {
	cfg := partition.Config{Partitions: partitions, MaxWaiters: 4, Policy: policies, SweepInterval: 10 * time.Second,
		SnapshotInterval: time.Hour, SnapshotStep: h.snapStep, Admission: h.places, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		CheckSnapshot: func(ev *saga.Event) error {
			if ev.Snapshot != nil && string(ev.Snapshot.Args) == "huge" {
				return fmt.Errorf("too large")
			}
			return nil
		}}
	return partition.New(cfg, h.view, h.now)
}

func (h *harness) run(d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "assign":
		h.core.Assign(h.now, parts(d)...)
		return "ok\n", nil
	case "revoke":
		rel := h.core.Revoke(parts(d)[0])
		slices.Sort(rel.Lost)
		return fmt.Sprintf("lost %v gapped %v\n", rel.Lost, rel.Gapped), nil
	case "tick":
		return h.tick(d)
	case "commit":
		return h.commit(!d.HasArg("unwritten"))
	case "snapshot-step":
		n, err := strconv.Atoi(arg(d, "n"))
		if err != nil {
			return "", err
		}
		h.snapStep = n
		h.core = h.newCore()
		return "ok\n", nil
	case "abort":
		return h.abort(d)
	case "restored":
		return h.restored(parts(d)[0]), nil
	case "gapped":
		return fmt.Sprintf("new %v\n", h.core.Gapped(h.now, parts(d)[0], fmt.Errorf("log starts past the checkpoint"))), nil
	case "gapwait":
		if err := h.core.GapWait(h.now, parts(d)[0]); err != nil {
			return "wait: " + err.Error() + "\n", nil
		}
		return "decide\n", nil
	case "background":
		return h.background(), nil
	case "finish":
		return h.finish(d)
	case "advance":
		dur, err := time.ParseDuration(arg(d, "d"))
		if err != nil {
			return "", err
		}
		h.now = h.now.Add(dur)
		return fmt.Sprintf("t=%s\n", h.now.Sub(base)), nil
	case "crash":
		h.core, h.pending, h.running = h.newCore(), nil, map[string]partition.Call{}
		return "a new core owns nothing\n", nil
	case "doubt":
		return fmt.Sprintf("%d\n", h.core.KeysInDoubt(parts(d)[0])), nil
	case "view":
		return h.view.String(), nil
	case "places":
		return h.setPlaces(d)
	case "held":
		return h.held(d), nil
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

// setPlaces makes a new core (same view and log) with the places the
// command names: member=N, and N per tool for every other argument.
func (h *harness) setPlaces(d *datadriven.TestData) (string, error) {
	caps := map[string]int{}
	for _, a := range d.CmdArgs {
		n, err := strconv.Atoi(a.Vals[0])
		if err != nil {
			return "", err
		}
		if a.Key == "member" {
			h.places.MemberCap = n
			continue
		}
		caps[a.Key] = n
	}
	h.places.ToolCap = func(tool string) int { return caps[tool] }
	h.core = h.newCore()
	return "ok\n", nil
}

func (h *harness) held(d *datadriven.TestData) string {
	var sb strings.Builder
	for _, tenant := range strings.Split(arg(d, "tenants"), ",") {
		fmt.Fprintf(&sb, "%s=%d ", tenant, h.core.Held(arg(d, "tool"), tenant))
	}
	return strings.TrimSpace(sb.String()) + "\n"
}

func (h *harness) tick(d *datadriven.TestData) (string, error) {
	if h.pending != nil {
		return "", fmt.Errorf("a Ready is pending")
	}
	b := &partition.Poll{}
	offsets := map[int32]int64{}
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		in, err := input(line, offsets)
		if err != nil {
			return "", err
		}
		b.Inputs = append(b.Inputs, in)
	}
	rd, err := h.core.Step(h.now, b)
	if err != nil {
		return "", err
	}
	if len(rd.Restore) > 0 {
		return fmt.Sprintf("restore first: %v\n", rd.Restore), nil
	}
	h.pending, h.batch = rd, b
	return describe(rd, b), nil
}

func (h *harness) commit(written bool) (string, error) {
	rd := h.pending
	if rd == nil {
		return "", fmt.Errorf("no Ready pending")
	}
	h.pending = nil
	h.appendLog(rd)
	cps := map[int32]int64{}
	for p := range rd.Touched() {
		cps[p] = int64(len(h.log[p]))
	}
	if written {
		if err := rd.Overlay.Write(h.view, "events", cps, nil); err != nil {
			return "", err
		}
	}
	changed := h.core.Committed(rd, written)
	for _, c := range rd.Calls {
		h.running[c.CallID] = c
	}
	var sb strings.Builder
	slices.Sort(changed)
	for _, p := range changed {
		fmt.Fprintf(&sb, "doubt p%d: %d\n", p, h.core.KeysInDoubt(p))
	}
	fmt.Fprintf(&sb, "in flight: %d\n", h.core.InFlight())
	return sb.String(), nil
}

func (h *harness) appendLog(rd *partition.Decisions) {
	for _, ev := range rd.Events {
		h.log[ev.P] = append(h.log[ev.P], ev.Ev)
	}
}

func (h *harness) abort(d *datadriven.TestData) (string, error) {
	rd := h.pending
	if rd == nil {
		return "", fmt.Errorf("no Ready pending")
	}
	h.pending = nil
	if d.HasArg("committed") {
		h.appendLog(rd) // in the log, not in the view
	}
	var sb strings.Builder
	for _, n := range intList(arg(d, "poison")) {
		iso := h.core.Poisoned(h.batch.Inputs[n].Origin, false)
		fmt.Fprintf(&sb, "input %d poisoned, isolated %v\n", n, iso)
	}
	for _, n := range intList(arg(d, "gone")) {
		iso := h.core.Poisoned(h.batch.Inputs[n].Origin, true)
		fmt.Fprintf(&sb, "input %d's reply topic gone, isolated %v\n", n, iso)
	}
	h.core.Aborted(rd, d.HasArg("unknown"))
	fmt.Fprintf(&sb, "in flight: %d, unrecorded: %d\n", h.core.InFlight(), h.core.Unrecorded())
	return sb.String(), nil
}

// restored folds the log past the view's checkpoint into the view (as
// eventlog.RestoreInto does, through the same overlay), then tells the
// core.
func (h *harness) restored(p int32) string {
	from, _ := h.view.Checkpoint(p)
	ov := overlay.New(h.view)
	for _, ev := range h.log[p][from:] {
		e := ev
		_ = ov.Fold(p, &e)
	}
	_ = ov.Write(h.view, "events", map[int32]int64{p: int64(len(h.log[p]))}, nil)
	resumed, gapEnded := h.core.Restored(p)
	var sb strings.Builder
	fmt.Fprintf(&sb, "folded %d events; gap ended %v\n", int64(len(h.log[p]))-from, gapEnded)
	for _, c := range resumed {
		h.running[c.CallID] = c
		fmt.Fprintf(&sb, "resumed read: %s\n", call(c))
	}
	return sb.String()
}

func (h *harness) background() string {
	var sb strings.Builder
	if p, ok := h.core.IdleRestore(h.now); ok {
		fmt.Fprintf(&sb, "idle restore p%d\n", p)
	}
	if p, ok := h.core.GapRetry(h.now); ok {
		fmt.Fprintf(&sb, "gap retry p%d\n", p)
	}
	if sb.Len() == 0 {
		return "nothing\n"
	}
	return sb.String()
}

func (h *harness) finish(d *datadriven.TestData) (string, error) {
	c, ok := h.running[arg(d, "call")]
	if !ok {
		return "", fmt.Errorf("no call %s running", arg(d, "call"))
	}
	delete(h.running, c.CallID)
	if e := arg(d, "epoch"); e != "" {
		n, _ := strconv.ParseUint(e, 10, 64)
		c.Epoch = n
	}
	st, ok := saga.ParseStatus(arg(d, "status"))
	if !ok {
		return "", fmt.Errorf("status %q", arg(d, "status"))
	}
	out := saga.Completion{CallID: c.CallID, Compensation: c.Kind == saga.CallCompensation, Status: st, Attempts: 1}
	if r := arg(d, "result"); r != "" {
		out.Result = []byte(r)
	}
	if st != saga.StatusSucceeded {
		out.Err = &saga.Error{Code: "tool_said_so"}
	}
	h.core.Finished(partition.Completion{Call: c, Outcome: out, HadResult: out.Result != nil})
	return fmt.Sprintf("unrecorded: %d\n", h.core.Unrecorded()), nil
}

// input parses one input line of a tick.
func input(line string, offsets map[int32]int64) (partition.Input, error) {
	f := strings.Fields(line)
	kv := map[string]string{}
	for _, a := range f[1:] {
		k, v, _ := strings.Cut(a, "=")
		kv[k] = v
	}
	tenant := or(kv["tenant"], "default")
	owner := wire.Partition(wire.RoutingKey(tenant, kv["key"]), partitions)
	on := owner
	if s := kv["on"]; s != "" {
		n, _ := strconv.Atoi(s)
		on = int32(n)
	}
	topic := "intents"
	if f[0] == "resolve" || f[0] == "approve" || f[0] == "deny" || kv["control"] == "true" {
		topic = "control"
	}
	offsets[on]++
	in := partition.Input{Origin: partition.Origin{Topic: topic, Partition: on, Offset: offsets[on] - 1},
		RecordKey: []byte(wire.RoutingKey(tenant, kv["key"]))}
	in.Salvage = wire.Reject{ID: kv["id"], Tenant: tenant, Key: kv["key"], Tool: kv["tool"], ReplyTo: kv["reply"], Type: f[0]}
	si := saga.Input{IntentID: kv["id"], Tenant: tenant, Key: kv["key"], Tool: kv["tool"], ReplyTo: kv["reply"],
		Args: []byte(or(kv["args"], "1")), ArgsHash: []byte(or(kv["args"], "1")), Partition: on, Owner: owner,
		CallID: kv["callid"], By: "test"}
	_, si.Force = kv["force"]
	switch f[0] {
	case "call":
		si.Type = saga.InputCall
	case "compensate":
		si.Type = saga.InputCompensate
	case "resolve":
		si.Type = saga.InputResolve
		si.Outcome, _ = saga.ParseStatus(kv["outcome"])
	case "approve", "deny":
		si.Type, si.Args, si.ArgsHash, si.Reason = saga.InputApprove, nil, nil, "checked"
		if f[0] == "deny" {
			si.Type = saga.InputDeny
		}
		if a := kv["args"]; a != "" {
			si.ArgsHash = []byte(a)
		}
	case "bad":
		rej := in.Salvage
		rej.Reason, rej.Detail = kv["reason"], "bad input"
		in.Reject = &rej
		return in, nil
	default:
		return in, fmt.Errorf("unknown input %q", f[0])
	}
	in.Intent = si
	return in, nil
}

// describe prints a Decisions value: what it logs, answers, dead-letters, forwards
// and dispatches, in order.
func describe(rd *partition.Decisions, b *partition.Poll) string {
	var sb strings.Builder
	for _, ev := range rd.Events {
		fmt.Fprintf(&sb, "event p%d %s\n", ev.P, event(ev.Ev))
	}
	for _, a := range rd.Answers {
		fmt.Fprintf(&sb, "answer %s\n", answer(a))
	}
	for _, dl := range rd.DeadLetters {
		bare := ""
		if dl.Bare {
			bare = " bare"
		}
		fmt.Fprintf(&sb, "deadletter input %d %s%s\n", dl.In, dl.Reason, bare)
	}
	for _, f := range rd.Forwards {
		o := b.Inputs[f.In].Origin
		fmt.Fprintf(&sb, "forward input %d from p%d to p%d\n", f.In, o.Partition, f.Owner)
	}
	for _, c := range rd.Calls {
		fmt.Fprintf(&sb, "call %s\n", call(c))
	}
	for _, c := range rd.Recorded {
		fmt.Fprintf(&sb, "recorded %s %s\n", c.Call.CallID, c.Outcome.Status)
	}
	for _, c := range rd.Lost {
		fmt.Fprintf(&sb, "lost %s (epoch %d)\n", c.Call.CallID, c.Call.Epoch)
	}
	for _, r := range rd.Refused {
		fmt.Fprintf(&sb, "refused %s at %s: %s\n", r.Tenant, r.Tool, r.Limit)
	}
	verdicts := make([]string, 0, len(rd.Verdicts))
	for v, n := range rd.Verdicts {
		verdicts = append(verdicts, fmt.Sprintf("%s=%d", v, n))
	}
	sort.Strings(verdicts)
	fmt.Fprintln(&sb, strings.TrimSpace("verdicts "+strings.Join(verdicts, " ")))
	if rd.Snapshots > 0 || rd.Rounds > 0 {
		fmt.Fprintf(&sb, "snapshots %d rounds %d\n", rd.Snapshots, rd.Rounds)
	}
	return sb.String()
}

func event(ev saga.Event) string {
	s := fmt.Sprintf("%s %s/%s", ev.Kind, ev.Tenant, ev.Key)
	switch ev.Kind {
	case saga.EvRound:
		return fmt.Sprintf("round from=%d", ev.RoundFrom)
	case saga.EvOutcome, saga.EvResolved, saga.EvCompensationOutcome, saga.EvReadAnswered:
		return s + fmt.Sprintf(" call=%s status=%s", ev.CallID, ev.Status)
	case saga.EvSnapshot:
		return s + fmt.Sprintf(" status=%s", ev.Snapshot.Status)
	}
	if ev.IntentID != "" {
		s += " id=" + ev.IntentID
	}
	return s
}

func answer(a partition.Answer) string {
	s := fmt.Sprintf("to=%s %s", a.To.IntentID, a.Status)
	if a.WasReplay {
		s += " replay"
	}
	if a.Err != nil {
		s += " err=" + a.Err.Code
	}
	if a.RetryAfterMs > 0 {
		s += fmt.Sprintf(" retry=%dms", a.RetryAfterMs)
	}
	if len(a.Result) > 0 {
		s += " result=" + string(a.Result)
	}
	if a.ReplyToError != "" {
		s += " (results topic: " + a.ReplyToError + ")"
	}
	return s
}

func call(c partition.Call) string {
	kind := map[saga.CallKind]string{saga.CallOriginal: "call", saga.CallCompensation: "compensation", saga.CallReadOnly: "read"}[c.Kind]
	return fmt.Sprintf("%s %s of %s on p%d epoch %d (%s)", kind, c.CallID, c.RK, c.P, c.Epoch, c.Tool)
}

func parts(d *datadriven.TestData) []int32 {
	var out []int32
	for _, s := range strings.Split(arg(d, "p"), ",") {
		n, _ := strconv.Atoi(s)
		out = append(out, int32(n))
	}
	return out
}

func arg(d *datadriven.TestData, key string) string {
	a, ok := d.Arg(key)
	if !ok || len(a.Vals) == 0 {
		return ""
	}
	return a.Vals[0]
}

func intList(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
