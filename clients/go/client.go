package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/kafkaconfig"
	"github.com/atmostonce/toolexec/topicadmin"
	"github.com/atmostonce/toolexec/topics"
	"github.com/atmostonce/toolexec/wire"
)

var (
	// ErrInDoubt: the key is parked in doubt; the answer so far is pending.
	ErrInDoubt = errors.New("client: key in doubt")
	// ErrClosed is returned by Call after Close.
	ErrClosed = errors.New("client: closed")
	// ErrApprovalPending: the key's tool needs a person's approval and
	// nothing ran yet; the answer so far is pending (awaiting_approval).
	// Returned at once: a person, not a retry, decides when it runs. Ask
	// again later with the same key and arguments.
	ErrApprovalPending = errors.New("client: awaiting a person's approval")
	// ErrBusy: the executor had no place for the call (its tenant held its
	// share of the tool, or the tool was full): nothing ran, nothing was
	// recorded, and the key is free. Call sends the key again after each
	// answer's RetryAfter, up to MaxBusyRetries times while ctx allows,
	// then returns the last answer with this error.
	ErrBusy = errors.New("client: the executor has no place for the call now")
)

// MaxBusyRetries bounds the sends of one Call after answers that said the
// executor had no place for it: a flood is the caller's to slow down, not
// to wait out in a loop.
const MaxBusyRetries = 5

// Config configures a Client.
type Config struct {
	Brokers []string
	Prefix  string // topic prefix, default "tool."
	// ReplyTo is the topic answers are read from; default the results
	// topic. A dedicated topic per service keeps its consumer small.
	ReplyTo string
	// OnPending is called for every pending answer, if set.
	OnPending func(*wire.Result)
	// KafkaConfig is the path of a Kafka client properties file
	// (security.protocol, sasl.*, ssl.*; package kafkaconfig), the same
	// file the commands take with --kafka-config. Its bootstrap.servers
	// are the seeds when Brokers is empty. New checks the connection
	// with it and fails with kafkaconfig.ErrTLS or ErrSASL at once.
	KafkaConfig string
	ClientOpts  []kgo.Opt // extra kgo options of both clients (after KafkaConfig's)
}

// Client produces intents and matches answers to them. Safe for concurrent
// use.
type Client struct {
	cfg      Config
	names    topics.Names
	prod     *kgo.Client
	cons     *kgo.Client
	replyTo  string
	nIntents int32
	done     chan struct{}
	replyID  atomic.Value // kadm.TopicID of the reply topic being read

	mu struct {
		sync.Mutex
		waiters map[string]waiter
		closed  bool
	}
}

// waiter is a produced intent whose answers are awaited. An answer is
// delivered to it only when its intent id, tenant and key all match: an
// intent id is unique per client, not per deployment, and anyone who may
// write the reply topic may write an answer naming it.
type waiter struct {
	tenant, key string
	ch          chan *wire.Result
	hand        func(*wire.Result) // set by Pending.Hand: takes the next answer instead of ch
}

// New connects, and starts reading answers from the current end of the
// reply topic, so every answer to a Call made afterwards is seen.
func New(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.Prefix == "" {
		cfg.Prefix = topics.DefaultPrefix
	}
	c := &Client{cfg: cfg, names: topics.NamesWithPrefix(cfg.Prefix), done: make(chan struct{})}
	c.mu.waiters = map[string]waiter{}
	c.replyTo = cfg.ReplyTo
	if c.replyTo == "" {
		c.replyTo = c.names.Results
	}
	if err := c.loadKafkaConfig(ctx); err != nil {
		return nil, err
	}
	if err := c.connect(ctx); err != nil {
		c.Close()
		return nil, err
	}
	go c.readAnswers()
	return c, nil
}

// loadKafkaConfig applies Config.KafkaConfig: the seeds and the TLS and
// SASL options, checked against the cluster once.
func (c *Client) loadKafkaConfig(ctx context.Context) error {
	if c.cfg.KafkaConfig == "" {
		return nil
	}
	kc, err := kafkaconfig.Load(c.cfg.KafkaConfig)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	opts, err := kc.Opts()
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	if len(c.cfg.Brokers) == 0 {
		c.cfg.Brokers = kc.BootstrapServers
	}
	if err := kafkaconfig.Check(ctx, c.cfg.Brokers, opts...); err != nil {
		return fmt.Errorf("client: %w", err)
	}
	c.cfg.ClientOpts = append(opts, c.cfg.ClientOpts...)
	return nil
}

func (c *Client) connect(ctx context.Context) error {
	prod, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.cfg.Brokers...),
		kgo.RecordPartitioner(kgo.ManualPartitioner())}, c.cfg.ClientOpts...)...)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	c.prod = prod
	adm := kadm.NewClient(prod)
	td, err := adm.ListTopics(ctx, c.names.Intents, c.replyTo)
	if err != nil {
		return fmt.Errorf("client: list topics: %w", err)
	}
	if d, ok := td[c.names.Intents]; !ok || d.Err != nil || len(d.Partitions) == 0 {
		// No partitions listed: a leader moving, or the topic not there.
		// Taken as zero partitions, the first Send would panic.
		return fmt.Errorf("client: topic %s is not listed with its partitions (%v); is the executor running?", c.names.Intents, d.Err)
	}
	c.nIntents = int32(len(td[c.names.Intents].Partitions))
	c.replyID.Store(td[c.replyTo].ID)
	ends, err := topicadmin.EndOffsets(ctx, adm, c.replyTo)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	start := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) { start[o.Partition] = kgo.NewOffset().At(o.Offset) })
	cons, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.cfg.Brokers...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{c.replyTo: start})}, c.cfg.ClientOpts...)...)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	c.cons = cons
	return nil
}

// ReplyTopicID is the id of the reply topic the client reads: a topic
// deleted and made again under the same name has another.
func (c *Client) ReplyTopicID() kadm.TopicID {
	id, _ := c.replyID.Load().(kadm.TopicID)
	return id
}

// Reconsume reads the reply topic anew, from the start of each of its
// partitions. What it is for: a reply topic deleted and made again (a
// gateway's, deleted by a peer while it lived) is another topic under
// the same name, and the consumer would keep following the one that is
// gone; answers produced to the new one since it was made are read.
// Answers awaited stay awaited.
func (c *Client) Reconsume(ctx context.Context) error {
	td, err := kadm.NewClient(c.prod).ListTopics(ctx, c.replyTo)
	if err != nil {
		return fmt.Errorf("client: list topics: %w", err)
	}
	d, ok := td[c.replyTo]
	if !ok || d.Err != nil || len(d.Partitions) == 0 {
		return fmt.Errorf("client: reply topic %s does not exist", c.replyTo)
	}
	start := map[int32]kgo.Offset{}
	for p := range d.Partitions {
		start[p] = kgo.NewOffset().AtStart()
	}
	c.cons.PurgeTopicsFromConsuming(c.replyTo)
	c.cons.AddConsumePartitions(map[string]map[int32]kgo.Offset{c.replyTo: start})
	c.replyID.Store(d.ID)
	return nil
}

func (c *Client) readAnswers() {
	defer close(c.done)
	for {
		fs := c.cons.PollFetches(context.Background())
		if fs.IsClientClosed() {
			return
		}
		fs.EachRecord(func(r *kgo.Record) {
			if res, err := wire.DecodeResult(r.Value); err == nil {
				c.deliver(res)
			}
		})
	}
}

func (c *Client) deliver(res *wire.Result) {
	c.mu.Lock()
	w, ok := c.mu.waiters[res.IntentID]
	ok = ok && res.Tenant == w.tenant && res.Key == w.key
	if ok && w.hand != nil {
		delete(c.mu.waiters, res.IntentID)
	}
	c.mu.Unlock()
	if !ok {
		return
	}
	if w.hand != nil {
		w.hand(res)
		return
	}
	select {
	case w.ch <- res:
	default: // the waiter has an unread answer already; a newer pending one adds nothing
	}
}

// Call produces in and waits for its terminal answer. See the package doc
// for the meaning of each status. in.ID is filled when empty; in.V and
// in.Type default to 1 and "call". An answer that says the executor had
// no place for the call (wire.Result.Busy) is not returned while the key
// can be sent again: Call waits its RetryAfter (with up to a quarter more,
// so that refused callers do not all come back at once) and sends it with
// a new id, at most MaxBusyRetries times and never past ctx's deadline;
// then it returns the last such answer with an error wrapping ErrBusy.
func (c *Client) Call(ctx context.Context, in wire.Intent, opts ...CallOption) (*wire.Result, error) {
	for retries := 0; ; retries++ {
		res, err := c.callOnce(ctx, in, opts)
		if err != nil || !res.Busy() {
			return res, err
		}
		if retries == MaxBusyRetries || !pause(ctx, res.RetryAfter()) {
			return res, fmt.Errorf("%w: %s (retry after %s)", ErrBusy, res.Error.Message, res.RetryAfter())
		}
		in.ID = "" // a new emission: the refused one has its answer
	}
}

func (c *Client) callOnce(ctx context.Context, in wire.Intent, opts []CallOption) (*wire.Result, error) {
	p, err := c.Start(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return p.Wait(ctx)
}

// pause waits d and up to a quarter more, or reports false at once when
// ctx would end first.
func pause(ctx context.Context, d time.Duration) bool {
	d += time.Duration(mrand.Int64N(int64(d)/4 + 1))
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// CallOption adds to the record of one intent.
type CallOption func(*kgo.Record)

// WithTraceparent sets the intent's W3C traceparent header (ignored when
// empty): the executor carries it to the tool, the events and the answer.
func WithTraceparent(tp string) CallOption {
	return func(r *kgo.Record) {
		if tp != "" {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: "traceparent", Value: []byte(tp)})
		}
	}
}

// WithTracestate sets the intent's W3C tracestate header (ignored when
// empty), the vendor state that goes with its traceparent.
func WithTracestate(ts string) CallOption {
	return func(r *kgo.Record) {
		if ts != "" {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: "tracestate", Value: []byte(ts)})
		}
	}
}

// Pending is an intent that was produced and whose answer is awaited. Its
// methods are not safe for concurrent use; Close it when done.
type Pending struct {
	c  *Client
	in wire.Intent
	ch chan *wire.Result
}

// Start produces in (filled as for Call) and returns once the broker took
// it, so that waiting can be bounded apart from producing. ctx bounds the
// produce only.
func (c *Client) Start(ctx context.Context, in wire.Intent, opts ...CallOption) (*Pending, error) {
	fill(&in, c.replyTo, c.names.Results)
	ch, err := c.register(in)
	if err != nil {
		return nil, err
	}
	if err := c.produce(ctx, &in, opts); err != nil {
		c.unregister(in.ID)
		return nil, err
	}
	return &Pending{c: c, in: in, ch: ch}, nil
}

// Intent is the intent as produced (with its id).
func (p *Pending) Intent() wire.Intent { return p.in }

// Wait waits for the terminal answer, as Call does: when ctx ends first it
// returns the last pending answer with an error wrapping ErrInDoubt, or nil
// and ctx's error when no answer came at all. An answer that says the key
// awaits approval ends the wait at once, with ErrApprovalPending.
func (p *Pending) Wait(ctx context.Context) (*wire.Result, error) { return p.c.await(ctx, p.ch) }

// Next waits for the intent's next answer, terminal or not: a lookup's
// pending answer (the key is running or in doubt) is its whole answer.
// When ctx ends first it returns nil and an error wrapping ctx's.
func (p *Pending) Next(ctx context.Context) (*wire.Result, error) {
	select {
	case res := <-p.ch:
		return res, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("client: no answer: %w", ctx.Err())
	}
}

// Close stops listening for the intent's answers. Idempotent.
func (p *Pending) Close() { p.c.unregister(p.in.ID) }

// Hand stops waiting for the intent's answers here and hands the next one
// to f instead: at once when one came already, else on the client's
// reading goroutine when it comes (f must not block), or nil when d
// passes first or the client closes. f is called once. The Pending must
// not be used afterwards. What it is for: a caller that stopped waiting
// (the gateway's Prefer: wait=0) but holds something until the call ends
// (the gateway's place in its tenant's concurrent_calls).
func (p *Pending) Hand(d time.Duration, f func(*wire.Result)) {
	var once sync.Once
	var timer atomic.Pointer[time.Timer]
	var called atomic.Bool
	call := func(res *wire.Result) {
		once.Do(func() {
			called.Store(true)
			if t := timer.Load(); t != nil {
				t.Stop()
			}
			f(res)
		})
	}
	if !p.c.handOver(p.in.ID, call) {
		call(nil)
		return
	}
	select {
	case res := <-p.ch: // came before the hand-over
		p.c.unregister(p.in.ID)
		call(res)
		return
	default:
	}
	timer.Store(time.AfterFunc(d, func() { p.c.unregister(p.in.ID); call(nil) }))
	if called.Load() { // the answer came while the timer was being set
		timer.Load().Stop()
	}
}

// handOver makes f take the next answer of the intent id; false when the
// intent is no longer awaited (the client closed).
func (c *Client) handOver(id string, f func(*wire.Result)) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.mu.waiters[id]
	if !ok || c.mu.closed {
		return false
	}
	w.hand = f
	c.mu.waiters[id] = w
	return true
}

func fill(in *wire.Intent, replyTo, results string) {
	if in.V == 0 {
		in.V = wire.Version
	}
	if in.Type == "" {
		in.Type = wire.TypeCall
	}
	if in.Tenant == "" {
		in.Tenant = wire.DefaultTenant
	}
	if in.ID == "" {
		in.ID = NewID()
	}
	if in.ReplyTo == "" && replyTo != results {
		in.ReplyTo = replyTo
	}
}

func (c *Client) register(in wire.Intent) (chan *wire.Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return nil, ErrClosed
	}
	if _, dup := c.mu.waiters[in.ID]; dup {
		return nil, fmt.Errorf("client: a call with intent id %q is already waiting", in.ID)
	}
	ch := make(chan *wire.Result, 4)
	c.mu.waiters[in.ID] = waiter{tenant: in.Tenant, key: in.Key, ch: ch}
	return ch, nil
}

func (c *Client) unregister(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.mu.waiters, id)
}

func (c *Client) produce(ctx context.Context, in *wire.Intent, opts []CallOption) error {
	b, err := wire.EncodeIntent(in)
	if err != nil {
		return err
	}
	rk := in.RoutingKey()
	r := &kgo.Record{Topic: c.names.Intents, Partition: wire.Partition(rk, c.nIntents), Key: []byte(rk), Value: b}
	for _, o := range opts {
		o(r)
	}
	if err := c.prod.ProduceSync(ctx, r).FirstErr(); err != nil {
		return fmt.Errorf("client: produce intent: %w", err)
	}
	return nil
}

func (c *Client) await(ctx context.Context, ch chan *wire.Result) (*wire.Result, error) {
	var last *wire.Result
	for {
		select {
		case res := <-ch:
			if codes.Terminal(res.Status) {
				return res, nil
			}
			if res.AwaitingApproval() {
				return res, ErrApprovalPending
			}
			last = res
			if c.cfg.OnPending != nil {
				c.cfg.OnPending(res)
			}
		case <-ctx.Done():
			if last != nil {
				return last, fmt.Errorf("%w: %w", ErrInDoubt, ctx.Err())
			}
			return nil, fmt.Errorf("client: no answer: %w", ctx.Err())
		}
	}
}

// Close stops the client. Calls in progress return ErrClosed-like context
// errors as their contexts end.
func (c *Client) Close() {
	c.mu.Lock()
	c.mu.closed = true
	var hands []func(*wire.Result)
	for id, w := range c.mu.waiters {
		if w.hand != nil {
			hands = append(hands, w.hand)
			delete(c.mu.waiters, id)
		}
	}
	c.mu.Unlock()
	for _, h := range hands { // no answer will come now
		h(nil)
	}
	if c.prod != nil {
		c.prod.Close()
	}
	if c.cons != nil {
		c.cons.Close()
		select {
		case <-c.done:
		case <-time.After(5 * time.Second):
		}
	}
}

// NewID returns a fresh intent id (an emission id, not an idempotency key).
func NewID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
