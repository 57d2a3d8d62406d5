package integration

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/executor"
	"github.com/atmostonce/toolexec/wire"
)

// Routine Kafka operations must never re-run a key.

// TestLogStartPastALiveKeyIsRefused: the event log's start moves past a
// completed key's events (DeleteRecords, as retention would), and a member
// with an empty data dir takes the partition over. Restored from what was
// left, it would not know the key and would run a duplicate again: with
// no snapshot round in the log, it refuses to decide the partition: the duplicate is neither executed nor answered, the member
// is not ready and its gap gauge says why.
func TestLogStartPastALiveKeyIsRefused(t *testing.T) {
	e := newEnv(t, 1)
	l := newLedger(t)
	reg := registry(t, l.toolsYAML(""))
	a := e.startInproc(reg, nil)
	c := e.client()
	in := wire.Intent{Tool: "t.irrev", Key: "gap-1", Args: map[string]any{"n": 1}}
	first := e.call(c, in, 30*time.Second)
	if first.Status != codes.StatusSucceeded {
		t.Fatalf("first call: %+v", first)
	}
	end := endOffset(t, e, e.names.Events, 0)
	// Another key's events after the cut, so that what is left of the log
	// can be folded: a restore that folds it must not forget gap-1.
	if r := e.call(c, wire.Intent{Tool: "t.irrev", Key: "gap-2", Args: map[string]any{"n": 2}}, 30*time.Second); r.Status != codes.StatusSucceeded {
		t.Fatalf("second key: %+v", r)
	}
	a.stop()
	deleteEventsBelow(t, e, 0, end)

	b := e.startInproc(reg, func(c *executor.Config) { c.Registerer = prometheus.NewRegistry() })
	res := e.collect(e.names.Results)
	dup := intentMap("gap-dup", "default", "gap-1", "t.irrev", map[string]any{"args": map[string]any{"n": 1}})
	e.produceRaw(e.names.Intents, 0, "default/gap-1", mustMsgpack(t, dup))
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && metricValue(t, b.ex.Metrics().RestoreGaps) == 0 {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // room for an answer or a call, which must not come
	if got := metricValue(t, b.ex.Metrics().RestoreGaps); got != 1 {
		t.Fatalf("restore_gaps %v, want 1", got)
	}
	if b.ex.Ready() {
		t.Error("a member with an undecided partition reports ready")
	}
	if n := len(res.results("gap-dup")); n != 0 {
		t.Errorf("the duplicate was answered %d times; the partition must not be decided", n)
	}
	if n := l.total(); n != 2 {
		t.Fatalf("tool requests %d, want 2 (gap-1 and gap-2 once each): the duplicate ran again", n)
	}
}

// TestSnapshotRoundBridgesTheLogStart: the same move of the log start,
// but a snapshot round was written after the key completed. A member with
// an empty data dir restores from the round and replays the duplicate.
func TestSnapshotRoundBridgesTheLogStart(t *testing.T) {
	e := newEnv(t, 1)
	l := newLedger(t)
	reg := registry(t, l.toolsYAML(""))
	a := e.startInproc(reg, func(c *executor.Config) { c.SnapshotInterval = 500 * time.Millisecond })
	c := e.client()
	in := wire.Intent{Tool: "t.irrev", Key: "round-1", Args: map[string]any{"n": 1}}
	if first := e.call(c, in, 30*time.Second); first.Status != codes.StatusSucceeded {
		t.Fatalf("first call: %+v", first)
	}
	end := endOffset(t, e, e.names.Events, 0)
	if r := e.call(c, wire.Intent{Tool: "t.irrev", Key: "round-2", Args: map[string]any{"n": 2}}, 30*time.Second); r.Status != codes.StatusSucceeded {
		t.Fatalf("second key: %+v", r)
	}
	// The second round to complete from now began after the key's events.
	rounds := metricValue(t, a.ex.Metrics().SnapshotRounds)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && metricValue(t, a.ex.Metrics().SnapshotRounds) < rounds+2 {
		time.Sleep(100 * time.Millisecond)
	}
	if got := metricValue(t, a.ex.Metrics().SnapshotRounds); got < rounds+2 {
		t.Fatalf("snapshot rounds %v, want at least %v", got, rounds+2)
	}
	a.stop()
	deleteEventsBelow(t, e, 0, end)

	b := e.startInproc(reg, nil)
	_ = b
	in.ID = ""
	dup := e.call(c, in, 45*time.Second)
	if dup.Status != codes.StatusSucceeded || !dup.WasReplay {
		t.Fatalf("the duplicate after the log start moved: %+v, want a replay", dup)
	}
	if n := l.total(); n != 2 {
		t.Fatalf("tool requests %d, want 2 (round-1 and round-2 once each)", n)
	}
}

// TestAddingPartitionsNeverReRunsAKey: an operator adds partitions to the
// topics while the executor runs. A member that routed by the count it
// read at start would, started afterwards, send every key to a partition
// whose log had no record of it and run it again: the routing count is
// recorded in the meta topic; the running member and a
// member started afterwards both refuse to decide, and a duplicate of a
// completed key is not executed.
func TestAddingPartitionsNeverReRunsAKey(t *testing.T) {
	e := newEnv(t, 2)
	l := newLedger(t)
	reg := registry(t, l.toolsYAML(""))
	fastMeta := func(c *executor.Config) {
		c.Registerer = prometheus.NewRegistry()
		c.ClientOpts = []kgo.Opt{kgo.MetadataMaxAge(time.Second), kgo.MetadataMinAge(250 * time.Millisecond)}
	}
	a := e.startInproc(reg, fastMeta)
	c := e.client()
	var done []wire.Intent
	for _, key := range []string{"grow-1", "grow-2", "grow-3", "grow-4"} {
		in := wire.Intent{Tool: "t.irrev", Key: key, Args: map[string]any{"n": 1}}
		if r := e.call(c, in, 30*time.Second); r.Status != codes.StatusSucceeded {
			t.Fatalf("%s: %+v", key, r)
		}
		done = append(done, in)
	}
	addPartitions(t, e, 4)
	deadline := time.Now().Add(45 * time.Second)
	for time.Now().Before(deadline) && metricValue(t, a.ex.Metrics().LayoutMismatch) == 0 {
		time.Sleep(200 * time.Millisecond)
	}
	if metricValue(t, a.ex.Metrics().LayoutMismatch) != 1 || a.ex.Ready() {
		t.Fatalf("the running member did not refuse the new layout (mismatch %v, ready %v)", metricValue(t, a.ex.Metrics().LayoutMismatch), a.ex.Ready())
	}
	b := e.startInproc(reg, fastMeta)
	if metricValue(t, b.ex.Metrics().LayoutMismatch) != 1 {
		t.Fatal("a member started after the change did not refuse the new layout")
	}
	res := e.collect(e.names.Results)
	for i, in := range done {
		// Duplicates routed as a producer that knows only the new count
		// routes them.
		id := "grow-dup-" + string(rune('a'+i))
		rk := wire.RoutingKey("default", in.Key)
		e.produceRaw(e.names.Intents, wire.Partition(rk, 4), rk, mustMsgpack(t, intentMap(id, "default", in.Key, "t.irrev", map[string]any{"args": map[string]any{"n": 1}})))
	}
	time.Sleep(8 * time.Second)
	if n := l.total(); n != len(done) {
		t.Fatalf("tool requests %d, want %d: a key ran again after partitions were added", n, len(done))
	}
	for i := range done {
		id := "grow-dup-" + string(rune('a'+i))
		for _, r := range res.results(id) {
			if r.Status == codes.StatusSucceeded && !r.WasReplay {
				t.Fatalf("%s was executed: %+v", id, r)
			}
		}
	}
}

func endOffset(t *testing.T, e *env, topic string, p int32) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := e.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := ends.Lookup(topic, p)
	if !ok || o.Err != nil {
		t.Fatalf("end offset of %s/%d: %v", topic, p, o.Err)
	}
	return o.Offset
}

// deleteEventsBelow moves the events partition's log start to offset, as
// time-based retention would.
func deleteEventsBelow(t *testing.T, e *env, p int32, offset int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: e.names.Events, Partition: p, At: offset})
	rs, err := e.adm.DeleteRecords(ctx, os)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Error(); err != nil {
		t.Fatal(err)
	}
}

func addPartitions(t *testing.T, e *env, to int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rs, err := e.adm.UpdatePartitions(ctx, to, e.names.CoPartitioned()...)
	if err == nil {
		err = rs.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
}
