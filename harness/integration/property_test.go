package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/executor"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/wire"
)

// Test 10: random histories of intents, duplicates, argument changes,
// crashes, state loss and rebalances against real executors, checked
// against a simple model: at most one call per key, and every intent is
// answered terminally or its key is in doubt.
//
// IT_PROPERTY_RUNS sets the number of histories (default 3); each logs its
// seed, and IT_PROPERTY_SEED replays one.
func TestPropertyAtMostOncePerKey(t *testing.T) {
	runs := envInt("IT_PROPERTY_RUNS", 3)
	for i := 0; i < runs; i++ {
		seed := uint64(time.Now().UnixNano()) + uint64(i)
		if s := os.Getenv("IT_PROPERTY_SEED"); s != "" {
			seed, _ = strconv.ParseUint(s, 10, 64)
		}
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runHistory(t, seed) })
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// countingTool counts real invocations per downstream key and sometimes
// takes a while, so crashes land in the middle of calls.
type countingTool struct {
	rng   *rand.Rand
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingTool) invoke(ctx context.Context, r tools.Request) tools.Outcome {
	c.mu.Lock()
	c.calls[r.DownstreamKey]++
	d := time.Duration(c.rng.IntN(300)) * time.Millisecond
	c.mu.Unlock()
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return tools.Outcome{Status: tools.Unknown, Code: "cancelled", Attempts: 1}
	}
	return tools.Outcome{Status: tools.Succeeded, Result: map[string]any{"ok": true}, Attempts: 1}
}

type propHistory struct {
	t       *testing.T
	e       *env
	rng     *rand.Rand
	reg     *tools.Registry
	tool    *countingTool
	members []*inproc
	sent    []sentIntent
	dirs    []string
	faults  map[string]int
}

type sentIntent struct{ id, key string }

func runHistory(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	e := newEnv(t, 2)
	tool := &countingTool{rng: rand.New(rand.NewPCG(seed, 7)), calls: map[string]int{}}
	reg := tools.NewRegistry()
	spec := tools.Spec{Name: "p.op", Class: tools.Irreversible, Timeout: 5 * time.Second, PendingTTL: time.Minute, Retention: time.Hour, MaxInFlight: 16}
	if err := reg.Register(spec, tools.Func(tool.invoke)); err != nil {
		t.Fatal(err)
	}
	h := &propHistory{t: t, e: e, rng: rng, reg: reg, tool: tool, faults: map[string]int{}}
	h.addMember()
	for step := 0; step < 40; step++ {
		h.step()
	}
	if len(h.members) == 0 {
		h.addMember()
	}
	h.check()
}

func (h *propHistory) step() {
	switch r := h.rng.IntN(100); {
	case r < 70:
		h.send()
	case r < 78 && len(h.members) > 0:
		h.crash()
	case r < 84 && len(h.members) < 3:
		h.addMember()
	case r < 88 && len(h.members) > 1:
		h.removeMember()
	default:
		time.Sleep(time.Duration(h.rng.IntN(400)) * time.Millisecond)
	}
}

// send produces an intent for one of a few keys, with one of two argument
// variants (the second conflicts), directly to the topic.
func (h *propHistory) send() {
	key := fmt.Sprintf("pk-%d", h.rng.IntN(5))
	id := randHex(6)
	args := map[string]any{"amount": 10}
	if h.rng.IntN(10) == 0 {
		args["amount"] = 11 // a conflict unless it came first
	}
	in := map[string]any{"v": 1, "type": "call", "id": id, "key": key, "tool": "p.op", "args": args}
	part := int32(-1)
	if h.rng.IntN(4) == 0 {
		part = h.rng.Int32N(h.e.partitions) // sometimes the wrong partition: forwarded
	}
	h.e.produceRaw(h.e.names.Intents, part, wire.RoutingKey("default", key), mustMsgpack(h.t, in))
	h.sent = append(h.sent, sentIntent{id: id, key: key})
}

func (h *propHistory) addMember() {
	var dir string
	if len(h.dirs) > 0 && h.rng.IntN(2) == 0 {
		dir, h.dirs = h.dirs[0], h.dirs[1:] // reuse a stopped member's state
	}
	m := h.e.startInproc(h.reg, func(c *executor.Config) {
		if dir != "" {
			c.DataDir = dir
		}
		c.DrainTimeout = 2 * time.Second
		c.SessionTimeout = 2 * time.Second
	})
	h.members = append(h.members, m)
	h.faults["join"]++
}

// crash kills a member as kill -9 would; sometimes its state is lost too.
func (h *propHistory) crash() {
	i := h.rng.IntN(len(h.members))
	m := h.members[i]
	h.members = append(h.members[:i], h.members[i+1:]...)
	m.ex.Crash()
	m.ex.Close()
	m.cancel = nil
	h.faults["crash"]++
	if h.rng.IntN(3) > 0 {
		h.dirs = append(h.dirs, m.dir)
	} else {
		h.faults["state_loss"]++
	}
}

func (h *propHistory) removeMember() {
	i := h.rng.IntN(len(h.members))
	m := h.members[i]
	h.members = append(h.members[:i], h.members[i+1:]...)
	m.stop()
	h.faults["leave"]++
	h.dirs = append(h.dirs, m.dir)
}

// check waits for the system to settle and compares it with the model.
// The verdict is the last snapshot the wait loop took, never a fresh read
// (a second read after the loop saw a key leave doubt before
// its answer was in, and reported an answered intent as lost).
func (h *propHistory) check() {
	deadline := time.Now().Add(60 * time.Second)
	left := h.unsettled()
	for len(left) > 0 && time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		left = h.unsettled()
	}
	h.tool.mu.Lock()
	for k, n := range h.tool.calls {
		if n > 1 {
			h.t.Errorf("downstream key %s was called %d times", k, n)
		}
	}
	h.tool.mu.Unlock()
	if len(left) > 0 {
		h.t.Errorf("%d of %d intents have neither a terminal answer nor an in-doubt key, e.g. %+v", len(left), len(h.sent), left[0])
	}
	h.t.Logf("intents %d, keys called %d, faults %v", len(h.sent), len(h.tool.calls), h.faults)
}

// unsettled lists the intents that have no terminal answer and whose key
// is not in doubt in the event log, from one consistent snapshot.
//
// Why the log is read first and the answers second: an outcome's events
// and the answers it owes commit in one transaction. Once the log shows a
// key settled, every answer of that transaction is below the results
// topic's stable offset, so a read of the answers that starts afterwards
// and reaches the stable offset (answers, below) contains them. Read the
// other way round, a key could settle between the two reads and its
// intents would look answered by nobody. A key that leaves doubt after its
// log read is still in doubt in this snapshot: the next one sees its
// answer.
func (h *propHistory) unsettled() []sentIntent {
	doubt := map[string]bool{}
	for _, s := range h.sent {
		if _, seen := doubt[s.key]; !seen {
			doubt[s.key] = h.keyInDoubt(s.key)
		}
	}
	terminal := terminalAnswers(h.t, h.e)
	var out []sentIntent
	for _, s := range h.sent {
		if !terminal[s.id] && !doubt[s.key] {
			out = append(out, s)
		}
	}
	return out
}

// terminalAnswers reads every committed answer on the results topic up to
// its stable offset, and returns the intent ids that have a terminal one.
func terminalAnswers(t *testing.T, e *env) map[string]bool {
	out := map[string]bool{}
	for _, r := range readCommitted(t, e, e.names.Results) {
		if res, err := wire.DecodeResult(r.Value); err == nil && codes.Terminal(res.Status) {
			out[res.IntentID] = true
		}
	}
	return out
}

// keyInDoubt folds the key's committed events and reports whether it is
// started (with no call running anywhere that could still record it) or
// unknown.
func (h *propHistory) keyInDoubt(key string) bool {
	var rec *saga.Record
	for _, ev := range history(h.t, h.e, "default", key) {
		rec = saga.Apply(rec, *ev)
	}
	return rec != nil && rec.Status.InDoubt()
}
