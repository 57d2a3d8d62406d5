package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

// TestPoisonSuite: hostile records, and a record over every
// bound of a copied field, go in among 200 normal intents spread over all
// partitions. Every normal intent is answered, every hostile record whose
// id can be read is answered (rejected, or answered on the results topic
// when its reply_to vanished), and the member does not abort the same work
// again and again (one 600 KB traceparent retried as a whole tick would
// abort thousands of transactions and starve every later intent).
func TestPoisonSuite(t *testing.T) {
	const partitions, normal = 4, 200
	e := newEnv(t, partitions)
	l := newLedger(t)
	m := e.startInproc(registry(t, l.toolsYAML("")), nil)
	res := e.collect(e.names.Results)
	dlq := e.collect(e.names.DeadLetter)
	gone := e.prefix + "gone"
	createTopic(t, e, gone)

	// A call whose answer is owed to a topic deleted while the call runs,
	// after an answer to it made the member remember the topic.
	goneRes := e.collect(gone)
	e.produceRaw(e.names.Intents, -1, "default/k-gone-first", mustMsgpack(t, intentMap("p-gone-first", "default", "k-gone-first", "t.ok", map[string]any{"reply_to": gone})))
	goneRes.waitResult(t, "p-gone-first", 30*time.Second)
	l.waitArrivals(t, 1, 10*time.Second)
	blocked := intentMap("p-gone-late", "default", "k-gone-late", "t.block", map[string]any{"reply_to": gone})
	e.produceRaw(e.names.Intents, -1, "default/k-gone-late", mustMsgpack(t, blocked))
	l.waitArrivals(t, 1, 30*time.Second)
	deleteTopic(t, e, gone)

	hostile := poisonRecords(t, e, gone)
	var sent []string
	for i := 0; i < normal; i++ {
		id := fmt.Sprintf("n-%03d", i)
		key := "k-" + id
		e.produceRaw(e.names.Intents, -1, "default/"+key, mustMsgpack(t, intentMap(id, "default", key, "t.ok", nil)))
		sent = append(sent, id)
		if i%(normal/len(hostile)) == 0 && i/(normal/len(hostile)) < len(hostile) {
			hostile[i/(normal/len(hostile))].send(t, e)
		}
	}
	time.Sleep(time.Second) // the deleted topic is gone from the broker's metadata
	l.releaseAll()

	for _, id := range sent {
		if got := res.waitResult(t, id, 60*time.Second); got.Status != codes.StatusSucceeded {
			t.Errorf("normal intent %s: %+v", id, got)
		}
	}
	for _, h := range poisonRecords(t, e, gone) {
		h.check(t, res, dlq)
	}
	late := res.waitResult(t, "p-gone-late", 60*time.Second)
	if late.Status != codes.StatusSucceeded || late.ReplyToError == "" {
		t.Errorf("the answer owed to a deleted reply_to: %+v (want succeeded on the results topic, with reply_to_error)", late)
	}
	aborted := metricValue(t, m.ex.Metrics().Txns.WithLabelValues("aborted"))
	t.Logf("aborted transactions: %v, unproducible records: %v", aborted, metricValue(t, m.ex.Metrics().Unproducible))
	// The deleted reply_to may cost one abort (its first failure makes the
	// member forget the topic); everything else is caught before it is
	// produced. A member that aborted the same work over and over would
	// show hundreds.
	if aborted > 3 {
		t.Errorf("%v aborted transactions, want at most 3", aborted)
	}
}

// poisonRecord is one hostile record and what must come of it.
type poisonRecord struct {
	name    string
	rk      string
	value   []byte
	headers []kgo.RecordHeader
	big     bool   // produced compressed: its value is over the broker's message limit
	id      string // "" when no id can be read: dead-lettered only
	status  string // the terminal answer's status
	code    string // its error code ("" for none)
	reason  string // the dead letter's reason ("" when none is expected)
}

func (p poisonRecord) send(t *testing.T, e *env) {
	if p.big {
		produceCompressed(t, e, p.rk, p.value)
		return
	}
	e.produceRaw(e.names.Intents, -1, p.rk, p.value, p.headers...)
}

func (p poisonRecord) check(t *testing.T, res, dlq *collector) {
	t.Helper()
	if p.id != "" {
		got := res.waitResult(t, p.id, 30*time.Second)
		code := ""
		if got.Error != nil {
			code = got.Error.Code
		}
		if got.Status != p.status || code != p.code {
			t.Errorf("%s: answer %s/%s (%+v), want %s/%s", p.name, got.Status, code, got.Error, p.status, p.code)
		}
		if n := terminalCount(res, p.id); n != 1 {
			t.Errorf("%s: %d terminal answers, want 1", p.name, n)
		}
	}
	if p.reason == "" {
		return
	}
	d := waitDeadLetter(t, dlq, p.rk, p.reason)
	if d == nil {
		t.Errorf("%s: no dead letter with reason %s (have %v)", p.name, p.reason, reasons(dlq))
		return
	}
	if d.ValueLen != len(p.value) || len(d.Value) > wire.MaxDeadLetterPrefix || len(d.ValueSHA256) != 32 {
		t.Errorf("%s: dead letter keeps %d of %d bytes (value_len %d, sha256 %d bytes)", p.name, len(d.Value), len(p.value), d.ValueLen, len(d.ValueSHA256))
	}
}

func terminalCount(c *collector, id string) int {
	n := 0
	for _, r := range c.results(id) {
		if codes.Terminal(r.Status) {
			n++
		}
	}
	return n
}

func waitDeadLetter(t *testing.T, c *collector, rk, reason string) *wire.DeadLetter {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range c.records() {
			if d, err := wire.DecodeDeadLetter(r.Value); err == nil && d.Reason == reason && string(r.Key) == rk {
				return d
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

func intentMap(id, tenant, key, tool string, extra map[string]any) map[string]any {
	m := map[string]any{"v": 1, "type": "call", "id": id, "tenant": tenant, "key": key, "tool": tool, "args": map[string]any{"x": 1}}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// poisonRecords lists the hostile records: every known way to wedge a
// member with one record, and one record over each bound of a copied
// field.
func poisonRecords(t *testing.T, e *env, gone string) []poisonRecord {
	call := func(id string, extra map[string]any) []byte {
		return mustMsgpack(t, intentMap(id, "default", "k-"+id, "t.ok", extra))
	}
	tp := func(v string) []kgo.RecordHeader { return []kgo.RecordHeader{{Key: "traceparent", Value: []byte(v)}} }
	long := func(n int) string { return strings.Repeat("x", n) }
	rk := func(id string) string { return "default/k-" + id }
	return []poisonRecord{
		{name: "600 KB traceparent", rk: rk("p-tp"), value: call("p-tp", nil), headers: tp(long(600 << 10)),
			id: "p-tp", status: codes.StatusRejected, code: codes.ReasonOversized, reason: codes.ReasonOversized},
		{name: "traceparent one byte over", rk: rk("p-tp56"), value: call("p-tp56", nil), headers: tp(long(wire.MaxTraceparentBytes + 1)),
			id: "p-tp56", status: codes.StatusRejected, code: codes.ReasonOversized, reason: codes.ReasonOversized},
		{name: "tracestate over its bound", rk: rk("p-ts"), value: call("p-ts", nil),
			headers: []kgo.RecordHeader{{Key: "tracestate", Value: []byte(long(wire.MaxTracestateBytes + 1))}},
			id:      "p-ts", status: codes.StatusRejected, code: codes.ReasonOversized, reason: codes.ReasonOversized},
		{name: "headers over their bound", rk: rk("p-hdr"), value: call("p-hdr", nil),
			headers: []kgo.RecordHeader{{Key: "x-junk", Value: []byte(long(wire.MaxForwardHeaderBytes + 1))}},
			id:      "p-hdr", status: codes.StatusRejected, code: codes.ReasonOversized, reason: codes.ReasonOversized},
		{name: "scope.run_id over its bound", rk: rk("p-run"), value: call("p-run", map[string]any{"scope": map[string]any{"run_id": long(wire.MaxScopeFieldBytes + 1)}}),
			id: "p-run", status: codes.StatusRejected, code: codes.ReasonOversized, reason: codes.ReasonOversized},
		{name: "scope.thread_id over its bound", rk: rk("p-thr"), value: call("p-thr", map[string]any{"scope": map[string]any{"thread_id": long(wire.MaxScopeFieldBytes + 1)}}),
			id: "p-thr", status: codes.StatusRejected, code: codes.ReasonOversized, reason: codes.ReasonOversized},
		{name: "by over its bound", rk: rk("p-by"), value: call("p-by", map[string]any{"by": long(wire.MaxByBytes + 1)}),
			id: "p-by", status: codes.StatusRejected, code: codes.ReasonOversized, reason: codes.ReasonOversized},
		{name: "reason over its bound", rk: rk("p-why"), value: call("p-why", map[string]any{"reason": long(wire.MaxReasonBytes + 1)}),
			id: "p-why", status: codes.StatusRejected, code: codes.ReasonOversized, reason: codes.ReasonOversized},
		{name: "compressed intent over 1 MiB with a readable id", rk: rk("p-huge"), big: true,
			value: call("p-huge", map[string]any{"padding": long(wire.MaxMessageBytes + 100<<10)}),
			id:    "p-huge", status: codes.StatusRejected, code: codes.ReasonOversized, reason: codes.ReasonOversized},
		{name: "compressed value over 1 MiB with no id", rk: "default/k-p-huge-anon", big: true,
			value:  mustMsgpack(t, map[string]any{"padding": long(wire.MaxMessageBytes + 100<<10)}),
			reason: codes.ReasonOversized},
		{name: "undecodable, id readable", rk: rk("p-type"), value: call("p-type", map[string]any{"deadline_ms": "soon"}),
			id: "p-type", status: codes.StatusRejected, code: codes.ReasonInvalidField, reason: codes.ReasonInvalidField},
		{name: "undecodable, no id", rk: "default/k-p-garbage", value: []byte{0xc1, 0xff, 0x00},
			reason: codes.ReasonUndecodable},
		{name: "reply_to that never existed", rk: rk("p-noreply"), value: call("p-noreply", map[string]any{"reply_to": e.prefix + "never"}),
			id: "p-noreply", status: codes.StatusSucceeded},
		{name: "reply_to deleted before the intent", rk: rk("p-gone"), value: call("p-gone", map[string]any{"reply_to": gone}),
			id: "p-gone", status: codes.StatusSucceeded},
	}
}

// produceCompressed writes a value larger than the broker's message limit,
// as an agent may, compressed.
func produceCompressed(t *testing.T, e *env, rk string, value []byte) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.ZstdCompression()), kgo.ProducerBatchMaxBytes(8<<20), kgo.MaxBufferedBytes(64<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := &kgo.Record{Topic: e.names.Intents, Partition: wire.Partition(rk, e.partitions), Key: []byte(rk), Value: value}
	if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func createTopic(t *testing.T, e *env, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := e.adm.CreateTopic(ctx, 1, 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
}

func deleteTopic(t *testing.T, e *env, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rs, err := e.adm.DeleteTopics(ctx, name)
	if err == nil {
		err = rs.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestReadsOfTwoTenantsWithOneIntentID: tenants alice and bob
// each send intent id req-1 to a read-only tool on the same partition;
// both are answered: the pending reads are keyed by tenant too, not by
// partition and intent id alone, which would answer only one of them.
func TestReadsOfTwoTenantsWithOneIntentID(t *testing.T) {
	e := newEnv(t, 1)
	l := newLedger(t)
	e.startInproc(registry(t, l.toolsYAML("")), nil)
	res := e.collect(e.names.Results)
	for _, tenant := range []string{"alice", "bob"} {
		e.produceRaw(e.names.Intents, 0, tenant+"/k-read", mustMsgpack(t, intentMap("req-1", tenant, "k-read", "t.roslow", nil)))
	}
	deadline := time.Now().Add(45 * time.Second)
	for time.Now().Before(deadline) && len(answeredTenants(res, "req-1")) < 2 {
		time.Sleep(100 * time.Millisecond)
	}
	got := answeredTenants(res, "req-1")
	if !got["alice"] || !got["bob"] {
		t.Fatalf("terminal answers to req-1 by tenant: %v, want alice and bob", got)
	}
}

func answeredTenants(c *collector, id string) map[string]bool {
	out := map[string]bool{}
	for _, r := range c.results(id) {
		if codes.Terminal(r.Status) && r.Status == codes.StatusSucceeded {
			out[r.Tenant] = true
		}
	}
	return out
}

// TestCompensateBeforeDeadlineIsRefused: a call timed out
// (outcome unknown: the request may still be processed), no call runs in
// the executor any more, and the tool's pending_ttl has not passed. An
// agent's compensate is refused: the undo must never run before the
// effect, whichever process ran the call: a call running in this very
// process is not the only thing that blocks it.
func TestCompensateBeforeDeadlineIsRefused(t *testing.T) {
	e := newEnv(t, 1)
	l := newLedger(t)
	yaml := l.toolsYAML(toolEntry("t.charge", "compensatable", l.url("/hang"), "300ms", "    pending_ttl: 2m\n    compensate_with: t.ok\n"))
	e.startInproc(registry(t, yaml), nil)
	res := e.collect(e.names.Results)
	e.produceRaw(e.names.Intents, 0, "default/early-undo", mustMsgpack(t, intentMap("charge-1", "default", "early-undo", "t.charge", nil)))
	waitPending(t, res, "charge-1", 30*time.Second)
	comp := intentMap("undo-1", "default", "early-undo", "", map[string]any{"type": "compensate"})
	delete(comp, "tool")
	e.produceRaw(e.names.Intents, 0, "default/early-undo", mustMsgpack(t, comp))
	got := res.waitResult(t, "undo-1", 30*time.Second)
	if got.Status != codes.StatusRejected || got.Error == nil || got.Error.Code != codes.ReasonInvalidCommand {
		t.Fatalf("compensate of a call in doubt within its pending_ttl: %+v", got)
	}
	if n := l.total(); n != 1 {
		t.Fatalf("tool requests %d, want 1 (the call; no undo)", n)
	}
}
