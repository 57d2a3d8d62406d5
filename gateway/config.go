package gateway

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/trace"

	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/topics"
)

// Waits. Why 10 s by default: long enough for most tools to answer inside
// one request, short enough for load balancers' idle timeouts (often 30 s
// or 60 s); 60 s at most for the same reason.
const (
	DefaultWait = 10 * time.Second
	MaxWait     = 60 * time.Second
)

// Config configures a Gateway. Zero fields take the defaults named on each.
type Config struct {
	// Brokers are the seed brokers. Required.
	Brokers []string
	// KafkaOpts are extra client options (TLS, SASL: what --kafka-config
	// gives). Every Kafka client of the gateway takes them, after its own
	// (see kafkaOpts).
	KafkaOpts []kgo.Opt
	// Prefix is the topic prefix, default "tool.".
	Prefix string
	// Tools are the executor's tool specs (tools.Load, or Registry.Specs):
	// names, classes, descriptions, schemas, allow-lists. The gateway
	// never calls a tool itself. Required (it may be empty).
	Tools []tools.Spec
	// Tenants hold the tokens in force. Required.
	Tenants *TenantStore
	// InstanceID names this instance's reply topic,
	// <prefix>gateway.<InstanceID>. Required; [a-z0-9._-]{1,64}. Two
	// instances with one id share the topic, which is safe (answers are
	// matched by intent id) but makes each read the other's answers.
	InstanceID string
	// ReplyTopicIdle: the reply topics of other instances whose newest
	// record (an answer, or a gateway's heartbeat) is older than this are
	// deleted (reap.go). Default DefaultReplyTopicIdle (one hour); negative:
	// never delete.
	ReplyTopicIdle time.Duration
	// ClientID is the Kafka client id, default "toolexec-gateway".
	ClientID string
	// DefaultWait and MaxWait bound Prefer: wait (defaults DefaultWait,
	// MaxWait).
	DefaultWait, MaxWait time.Duration
	// TokenHint is added to the 401 answer of a token that is not known:
	// where a caller finds the right one (the embedded executor says where
	// it keeps its token). Empty: no hint. It is shown to anyone who
	// sends a wrong token, so it must name no secret.
	TokenHint string
	// Logger, default slog.Default().
	Logger *slog.Logger
	// Registerer takes the gateway's metrics; nil: not registered.
	Registerer prometheus.Registerer
	// TracerProvider makes the spans of calls (a request's, its intent's
	// produce); nil: no spans (internal/tracing.FromEnv decides from
	// OTEL_*).
	TracerProvider trace.TracerProvider
	// CallerTrace is what a caller's traceparent (header, or an MCP
	// call's _meta) does: TraceLink (the default) or TraceContinue.
	CallerTrace CallerTrace
}

// CallerTrace says how far the gateway trusts a caller's trace context.
type CallerTrace string

const (
	// TraceLink, the default: each request starts a trace of its own,
	// sampled by the gateway's sampler, with a link to the caller's span;
	// without tracing, the caller's traceparent goes no further. What
	// OpenTelemetry advises for a service whose callers are not trusted,
	// and why it is the default: agents are outside the trust boundary
	// (the trust model in docs/SECURITY.md), and a caller's traceparent
	// would otherwise choose the trace ids the executor, the tools and
	// the metrics' exemplars carry, and the sampled flag that decides
	// what this deployment records and pays to keep.
	TraceLink CallerTrace = "link"
	// TraceContinue: the caller's traceparent is the parent of the
	// gateway's spans (or, without tracing, is passed on as it came), so
	// that the caller's trace goes on through the executor to the tool.
	// For callers inside the trust boundary (a deployment's own
	// services).
	TraceContinue CallerTrace = "continue"
)

func (c *Config) withDefaults() {
	if c.Prefix == "" {
		c.Prefix = topics.DefaultPrefix
	}
	if c.ClientID == "" {
		c.ClientID = "toolexec-gateway"
	}
	if c.DefaultWait == 0 {
		c.DefaultWait = DefaultWait
	}
	if c.MaxWait == 0 {
		c.MaxWait = MaxWait
	}
	if c.ReplyTopicIdle == 0 {
		c.ReplyTopicIdle = DefaultReplyTopicIdle
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.CallerTrace == "" {
		c.CallerTrace = TraceLink
	}
}

// Validate checks a config after defaults.
func (c *Config) Validate() error {
	switch {
	case len(c.Brokers) == 0:
		return fmt.Errorf("%w: Brokers: required", ErrConfig)
	case c.Tenants == nil || c.Tenants.Current() == nil:
		return fmt.Errorf("%w: Tenants: required", ErrConfig)
	case !ValidInstanceID(c.InstanceID):
		return fmt.Errorf("%w: InstanceID %q must match [a-z0-9._-]{1,64}", ErrConfig, c.InstanceID)
	case c.DefaultWait < 0 || c.MaxWait <= 0 || c.DefaultWait > c.MaxWait:
		return fmt.Errorf("%w: want 0 <= DefaultWait (%s) <= MaxWait (%s), MaxWait > 0", ErrConfig, c.DefaultWait, c.MaxWait)
	case c.CallerTrace != TraceLink && c.CallerTrace != TraceContinue:
		return fmt.Errorf("%w: CallerTrace %q: want %q or %q", ErrConfig, c.CallerTrace, TraceLink, TraceContinue)
	}
	return nil
}

// ReplyTopic is the reply topic of the instance id under prefix.
func ReplyTopic(prefix, instanceID string) string { return prefix + "gateway." + instanceID }

// ValidInstanceID reports whether s may name an instance's reply topic:
// [a-z0-9._-]{1,64}.
func ValidInstanceID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// InstanceIDFrom turns a host name (or any text) into an instance id:
// lower case, other characters replaced by '-', at most 64 bytes; "gateway"
// when nothing is left.
func InstanceIDFrom(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if b.Len() >= 64 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	if id := strings.Trim(b.String(), ".-"); id != "" {
		return id
	}
	return "gateway"
}
