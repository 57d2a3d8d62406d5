package chaos

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/topics"
	"github.com/atmostonce/toolexec/wire"
)

// Poison kinds: what a hostile wave sends. Each is
// counted in the report's fault detail as hostile:<kind> once sent, so
// --require-all-faults proves a run sent every one of them.
const (
	PoisonTraceparent = "traceparent_600k"     // a 600 KB traceparent header on a call
	PoisonTracestate  = "tracestate_over"      // a tracestate header over its bound
	PoisonRunID       = "run_id_over"          // scope.run_id over its bound
	PoisonThreadID    = "thread_id_over"       // scope.thread_id over its bound
	PoisonBy          = "by_over"              // by over its bound
	PoisonReason      = "reason_over"          // reason over its bound
	PoisonHuge        = "compressed_over_1mib" // a compressed value over 1 MiB, id readable
	PoisonHugeAnon    = "compressed_over_1mib_no_id"
	PoisonBadField    = "undecodable_with_id"   // a field of the wrong type, id readable
	PoisonGarbage     = "undecodable_no_id"     // bytes that are no msgpack at all
	PoisonSameID      = "same_id_two_tenants"   // two tenants, one intent id, a read-only tool, one partition
	PoisonEarlyUndo   = "compensate_before_ttl" // an agent's compensate of a call in doubt before its pending_ttl
	PoisonReplyGone   = "reply_to_deleted"      // a reply_to deleted while answers to it are owed
)

// poisonKinds lists every kind, for --require-all-faults.
var poisonKinds = []string{PoisonTraceparent, PoisonTracestate, PoisonRunID, PoisonThreadID, PoisonBy, PoisonReason, PoisonHuge,
	PoisonHugeAnon, PoisonBadField, PoisonGarbage, PoisonSameID, PoisonEarlyUndo, PoisonReplyGone}

// The documented bounds of the fields the executor copies into its
// records (README, docs/wire-format.md), as numbers of the harness's own:
// a record one byte over must be rejected, whatever the code's constants
// say.
const (
	boundTracestate = 512
	boundScopeField = 256
	boundBy         = 128
	boundReason     = 1024
	// hostileTraceparentBytes is a traceparent far over its bound, large
	// enough that a tick retried as a whole would abort again and again.
	hostileTraceparentBytes = 600 << 10
	// hugeValueBytes is over the broker's 1 MiB message limit; the value is
	// produced compressed, as an agent may.
	hugeValueBytes = 1<<20 + 100<<10
	// codeOversized is the wire contract's code for a field over its bound.
	codeOversized = "oversized"
)

// Waits of a wave. An answer may take long under faults; a wave that
// gives up waiting still sends the rest, and the checks judge what came.
const (
	hostileProduceTimeout = 30 * time.Second
	hostileAnswerWait     = 60 * time.Second
	hostilePendingWait    = 4 * time.Second // then the reply_to is deleted: well before the call's 6 s pending_ttl
	hostileTopicWait      = 30 * time.Second
	// hostileDeleteAttempts: the reply_to deletion is retried, 2 s apart,
	// through a broker bounce (refused connections for 5 to 30 s here).
	hostileDeleteAttempts = 20
)

// want is what must come of a hostile record.
type want uint8

const (
	wantOversized  want = iota + 1 // one terminal answer: rejected, code oversized
	wantRejected                   // one terminal answer: rejected
	wantOnResults                  // one terminal answer, on the results topic, with reply_to_error
	wantAnswered                   // one terminal answer (the global checks judge the rest)
	wantDeadLetter                 // no readable id: dead-lettered
)

// hostileRec is one hostile record the harness sent.
type hostileRec struct {
	Kind            string
	Tenant, Key, ID string // ID "" when none can be read
	Tool            string
	Partition       int32
	Offset          int64
	Produced        bool
	Want            want
	ReplyTo, Detail string
}

// Hostile sends waves of poison records while the load runs. One wave at
// a time; Start returns at once. Safe for concurrent use.
type Hostile struct {
	brokers    []string
	names      topics.Names
	partitions int32
	tr         *Tracker
	prod, big  *kgo.Client // big: zstd, for values over the broker's limit
	adm        *kadm.Client
	logf       func(string, ...any)
	count      func(detail string)
	opts       []kgo.Opt // extra options of every client it makes

	wg sync.WaitGroup
	mu struct {
		sync.Mutex
		recs    []hostileRec
		waves   int
		running bool
	}
}

func newHostile(brokers []string, names topics.Names, partitions int32, tr *Tracker, logf func(string, ...any), opts ...kgo.Opt) (*Hostile, error) {
	h := &Hostile{brokers: brokers, names: names, partitions: partitions, tr: tr, logf: logf, count: func(string) {}, opts: opts}
	var err error
	if h.prod, err = kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(4 << 20)}, opts...)...); err != nil {
		return nil, err
	}
	if h.big, err = kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.ZstdCompression()), kgo.ProducerBatchMaxBytes(8 << 20), kgo.MaxBufferedBytes(64 << 20)}, opts...)...); err != nil {
		h.prod.Close()
		return nil, err
	}
	h.adm = kadm.NewClient(h.prod)
	return h, nil
}

// Close waits for the wave in progress, then releases the clients.
func (h *Hostile) Close() {
	h.wg.Wait()
	h.prod.Close()
	h.big.Close()
}

// Start begins a wave unless one is in progress; false when one is.
func (h *Hostile) Start(ctx context.Context) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.running {
		return false
	}
	h.mu.running = true
	h.mu.waves++
	n := h.mu.waves
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.wave(ctx, n)
		h.mu.Lock()
		h.mu.running = false
		h.mu.Unlock()
	}()
	return true
}

// Wait blocks until the wave in progress, if any, ended.
func (h *Hostile) Wait() { h.wg.Wait() }

// Records returns a copy of every hostile record sent so far.
func (h *Hostile) Records() []hostileRec {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hostileRec(nil), h.mu.recs...)
}

func (h *Hostile) wave(ctx context.Context, n int) {
	tag := fmt.Sprintf("h%d", n)
	h.logf("hostile wave %d: poison records, two tenants with one id, an early compensate, a reply_to deleted", n)
	h.fireAndForget(ctx, tag)
	h.sameID(ctx, tag)
	h.earlyUndo(ctx, tag)
	h.replyGone(ctx, tag)
	h.logf("hostile wave %d: done", n)
}

// fireAndForget sends the records over a bound, too large, or not
// decodable.
func (h *Hostile) fireAndForget(ctx context.Context, tag string) {
	long := func(n int) string { return strings.Repeat("x", n) }
	call := func(kind string, extra map[string]any) (map[string]any, hostileRec) {
		rec := hostileRec{Kind: kind, Tenant: "hx", Key: tag + "-" + kind, ID: client.NewID(), Tool: ToolNative, Want: wantOversized}
		m := map[string]any{"v": 1, "type": "call", "id": rec.ID, "tenant": rec.Tenant, "key": rec.Key, "tool": ToolNative,
			"args": map[string]any{"amount": 1}}
		for k, v := range extra {
			m[k] = v
		}
		return m, rec
	}
	header := func(k, v string) []kgo.RecordHeader { return []kgo.RecordHeader{{Key: k, Value: []byte(v)}} }
	type poison struct {
		value   map[string]any
		rec     hostileRec
		headers []kgo.RecordHeader
		big     bool
	}
	var ps []poison
	add := func(kind string, extra map[string]any, headers []kgo.RecordHeader, big bool, w want) {
		v, rec := call(kind, extra)
		rec.Want = w
		ps = append(ps, poison{value: v, rec: rec, headers: headers, big: big})
	}
	add(PoisonTraceparent, nil, header("traceparent", long(hostileTraceparentBytes)), false, wantOversized)
	add(PoisonTracestate, nil, header("tracestate", long(boundTracestate+1)), false, wantOversized)
	add(PoisonRunID, map[string]any{"scope": map[string]any{"run_id": long(boundScopeField + 1)}}, nil, false, wantOversized)
	add(PoisonThreadID, map[string]any{"scope": map[string]any{"thread_id": long(boundScopeField + 1)}}, nil, false, wantOversized)
	add(PoisonBy, map[string]any{"by": long(boundBy + 1)}, nil, false, wantOversized)
	add(PoisonReason, map[string]any{"reason": long(boundReason + 1)}, nil, false, wantOversized)
	add(PoisonHuge, map[string]any{"padding": long(hugeValueBytes)}, nil, true, wantOversized)
	add(PoisonBadField, map[string]any{"deadline_ms": "soon"}, nil, false, wantRejected)
	for _, p := range ps {
		retrySend(ctx, func() bool { return h.send(ctx, p.rec, mustMsgpack(p.value), p.headers, p.big) }, func() {
			p.rec.ID = client.NewID() // a send that failed may still have been written: a new record, a new id
			p.value["id"] = p.rec.ID
		})
	}
	anon := hostileRec{Kind: PoisonHugeAnon, Tenant: "hx", Key: tag + "-anon", Want: wantDeadLetter}
	retrySend(ctx, func() bool {
		return h.send(ctx, anon, mustMsgpack(map[string]any{"padding": long(hugeValueBytes)}), nil, true)
	}, nil)
	garbage := hostileRec{Kind: PoisonGarbage, Tenant: "hx", Key: tag + "-garbage", Want: wantDeadLetter}
	retrySend(ctx, func() bool { return h.send(ctx, garbage, []byte{0xc1, 0xff, 0x00, 0xc1}, nil, false) }, nil)
}

// sendAttempts bounds the sends of one hostile record: a broker bounce may
// outlast one produce timeout.
const sendAttempts = 3

// retrySend calls send until it succeeds, at most sendAttempts times,
// calling renew before each new attempt.
func retrySend(ctx context.Context, send func() bool, renew func()) {
	for i := 0; i < sendAttempts && ctx.Err() == nil; i++ {
		if i > 0 && renew != nil {
			renew()
		}
		if send() {
			return
		}
	}
}

// sameID sends one intent id from two tenants, to a read-only tool, on
// one partition: both must be answered (pending reads were keyed by
// partition and id only, and one answer was lost).
func (h *Hostile) sameID(ctx context.Context, tag string) {
	id := client.NewID()
	ka := tag + "-same-a"
	kb := samePartitionKey("hx", ka, "hy", tag+"-same-b", h.partitions)
	for _, tk := range [][2]string{{"hx", ka}, {"hy", kb}} {
		in := &wire.Intent{V: wire.Version, Type: wire.TypeCall, ID: id, Tenant: tk[0], Key: tk[1], Tool: ToolRead,
			Args: map[string]any{"q": tag}}
		h.sendIntent(ctx, in, PoisonSameID, wantAnswered)
	}
}

// samePartitionKey returns a key of tenant b, starting with prefix, that
// routes to the partition of a's key.
func samePartitionKey(ta, ka, tb, prefix string, partitions int32) string {
	want := wire.Partition(wire.RoutingKey(ta, ka), partitions)
	for i := 0; ; i++ {
		k := fmt.Sprintf("%s-%d", prefix, i)
		if wire.Partition(wire.RoutingKey(tb, k), partitions) == want {
			return k
		}
	}
}

// earlyUndo calls a compensatable tool whose effect comes only after the
// call timed out (a slow key), and sends the agent's compensate while the
// call is in doubt and its pending_ttl has not passed: the compensation
// must be refused; it would undo before the effect. The checks: one
// answer each, no compensation_started before the pending_ttl in the log,
// no undo before the effect at the ledger.
func (h *Hostile) earlyUndo(ctx context.Context, tag string) {
	key := SlowKeyPrefix + tag + "-undo"
	call := &wire.Intent{V: wire.Version, Type: wire.TypeCall, ID: client.NewID(), Tenant: "hx", Key: key, Tool: ToolComp,
		Args: map[string]any{"amount": 7}}
	if !h.sendIntent(ctx, call, PoisonEarlyUndo, wantAnswered) {
		return
	}
	h.waitAnswer(ctx, call.Tenant, call.ID, hostilePendingWait+2*time.Second, false)
	undo := &wire.Intent{V: wire.Version, Type: wire.TypeCompensate, ID: client.NewID(), Tenant: "hx", Key: key}
	h.sendIntent(ctx, undo, PoisonEarlyUndo, wantAnswered)
}

// replyGone creates a reply_to topic, gets an answer on it (so that the
// executor knows it), sends a call whose final answer is owed to it later
// (a slow key: in doubt until the reconciler settles it), deletes the
// topic, and sends two more calls naming it. Every answer owed after the
// deletion must come on the results topic, with reply_to_error.
func (h *Hostile) replyGone(ctx context.Context, tag string) {
	x := h.names.Results + "-" + tag + "-reply"
	if err := retry(ctx, 3, func(c context.Context) error { return createTopic(c, h.adm, x) }); err != nil {
		h.logf("hostile: create %s: %v (no reply_to deletion in this wave)", x, err)
		return
	}
	fctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	if err := h.tr.follow(fctx, h.brokers, x, done, h.opts...); err != nil {
		stop()
		h.logf("hostile: follow %s: %v", x, err)
		return
	}
	first := &wire.Intent{V: wire.Version, Type: wire.TypeCall, ID: client.NewID(), Tenant: "hy", Key: tag + "-reply-first",
		Tool: ToolRead, Args: map[string]any{"q": 1}, ReplyTo: x}
	h.sendIntent(ctx, first, PoisonReplyGone, wantAnswered)
	h.waitAnswer(ctx, first.Tenant, first.ID, hostileAnswerWait, true)
	owed := &wire.Intent{V: wire.Version, Type: wire.TypeCall, ID: client.NewID(), Tenant: "hy", Key: SlowKeyPrefix + tag + "-reply-owed",
		Tool: ToolComp, Args: map[string]any{"amount": 3}, ReplyTo: x}
	h.sendIntent(ctx, owed, PoisonReplyGone, wantOnResults)
	h.waitAnswer(ctx, owed.Tenant, owed.ID, hostilePendingWait, false)
	err := retry(ctx, hostileDeleteAttempts, func(c context.Context) error { return deleteTopic(c, h.adm, x) })
	if err != nil {
		// The topic is still there, so the owed answer rightly goes to
		// it: keep reading it for the rest of the run and judge that
		// intent as answered anywhere. (A 30-minute run lost the delete
		// to a broker bounce, stopped reading, and reported the answer
		// that had come on the topic as lost.)
		h.logf("hostile: delete %s: %v (the owed answer is expected on it now)", x, err)
		h.expectAnswered(owed.ID)
		context.AfterFunc(ctx, stop) // the follower ends with the run
		return
	}
	stop()
	<-done
	if h.answeredOn(owed.Tenant, owed.ID, x) {
		// Answered before the deletion (a slow delete, a fast reconciler):
		// on the reply_to, as it should have been then.
		h.expectAnswered(owed.ID)
	}
	sent := true
	for _, tool := range []string{ToolRead, ToolNative} {
		in := &wire.Intent{V: wire.Version, Type: wire.TypeCall, ID: client.NewID(), Tenant: "hy", Key: tag + "-reply-late-" + tool,
			Tool: tool, Args: map[string]any{"q": 2}, ReplyTo: x}
		sent = h.sendIntent(ctx, in, PoisonReplyGone, wantOnResults) && sent
	}
	if sent {
		h.count(PoisonReplyGone)
	}
}

// expectAnswered relaxes what is wanted of the record of intent id to
// one terminal answer, wherever it comes.
func (h *Hostile) expectAnswered(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.mu.recs {
		if h.mu.recs[i].ID == id {
			h.mu.recs[i].Want = wantAnswered
		}
	}
}

// answeredOn reports whether a terminal answer of the intent was read
// from topic.
func (h *Hostile) answeredOn(tenant, id, topic string) bool {
	r, ok := h.tr.get(tenant, id)
	if !ok {
		return false
	}
	for _, a := range r.Answers {
		if a.Topic == topic {
			return true
		}
	}
	return false
}

// sendIntent encodes and sends in (tracked, so its answers are matched)
// as a record of kind; the records of a reply_to deletion are counted
// once, when the whole sequence was sent.
func (h *Hostile) sendIntent(ctx context.Context, in *wire.Intent, kind string, w want) bool {
	ok := false
	retrySend(ctx, func() bool {
		b, err := wire.EncodeIntent(in)
		if err != nil {
			panic(fmt.Sprintf("chaos: encode intent: %v", err))
		}
		rec := hostileRec{Kind: kind, Tenant: in.Tenant, Key: in.Key, ID: in.ID, Tool: in.Tool, Want: w, ReplyTo: in.ReplyTo}
		ok = h.sendCounted(ctx, rec, b, nil, false, kind != PoisonReplyGone)
		return ok
	}, func() { in.ID = client.NewID() })
	return ok
}

// send sends one poison record and counts its kind.
func (h *Hostile) send(ctx context.Context, rec hostileRec, value []byte, headers []kgo.RecordHeader, big bool) bool {
	return h.sendCounted(ctx, rec, value, headers, big, true)
}

func (h *Hostile) sendCounted(ctx context.Context, rec hostileRec, value []byte, headers []kgo.RecordHeader, big, count bool) bool {
	rk := wire.RoutingKey(rec.Tenant, rec.Key)
	rec.Partition = wire.Partition(rk, h.partitions)
	if rec.ID != "" {
		h.tr.addHostile(&wire.Intent{ID: rec.ID, Tenant: rec.Tenant, Key: rec.Key, Tool: rec.Tool, Type: rec.Kind}, rec.Kind)
	}
	cl := h.prod
	if big {
		cl = h.big
	}
	pctx, cancel := context.WithTimeout(ctx, hostileProduceTimeout)
	defer cancel()
	r := &kgo.Record{Topic: h.names.Intents, Partition: rec.Partition, Key: []byte(rk), Value: value, Headers: headers}
	err := cl.ProduceSync(pctx, r).FirstErr()
	if rec.ID != "" {
		h.tr.produced(rec.Tenant, rec.ID, err)
	}
	if err != nil {
		h.logf("hostile: %s not sent: %v", rec.Kind, err)
		return false
	}
	rec.Produced, rec.Offset = true, r.Offset
	h.mu.Lock()
	h.mu.recs = append(h.mu.recs, rec)
	h.mu.Unlock()
	if count {
		h.count(rec.Kind)
	}
	return true
}

// waitAnswer waits until the intent has an answer (terminal only when
// terminal is set), at most d.
func (h *Hostile) waitAnswer(ctx context.Context, tenant, id string, d time.Duration, terminal bool) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if r, ok := h.tr.get(tenant, id); ok && (len(r.Terminal) > 0 || !terminal && r.Pending > 0) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func mustMsgpack(v any) []byte {
	b, err := msgpack.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("chaos: msgpack: %v", err))
	}
	return b
}

// retry runs f up to n times, each with its own timeout, until it
// succeeds (the broker may be bouncing).
func retry(ctx context.Context, n int, f func(context.Context) error) error {
	var err error
	for i := 0; i < n && ctx.Err() == nil; i++ {
		c, cancel := context.WithTimeout(ctx, hostileTopicWait)
		err = f(c)
		cancel()
		if err == nil {
			return nil
		}
		time.Sleep(2 * time.Second)
	}
	return err
}

func createTopic(ctx context.Context, adm *kadm.Client, name string) error {
	resp, err := adm.CreateTopic(ctx, 1, 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return err
	}
	return waitTopic(ctx, adm, name, true)
}

// deleteTopic deletes name and waits until the metadata no longer lists it.
func deleteTopic(ctx context.Context, adm *kadm.Client, name string) error {
	rs, err := adm.DeleteTopics(ctx, name)
	if err == nil {
		err = rs.Error()
	}
	if err != nil {
		return err
	}
	return waitTopic(ctx, adm, name, false)
}

func waitTopic(ctx context.Context, adm *kadm.Client, name string, exists bool) error {
	for {
		td, err := adm.ListTopics(ctx, name)
		if err == nil && td.Has(name) == exists {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("chaos: topic %s never %s: %w", name, map[bool]string{true: "appeared", false: "went"}[exists], ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
