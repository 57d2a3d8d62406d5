package tools

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// Spec is one tool's configuration. YAML field names are in parentheses.
// Parse fills unset fields with the defaults below; Registry.Register and
// OpenHTTP fill zero Timeout, PendingTTL, Retention, MaxInFlight and
// MaxArgsBytes, but take Retries as given, since zero retries is a
// meaningful choice there.
type Spec struct {
	// Name (name) is required and matches [a-z0-9._-]{1,128}.
	Name string
	// Class (class) is required.
	Class Class
	// URL (url) is the http(s) endpoint the tool is POSTed to. Required by
	// FromConfig unless an in-process tool of the same name is given.
	URL string
	// Timeout (timeout) bounds each attempt. Default 5s; must be > 0.
	Timeout time.Duration
	// PendingTTL (pending_ttl) is how long a pending dedup record lives.
	// Default 2m; must be > Timeout. Invoke never outlives it.
	PendingTTL time.Duration
	// Retention (retention) is how long a finished dedup record is kept.
	// Default 24h; must be >= PendingTTL.
	Retention time.Duration
	// ProbeURL (probe_url) is the status endpoint; required for class
	// Probe and refused for any other class.
	ProbeURL string
	// ProbeFence (probe_fence) says the tool implements the probe fence
	// (docs/wire-format.md, "The probe contract"): a probe that finds no
	// record of a key fences it, and the tool refuses the key from then on.
	// Only then is "no record" proof that the call never acts; without it
	// a request delayed past the probe can still act (the residual risk
	// GET /v1/tools states). Class Probe only.
	ProbeFence bool
	// CompensateWith (compensate_with) names the tool that undoes this one;
	// required for class Compensatable and refused for any other class. In
	// a config it must name another tool of the same config.
	CompensateWith string
	// MaxInFlight (max_in_flight) bounds concurrent HTTP invocations of the
	// tool. Default 64, 1..10000. In-process tools bound themselves.
	MaxInFlight int
	// Retries (retries) bounds the retries of attempts that never reached
	// the tool and, for NativeKey, of ambiguous outcomes. Default 3, 0..20.
	Retries int
	// MaxArgsBytes (max_args_bytes) bounds the canonical arguments of a
	// call (msgpack, sorted keys: about the size of compact JSON or less),
	// checked once, before the call is started (saga.Decide): an intent
	// over it is rejected "oversized" and never started. Default 65536,
	// 1..262144 (a key's record, with its arguments, must fit one event).
	MaxArgsBytes int
	// Auth (headers, tls) is how the adapter authenticates to the tool and
	// its probe; nil for none. A pointer so that Spec stays comparable.
	Auth *Auth

	// Description (description) tells agents what the tool does: the
	// gateway lists it (GET /v1/tools, MCP tools/list). At most 4096 bytes.
	Description string
	// InputSchema (input_schema) is a JSON Schema of the arguments, a YAML
	// mapping in the file, kept as JSON. nil means DefaultInputSchema (any
	// object). Its root must be {"type": "object", ...}. The gateway
	// validates arguments against it before producing an intent; Kafka
	// producers are trusted and not checked (docs/SECURITY.md).
	InputSchema json.RawMessage
	// Tenants (tenants) is the allow-list of tenants the gateway lets call
	// the tool; nil lets every tenant call it. To any other tenant the tool
	// does not exist (404, absent from the lists).
	Tenants []string

	// Approval (approval) is ApprovalRequired ("required") for a tool no
	// intent may call without a person's approval: the first intent of a
	// key waits (awaiting_approval) until an operator approves the key
	// with the arguments it recorded, denies it, or ApprovalTTL passes
	// (docs/DESIGN.md, "Approval"). "" or "none": no approval. Not for
	// class read_only, which keeps no record to wait on.
	Approval Approval
	// ApprovalTTL (approval_ttl) is how long a request for approval waits
	// before it lapses (the key ends not_executed). Default 24h, only with
	// approval: required.
	ApprovalTTL time.Duration
	// Approvers (approvers) may approve or deny this tool's calls:
	// operator names of the console's operators file, and its groups as
	// "group:<name>"; nil lets every operator. At most 32. Only with
	// approval: required. Enforced where people are authenticated (the
	// console and its API); a command on the control topic is trusted as
	// any operator command is (docs/SECURITY.md).
	Approvers []string
}

// Approval says whether a tool's calls need a person's approval.
type Approval string

const (
	ApprovalNone     Approval = ""
	ApprovalRequired Approval = "required"
)

// NeedsApproval reports whether the tool's calls wait for a person's
// approval.
func (s Spec) NeedsApproval() bool { return s.Approval == ApprovalRequired }

// ApprovalWindow is how long a request for approval of this tool waits:
// ApprovalTTL, its default when unset, and 0 when the tool needs none.
func (s Spec) ApprovalWindow() time.Duration {
	switch {
	case !s.NeedsApproval():
		return 0
	case s.ApprovalTTL > 0:
		return s.ApprovalTTL
	}
	return DefaultApprovalTTL
}

// ApproversText is Approvers as the event log and answers name them: the
// entries joined with ", " ("" for any operator).
func (s Spec) ApproversText() string { return strings.Join(s.Approvers, ", ") }

// MayApprove reports whether an operator with name and groups may approve
// or deny this tool's calls.
func (s Spec) MayApprove(name string, groups []string) bool {
	if len(s.Approvers) == 0 {
		return true
	}
	for _, a := range s.Approvers {
		if g, ok := strings.CutPrefix(a, ApproverGroupPrefix); ok && slices.Contains(groups, g) || a == name {
			return true
		}
	}
	return false
}

// ApproverGroupPrefix marks an approver entry that names a group of the
// operators file.
const ApproverGroupPrefix = "group:"

// Schema returns the tool's input schema, DefaultInputSchema when none is
// configured.
func (s Spec) Schema() json.RawMessage {
	if len(s.InputSchema) == 0 {
		return DefaultInputSchema
	}
	return s.InputSchema
}

// Allows reports whether tenant may call the tool through the gateway.
func (s Spec) Allows(tenant string) bool {
	if s.Tenants == nil {
		return true
	}
	for _, t := range s.Tenants {
		if t == tenant {
			return true
		}
	}
	return false
}

// Auth holds a tool's credentials as written in the config.
type Auth struct {
	// Headers (headers) are extra request headers of every call and probe:
	// values may hold ${env:NAME} and ${file:PATH} references (package
	// internal/secretref), expanded when the adapter is built (FromConfig,
	// OpenHTTP). Every value is treated as a secret: it is redacted from
	// outcome messages and results. The headers the adapter sets itself
	// (Idempotency-Key, X-Tool-*, traceparent, tracestate, Content-Type, Accept) and
	// hop-by-hop ones cannot be set here. At most 32.
	Headers map[string]string
	// TLS (tls) holds PEM files for HTTPS to the tool and its probe: ca
	// (the CAs to trust instead of the system's) and cert with key (a
	// client certificate, mTLS). Read when the adapter is built.
	TLS TLSFiles
}

// auth returns s.Auth, or an empty one.
func (s Spec) auth() Auth {
	if s.Auth == nil {
		return Auth{}
	}
	return *s.Auth
}

// TLSFiles are the PEM files of a tool's TLS settings.
type TLSFiles struct {
	CA   string // ca
	Cert string // cert
	Key  string // key
}

// IsZero reports whether no TLS file is set.
func (t TLSFiles) IsZero() bool { return t == TLSFiles{} }

// Defaults applied to unset Spec fields.
const (
	DefaultTimeout      = 5 * time.Second
	DefaultPendingTTL   = 2 * time.Minute
	DefaultRetention    = 24 * time.Hour
	DefaultMaxInFlight  = 64
	DefaultRetries      = 3
	DefaultMaxArgsBytes = 64 << 10
	DefaultApprovalTTL  = 24 * time.Hour
)

// Limits enforced by validation.
const (
	maxNameLen       = 128
	maxURLBytes      = 2048
	maxInFlightLimit = 10000
	maxRetriesLimit  = 20
	// maxDescriptionBytes keeps a tool list (sent to a model on every
	// turn by MCP hosts) readable; longer prose belongs in the schema's
	// own descriptions.
	maxDescriptionBytes = 4096
	// maxToolTenants bounds an allow-list: it is scanned on every request.
	maxToolTenants = 1000
	// maxApprovers bounds approvers: the list is recorded with every
	// request for approval, joined (wire.MaxApproversBytes).
	maxApprovers = 32
	// maxApprovalTTL: a request older than this is surely forgotten by
	// the agent that made it.
	maxApprovalTTL = 90 * 24 * time.Hour
)

// defaultSpec is the starting point for a spec decoded from YAML: fields
// the file leaves out keep these values.
func defaultSpec() Spec {
	return Spec{
		Timeout:      DefaultTimeout,
		PendingTTL:   DefaultPendingTTL,
		Retention:    DefaultRetention,
		MaxInFlight:  DefaultMaxInFlight,
		Retries:      DefaultRetries,
		MaxArgsBytes: DefaultMaxArgsBytes,
	}
}

// withDefaults fills the zero fields of a spec built in Go. Retries is left
// alone: zero is a valid value for it.
func (s Spec) withDefaults() Spec {
	d := defaultSpec()
	s.Timeout = orDefault(s.Timeout, d.Timeout)
	s.PendingTTL = orDefault(s.PendingTTL, d.PendingTTL)
	s.Retention = orDefault(s.Retention, d.Retention)
	s.MaxInFlight = orDefault(s.MaxInFlight, d.MaxInFlight)
	s.MaxArgsBytes = orDefault(s.MaxArgsBytes, d.MaxArgsBytes)
	if s.NeedsApproval() {
		s.ApprovalTTL = orDefault(s.ApprovalTTL, DefaultApprovalTTL)
	}
	return s
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// validName reports whether name matches [a-z0-9._-]{1,128}.
func validName(name string) bool {
	if len(name) == 0 || len(name) > maxNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !nameByte(name[i]) {
			return false
		}
	}
	return true
}

func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// ResidualRisk says what the at-most-once promise leaves open for this
// tool, "" when nothing beyond the promise's own window: a probe tool
// that does not fence (ProbeFence) may act on a request delayed past a
// probe that found no record, after its key was settled not_executed.
// GET /v1/tools shows it to callers.
func (s Spec) ResidualRisk() string {
	if s.Class.NeedsProbeURL() && !s.ProbeFence {
		return "the tool does not fence probed keys (probe_fence): a probe that finds no record settles the key not_executed, " +
			"and a request of the call delayed past that probe can still act; a later call with the same key then acts again"
	}
	return ""
}
