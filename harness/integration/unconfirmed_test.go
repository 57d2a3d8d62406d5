package integration

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/executor"
	"github.com/atmostonce/toolexec/internal/testing/kfakeresp"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/topicadmin"
	"github.com/atmostonce/toolexec/topics"
	"github.com/atmostonce/toolexec/wire"
)

// TestUnconfirmedCommitIsNotDecidedTwice: the broker commits a transaction
// but its answer never reaches the executor (the connection drops after
// the EndTxn is applied, as when a broker dies between the two). The
// session then reports an error and rewinds to the offsets it last knew
// committed, where every intent of that transaction would be decided
// again and answered a second time. The executor moves to the offsets the
// group really committed: one answer per intent.
//
// It runs on a private kfake cluster whatever broker the suite uses: the
// fault needs kfake's request control.
func TestUnconfirmedCommitIsNotDecidedTwice(t *testing.T) {
	u := newUnconfirmed(t, "uc", "")
	ctx, c, l, drop := u.ctx, u.client, u.ledger, u.drop
	first := wire.Intent{Tool: "t.ok", Key: "uc-1", Args: map[string]any{"n": 1}}
	if res, err := c.Call(ctx, first); err != nil || res.Status != codes.StatusSucceeded {
		t.Fatalf("first call: %+v %v", res, err)
	}

	// A duplicate: its tick answers it (a replay) and commits, and that
	// commit's answer is lost.
	drop.arm()
	dup := first
	dup.ID = client.NewID()
	results := collectOn(t, u.seeds, u.names.Results)
	if _, err := c.Call(ctx, dup); err != nil {
		t.Fatalf("duplicate: %v", err)
	}
	if !drop.fired() {
		t.Fatal("no transaction commit was intercepted: the test did not exercise the fault")
	}
	// The executor gives up on End after its transaction timeout, aborts,
	// and goes on; a second answer would come then.
	u.callOK(t, "uc-2")
	time.Sleep(2 * time.Second)
	if n := len(results.results(dup.ID)); n != 1 {
		t.Fatalf("the duplicate got %d answers, want 1", n)
	}
	if n := l.total(); n != 2 {
		t.Fatalf("the tool saw %d requests, want 2 (uc-1 and uc-2 once each)", n)
	}
}

// TestUnconfirmedReadAnswerIsNotSentTwice: the transaction that records a
// read's answer commits, but its answer is lost. The next tick records
// the tick's completions again; a read keeps no key record that would
// tell it the answer is already out: its pending-read entry, restored
// from the log, tells instead, and the read is answered once.
func TestUnconfirmedReadAnswerIsNotSentTwice(t *testing.T) {
	u := newUnconfirmed(t, "ura", toolEntry("t.roblock", "read_only", "/block", "40s", ""))
	in := wire.Intent{ID: client.NewID(), Tool: "t.roblock", Key: "ura-1", Args: map[string]any{"q": 1}}
	results := collectOn(t, u.seeds, u.names.Results)
	go func() { _, _ = u.client.Call(u.ctx, in) }()
	u.ledger.waitArrivals(t, 1, 30*time.Second) // read_started has committed
	u.drop.arm()
	u.ledger.releaseAll()
	results.waitResult(t, in.ID, 30*time.Second)
	u.callOK(t, "ura-2") // after the executor gave up on the lost end
	if !u.drop.fired() {
		t.Fatal("no transaction commit was intercepted: the test did not exercise the fault")
	}
	time.Sleep(2 * time.Second)
	if n := len(results.results(in.ID)); n != 1 {
		t.Fatalf("the read got %d answers, want 1", n)
	}
	if n := u.ledger.total(); n != 2 {
		t.Fatalf("the tool saw %d requests, want 2 (the read and ura-2 once each)", n)
	}
}

// TestUnconfirmedReadStartIsAnswered: the transaction that takes a read
// on (its read_started event and its intent's offset) commits, but its
// answer is lost. The executor forgets the call it would have made, and
// the committed offset means the intent is never delivered again, so
// nothing would answer the read until the partition changed owner: the
// lost end makes the member take on the partition's pending reads again
// after it catches up.
func TestUnconfirmedReadStartIsAnswered(t *testing.T) {
	u := newUnconfirmed(t, "urs", toolEntry("t.ro", "read_only", "/ok", "5s", ""))
	u.callOK(t, "urs-0") // the partition is restored and its reads taken on
	u.drop.arm()
	in := wire.Intent{ID: client.NewID(), Tool: "t.ro", Key: "urs-1", Args: map[string]any{"q": 1}}
	results := collectOn(t, u.seeds, u.names.Results)
	go func() { _, _ = u.client.Call(u.ctx, in) }()
	res := results.waitResult(t, in.ID, 60*time.Second)
	if !u.drop.fired() {
		t.Fatal("no transaction commit was intercepted: the test did not exercise the fault")
	}
	if res.Status != codes.StatusSucceeded {
		t.Fatalf("read answer: %+v", res)
	}
	time.Sleep(2 * time.Second)
	if n := len(results.results(in.ID)); n != 1 {
		t.Fatalf("the read got %d answers, want 1", n)
	}
}

// TestCommitAbortedBehindItsSuccessIsNotCalled: the broker answers an
// EndTxn commit with success and aborts the transaction (Kafka 4.4 can do
// this to one partition after a hard kill: docs/RELIABILITY.md). Calling
// the tool as soon as EndTxn returns would make an effect whose started
// event was aborted, recorded by an outcome with no started event before
// it: the tick's calls wait for the markers on their events partitions: the abort is seen, nothing is
// called, the intent is polled again and decided anew, and the tool runs
// once, after a committed started event.
func TestCommitAbortedBehindItsSuccessIsNotCalled(t *testing.T) {
	u := newUnconfirmed(t, "cab", "")
	u.callOK(t, "cab-0") // the partition is restored and a first commit went through
	ab := &commitAborter{cluster: u.cluster}
	u.cluster.ControlKey(int16(kmsg.EndTxn), ab.control)
	u.callOK(t, "cab-1")
	if !ab.fired() {
		t.Fatal("no commit was turned into an abort: the test did not exercise the fault")
	}
	if n := u.ledger.total(); n != 2 {
		t.Fatalf("the tool saw %d requests, want 2 (cab-0 and cab-1 once each)", n)
	}
	if n := metricValue(t, u.ex.Metrics().AbortedAfterCommit); n != 1 {
		t.Fatalf("toolexec_executor_commits_aborted_after_success_total %v, want 1", n)
	}
	rk := wire.RoutingKey(wire.DefaultTenant, "cab-1")
	committed := keyEvents(t, u.adm, u.seeds, u.names.Events, 1, rk)
	written := keyEvents(t, u.adm, u.seeds, u.names.Events, 1, rk, kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
	if started(written) != 2 {
		t.Fatalf("cab-1 has %d started events in the log, want 2 (the aborted one and the redo): %v", started(written), kinds(written))
	}
	ck := kinds(committed)
	if len(ck) < 2 || ck[0] != saga.EvStarted || ck[len(ck)-1] != saga.EvOutcome || started(committed) != 1 {
		t.Fatalf("cab-1's committed events are %v, want one started, then its outcome", ck)
	}
}

// started counts the started events among evs.
func started(evs []*saga.Event) int {
	n := 0
	for _, ev := range evs {
		if ev.Kind == saga.EvStarted {
			n++
		}
	}
	return n
}

// kinds lists the kinds of evs, for a failure message.
func kinds(evs []*saga.Event) []saga.EventKind {
	out := make([]saga.EventKind, len(evs))
	for i, ev := range evs {
		out[i] = ev.Kind
	}
	return out
}

// commitAborter turns the first EndTxn commit it sees into an abort that
// kfake answers with success, as a broker that loses its commit markers
// does.
type commitAborter struct {
	cluster *kfake.Cluster

	mu      sync.Mutex
	applied bool
}

func (a *commitAborter) fired() bool { a.mu.Lock(); defer a.mu.Unlock(); return a.applied }

func (a *commitAborter) control(req kmsg.Request) (kmsg.Response, error, bool) {
	a.cluster.KeepControl()
	r := req.(*kmsg.EndTxnRequest)
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.applied && r.Commit {
		r.Commit = false // kfake handles the request it was given
		a.applied = true
	}
	return nil, nil, false
}

// unconfirmed is one executor on a private kfake cluster whose EndTxn
// commits can be made to lose their answer (commitDropper). It runs on
// kfake whatever broker the suite uses: the fault needs kfake's request
// control.
type unconfirmed struct {
	ctx     context.Context
	cluster *kfake.Cluster
	ip      *kfakeresp.Interposer // passes everything until a test sets it
	adm     *kadm.Client
	seeds   []string
	names   topics.Names
	ledger  *ledger
	drop    *commitDropper
	client  *client.Client
	ex      *executor.Executor
	ended   chan struct{} // closed when Run returned, with runErr
	runErr  error
	stop    context.CancelFunc // ends Run gracefully (a shutdown: it drains)
	cfg     executor.Config    // the executor's, for another member of its group
}

// newUnconfirmed starts it; extra adds tool entries whose url is a path
// of the ledger, and mods change the executor's configuration.
func newUnconfirmed(t *testing.T, prefix, extra string, mods ...func(*executor.Config)) *unconfirmed {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test")
	}
	ip := kfakeresp.NewInterposer()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(500*time.Millisecond), kfake.ListenFn(ip.Listen))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	u := &unconfirmed{cluster: cluster, ip: ip, seeds: cluster.ListenAddrs(), names: topics.NamesWithPrefix(prefix + ".")}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	u.ctx = ctx
	raw, err := kgo.NewClient(kgo.SeedBrokers(u.seeds...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(raw.Close)
	u.adm = kadm.NewClient(raw)
	if _, err := topicadmin.Ensure(ctx, u.adm, u.names, topicadmin.Settings{Partitions: 1, MinEventRetention: 48 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	u.ledger = newLedger(t)
	u.drop = &commitDropper{cluster: cluster, seeds: u.seeds}
	cluster.ControlKey(int16(kmsg.EndTxn), u.drop.control)

	yaml := u.ledger.toolsYAML(strings.ReplaceAll(extra, `url: "/`, `url: "`+u.ledger.url("/")))
	cfg := executor.Config{
		Brokers: u.seeds, Names: u.names, Group: prefix, DataDir: t.TempDir(), Tools: registry(t, yaml),
		SessionTimeout: 3 * time.Second, RebalanceTimeout: 10 * time.Second, DrainTimeout: 5 * time.Second,
		TransactionTimeout: 6 * time.Second,
		Logger:             slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: logLevel()})),
		Settings:           topicadmin.Settings{Partitions: 1},
	}
	for _, mod := range mods {
		mod(&cfg)
	}
	u.cfg = cfg
	ex, err := executor.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	u.ex, u.ended = ex, make(chan struct{})
	runCtx, stop := context.WithCancel(context.Background())
	u.stop = stop
	go func() { u.runErr = ex.Run(runCtx); close(u.ended) }()
	t.Cleanup(func() { stop(); <-u.ended; ex.Close() })

	if u.client, err = client.New(ctx, client.Config{Brokers: u.seeds, Prefix: prefix + "."}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(u.client.Close)
	return u
}

// callOK calls t.ok with key and wants it to succeed.
func (u *unconfirmed) callOK(t *testing.T, key string) {
	t.Helper()
	in := wire.Intent{Tool: "t.ok", Key: key, Args: map[string]any{"k": key}}
	if res, err := u.client.Call(u.ctx, in); err != nil || res.Status != codes.StatusSucceeded {
		t.Fatalf("call %s: %+v %v", key, res, err)
	}
}

// commitDropper applies the first armed EndTxn commit through a side
// connection and then closes the executor's connection instead of
// answering it, for that request and every retry of it.
type commitDropper struct {
	cluster *kfake.Cluster
	seeds   []string

	mu      sync.Mutex
	armed   bool
	side    bool
	applied bool
	pid     int64
	epoch   int16
}

func (d *commitDropper) arm() { d.mu.Lock(); d.armed = true; d.mu.Unlock() }

func (d *commitDropper) fired() bool { d.mu.Lock(); defer d.mu.Unlock(); return d.applied }

var errDropped = errors.New("test: connection dropped after the commit was applied")

func (d *commitDropper) control(req kmsg.Request) (kmsg.Response, error, bool) {
	d.cluster.KeepControl()
	r := req.(*kmsg.EndTxnRequest)
	d.mu.Lock()
	switch {
	case d.side || !d.armed || !r.Commit:
		d.mu.Unlock()
		return nil, nil, false
	case d.applied:
		retry := r.ProducerID == d.pid && r.ProducerEpoch == d.epoch
		d.mu.Unlock()
		if retry {
			return nil, errDropped, true
		}
		return nil, nil, false
	}
	d.side, d.applied, d.pid, d.epoch = true, true, r.ProducerID, r.ProducerEpoch
	d.mu.Unlock()
	sideDone := make(chan struct{})
	go func() {
		defer close(sideDone)
		cl, err := kgo.NewClient(kgo.SeedBrokers(d.seeds...))
		if err != nil {
			return
		}
		defer cl.Close()
		cp := *r
		_, _ = cp.RequestWith(context.Background(), cl)
	}()
	d.cluster.SleepControl(func() { <-sideDone })
	d.mu.Lock()
	d.side = false
	d.mu.Unlock()
	return nil, errDropped, true
}
