package wire

import "regexp"

// Version is the wire contract version this build reads and writes.
const Version = 1

// Intent types. Resolve, approve and deny are accepted only on the
// control topic. A lookup asks what a key's record says now (its outcome,
// running, in doubt, awaiting approval, or no record) and changes nothing:
// the gateway's GET of a key. Approve and deny decide a key's request for
// a person's approval (a tool with approval: required): approve starts
// its call with the arguments its first intent recorded, deny ends it
// failed.
const (
	TypeCall       = "call"
	TypeCompensate = "compensate"
	TypeResolve    = "resolve"
	TypeLookup     = "lookup"
	TypeApprove    = "approve"
	TypeDeny       = "deny"
)

// Operator reports whether typ is a command only the control topic takes.
func Operator(typ string) bool { return typ == TypeResolve || typ == TypeApprove || typ == TypeDeny }

// Bounds of wire contract v1. They protect the executor's memory and the
// event log from one oversized message.
const (
	MaxKeyBytes     = 256
	MaxIDBytes      = 128
	MaxToolBytes    = 128
	MaxReplyToBytes = 249 // Kafka's own topic-name limit
	MaxMessageBytes = 1 << 20
	DefaultTenant   = "default"
)

var tenantRE = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

// ValidTenant reports whether t matches [a-z0-9_-]{1,64}.
func ValidTenant(t string) bool { return tenantRE.MatchString(t) }

// Scope is audit context: which agent run and thread emitted the intent.
type Scope struct {
	RunID    string `msgpack:"run_id,omitempty"`
	ThreadID string `msgpack:"thread_id,omitempty"`
}

// Intent is what an agent (on Intents) or an operator or the reconciler (on
// Control) sends. Fields follow docs/wire-format.md; unknown fields are
// ignored when decoding.
type Intent struct {
	V          int            `msgpack:"v"`
	Type       string         `msgpack:"type"`
	ID         string         `msgpack:"id"`
	Tenant     string         `msgpack:"tenant,omitempty"`
	Key        string         `msgpack:"key"`
	Tool       string         `msgpack:"tool,omitempty"`
	Args       map[string]any `msgpack:"args,omitempty"`
	ReplyTo    string         `msgpack:"reply_to,omitempty"`
	DeadlineMs int64          `msgpack:"deadline_ms,omitempty"`
	Scope      *Scope         `msgpack:"scope,omitempty"`

	// Resolve only: the settled outcome, and who settled it (By and
	// Reason, required, also approve and deny: who decided and why).
	Outcome string     `msgpack:"outcome,omitempty"`
	Result  any        `msgpack:"result,omitempty"`
	Error   *ErrorInfo `msgpack:"error,omitempty"`
	By      string     `msgpack:"by,omitempty"`
	Reason  string     `msgpack:"reason,omitempty"`

	// CallID (resolve, compensate) makes the command conditional: it
	// applies only while that call (for a resolve of a compensation in
	// doubt: that compensation) is the key's current one and in doubt,
	// and is rejected (invalid_command) otherwise. The reconciler sets it.
	// On approve and deny: the intent whose request is decided.
	CallID string `msgpack:"call_id,omitempty"`
	// DownstreamKey (resolve only, with CallID) makes the resolve a
	// member's fact about one attempt of the call: the one started under
	// this downstream key. It applies only while that attempt is the key's
	// call (or compensation) in doubt, and before the call's pending_ttl
	// too: the member that started it vouches that the attempt ended (it
	// got this outcome) or was never sent. Executors send these
	// (executor/facts.go); docs/wire-format.md.
	DownstreamKey string `msgpack:"downstream_key,omitempty"`
	// ArgsDigest (approve, deny) is the lower-case hex SHA-256 of the
	// canonical arguments the person decided on (ArgsHash); a command whose
	// digest is not the request's is refused. Empty: whatever the request
	// recorded (an approval never covers other arguments either way).
	ArgsDigest string `msgpack:"args_digest,omitempty"`

	// Force (resolve, compensate; the control topic only): settle or undo
	// a call that may still reach its tool, before its pending_ttl has
	// passed. Recorded in the event log (forced). Refused on Intents: an
	// agent never forces.
	Force bool `msgpack:"force,omitempty"`
}

// RoutingKey is the intent's Kafka key.
func (in *Intent) RoutingKey() string { return RoutingKey(in.Tenant, in.Key) }
