package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/trace"

	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/internal/tracing"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/topics"
)

// Gateway serves the HTTP API and MCP for one instance. Safe for
// concurrent use; Close it when done.
type Gateway struct {
	cfg        Config
	names      topics.Names
	replyTopic string
	log        *slog.Logger
	tools      map[string]*tool
	toolNames  []string // sorted
	m          *metrics
	tracer     trace.Tracer // nil: tracing off

	admCl   *kgo.Client
	adm     *kadm.Client
	client  *client.Client
	lookups *limiter   // GET and compensate of a key
	admit   *admission // calls and compensates, by the tenant's limits
	busy    *busyHolds // calls the executor just refused for want of a place
	mcp     *mcpServers
	stop    chan struct{} // ends keepReplyTopic
	stopped chan struct{}
	// replyLost: the reply topic is gone, or is not the one the client
	// reads; the gateway is not ready until checkReplyTopic mends it.
	replyLost atomic.Bool
	// reaper is keepReplyTopic's: when it first saw each empty reply
	// topic of another instance (reap.go).
	reaper struct{ emptySince map[string]time.Time }
}

// tool is one configured tool as the gateway serves it.
type tool struct {
	spec   tools.Spec
	schema *jsonschema.Schema
	// schemaJSON is the input schema as a JSON value, for listings.
	schemaJSON map[string]any
}

// New checks cfg, creates this instance's reply topic if it is missing,
// and connects. The executor's topics must exist (an executor ran once).
// ctx bounds the start only.
func New(ctx context.Context, cfg Config) (*Gateway, error) {
	cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &Gateway{cfg: cfg, names: topics.NamesWithPrefix(cfg.Prefix), replyTopic: ReplyTopic(cfg.Prefix, cfg.InstanceID),
		log: cfg.Logger.With("component", "gateway"), lookups: newLookupLimiter(), admit: newAdmission(), busy: newBusyHolds()}
	if err := g.loadTools(); err != nil {
		return nil, err
	}
	g.m = newMetrics(cfg.Registerer)
	g.tracer = tracing.Tracer(cfg.TracerProvider, "github.com/atmostonce/toolexec/gateway")
	if err := g.connect(ctx); err != nil {
		g.Close()
		return nil, err
	}
	g.mcp = newMCPServers(g)
	g.stop, g.stopped = make(chan struct{}), make(chan struct{})
	go func() { defer close(g.stopped); g.keepReplyTopic(g.stop) }()
	return g, nil
}

// kafkaOpts are the options of every Kafka client the gateway makes: the
// producer and the answer consumer (client.Client), the admin client, and
// each event-log read. The one place to add security settings: they come
// in through Config.KafkaOpts and apply to all.
func (g *Gateway) kafkaOpts() []kgo.Opt {
	return append([]kgo.Opt{kgo.SeedBrokers(g.cfg.Brokers...), kgo.ClientID(g.cfg.ClientID)}, g.cfg.KafkaOpts...)
}

func (g *Gateway) connect(ctx context.Context) error {
	admCl, err := kgo.NewClient(g.kafkaOpts()...)
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	g.admCl, g.adm = admCl, kadm.NewClient(admCl)
	if err := g.makeReplyTopic(ctx); err != nil {
		return err
	}
	cl, err := client.New(ctx, client.Config{Brokers: g.cfg.Brokers, Prefix: g.cfg.Prefix, ReplyTo: g.replyTopic, ClientOpts: g.kafkaOpts()})
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	g.client = cl
	return nil
}

func (g *Gateway) loadTools() error {
	g.tools = map[string]*tool{}
	var errs []error
	for _, s := range g.cfg.Tools {
		t, err := newTool(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: tool %s: input_schema: %w", ErrConfig, s.Name, err))
			continue
		}
		if _, dup := g.tools[s.Name]; dup {
			errs = append(errs, fmt.Errorf("%w: tool %s is listed twice", ErrConfig, s.Name))
			continue
		}
		g.tools[s.Name] = t
		g.toolNames = append(g.toolNames, s.Name)
	}
	slices.Sort(g.toolNames)
	return errors.Join(errs...)
}

func newTool(s tools.Spec) (*tool, error) {
	sch, err := tools.CompileInputSchema(s.Schema())
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(s.Schema(), &doc); err != nil {
		return nil, err
	}
	return &tool{spec: s, schema: sch, schemaJSON: doc}, nil
}

// toolFor returns the tool named name if tenant may call it. To a tenant
// outside its allow-list a tool does not exist.
func (g *Gateway) toolFor(tenant, name string) (*tool, bool) {
	t, ok := g.tools[name]
	if !ok || !t.spec.Allows(tenant) {
		return nil, false
	}
	return t, true
}

// visibleTools lists the tools tenant may call, by name.
func (g *Gateway) visibleTools(tenant string) []*tool {
	var out []*tool
	for _, n := range g.toolNames {
		if t := g.tools[n]; t.spec.Allows(tenant) {
			out = append(out, t)
		}
	}
	return out
}

// Ping reports whether a broker of the cluster answers on the gateway's
// admin connection. Without one no call can be produced nor its answer
// read: a gateway's readiness follows it.
//
// A gateway whose reply topic is gone (a peer deleted it) is not ready
// either until it made the topic again and reads it: no answer would
// reach a request meanwhile.
func (g *Gateway) Ping(ctx context.Context) error {
	if err := g.admCl.Ping(ctx); err != nil {
		return fmt.Errorf("gateway: no broker answers: %w", err)
	}
	if g.replyLost.Load() {
		return fmt.Errorf("gateway: the reply topic %s is being made again", g.replyTopic)
	}
	return nil
}

// ReplyTopic is the topic this instance reads its answers from.
func (g *Gateway) ReplyTopic() string { return g.replyTopic }

// Handler serves the API under /v1/ and MCP at /mcp, each behind bearer
// authentication. Health and metrics endpoints are the caller's to add.
func (g *Gateway) Handler() http.Handler { return g.routes() }

// Close releases the Kafka clients. Requests still waiting get no answer
// (their clients retry with the same key).
func (g *Gateway) Close() {
	if g.stop != nil {
		close(g.stop)
		<-g.stopped
		g.stop = nil
	}
	if g.client != nil {
		g.client.Close()
	}
	if g.admCl != nil {
		g.admCl.Close()
	}
}

// requiresKey reports whether calls of t need an Idempotency-Key: every
// class but read_only keeps a record per key.
func (t *tool) requiresKey() bool { return !t.spec.Class.ReadOnly() }

func (t *tool) name() string { return t.spec.Name }
