package gateway

import (
	"fmt"
	"math"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/atmostonce/toolexec/internal/tokenfile"
)

// Limits are what one tenant's calls (POST .../calls, MCP tools/call and
// compensate) may take of one gateway instance; a caller over a limit is
// told 429 with Retry-After and the limit's name, and nothing is
// produced. Each instance counts on its own: behind N instances a tenant
// may hold N times these.
type Limits struct {
	// ConcurrentCalls (concurrent_calls) bounds the tenant's calls in
	// flight: produced by this instance and not answered yet, whether the
	// caller still waits (Prefer: wait=0 does not free the slot; the
	// executor's answer does, or the tool's pending_ttl passing). It
	// bounds what the tenant queues in the executors. At least 1.
	ConcurrentCalls int
	// CallsPerSecond (calls_per_second) is the sustained rate of the
	// tenant's calls (a token bucket); 0: no rate limit.
	CallsPerSecond float64
	// Burst (burst) is how many calls above the rate a quiet tenant may
	// send at once: the bucket's size. Default max(1, CallsPerSecond).
	Burst int
}

// DefaultLimits are the limits of a tenant when the tenants file sets
// none (default_limits overrides them for the file). Why these: 256 calls
// in flight is a quarter of an executor's queue (executor.Config's
// MaxQueued, 1,024), so one tenant through one gateway cannot fill it,
// and far above what one agent needs (a model issues a few calls at a
// time); 500 calls a second is above what one gateway instance serves of
// a no-op tool on one core (scenario 7 of harness/cmd/bench), so it stops a
// runaway loop, not a busy tenant.
var DefaultLimits = Limits{ConcurrentCalls: 256, CallsPerSecond: 500, Burst: 500}

// Bounds of the values of a limits mapping.
const (
	maxConcurrentCalls = 100_000
	maxCallsPerSecond  = 1_000_000
	maxBurst           = 1_000_000
)

// The names of the limits: the fields of a limits mapping, and what a
// 429's problem body and the refusal metric call them.
const (
	limitConcurrent = "concurrent_calls"
	limitRate       = "calls_per_second"
	limitBurst      = "burst"
	// limitGateway is the instance's own bound on calls in flight, all
	// tenants together (maxCallsInFlight).
	limitGateway = "gateway_calls_in_flight"
)

// partialLimits are the fields one limits mapping sets; nil: not set.
type partialLimits struct {
	concurrent *int
	rate       *float64
	burst      *int
}

// over applies p's fields over base.
func (p partialLimits) over(base Limits) Limits {
	l := base
	if p.concurrent != nil {
		l.ConcurrentCalls = *p.concurrent
	}
	if p.rate != nil {
		l.CallsPerSecond = *p.rate
		if p.burst == nil {
			l.Burst = 0 // the default for the new rate
		}
	}
	if p.burst != nil {
		l.Burst = *p.burst
	}
	if l.Burst == 0 {
		l.Burst = max(1, int(math.Ceil(l.CallsPerSecond)))
	}
	return l
}

// limitsReader reads the tenants file's own fields (tokenfile.Fields):
// default_limits at the top, limits in an entry.
type limitsReader struct {
	defaults partialLimits
	byTenant map[string]partialLimits
}

func (r *limitsReader) Top(_ string, v *yaml.Node) error {
	p, err := parseLimits(v)
	r.defaults = p
	return err
}

func (r *limitsReader) Entry(name, _ string, v *yaml.Node) error {
	p, err := parseLimits(v)
	if r.byTenant == nil {
		r.byTenant = map[string]partialLimits{}
	}
	r.byTenant[name] = p
	return err
}

// resolve is every tenant's limits: its own fields over the file's
// defaults over DefaultLimits.
func (r *limitsReader) resolve() (Limits, map[string]Limits) {
	def := r.defaults.over(DefaultLimits)
	by := make(map[string]Limits, len(r.byTenant))
	for name, p := range r.byTenant {
		by[name] = p.over(def)
	}
	return def, by
}

// parseLimits reads a limits mapping strictly: known fields, each once,
// each a number within its bounds.
func parseLimits(v *yaml.Node) (partialLimits, error) {
	var p partialLimits
	if v.Kind != yaml.MappingNode {
		return p, &tokenfile.NodeError{Node: v, Msg: "must be a mapping of concurrent_calls, calls_per_second, burst"}
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		if seen[k.Value] {
			return p, &tokenfile.NodeError{Node: k, Msg: "duplicate field " + k.Value}
		}
		seen[k.Value] = true
		if err := p.set(k, val); err != nil {
			return p, err
		}
	}
	return p, nil
}

func (p *partialLimits) set(k, v *yaml.Node) error {
	switch k.Value {
	case limitConcurrent:
		n, err := intField(k.Value, v, 1, maxConcurrentCalls)
		p.concurrent = &n
		return err
	case limitRate:
		f, err := rateField(v)
		p.rate = &f
		return err
	case limitBurst:
		n, err := intField(k.Value, v, 1, maxBurst)
		p.burst = &n
		return err
	}
	return &tokenfile.NodeError{Node: k, Msg: fmt.Sprintf("unknown field %q (want concurrent_calls, calls_per_second, burst)", clipField(k.Value))}
}

func intField(name string, v *yaml.Node, lo, hi int) (int, error) {
	n, err := strconv.Atoi(v.Value)
	if v.Kind != yaml.ScalarNode || v.Tag != "!!int" || err != nil || n < lo || n > hi {
		return 0, &tokenfile.NodeError{Node: v, Msg: fmt.Sprintf("%s: want an integer from %d to %d", name, lo, hi)}
	}
	return n, nil
}

func rateField(v *yaml.Node) (float64, error) {
	f, err := strconv.ParseFloat(v.Value, 64)
	if v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!float") || err != nil || !(f >= 0 && f <= maxCallsPerSecond) {
		return 0, &tokenfile.NodeError{Node: v, Msg: fmt.Sprintf("%s: want a number from 0 (no rate limit) to %d", limitRate, maxCallsPerSecond)}
	}
	return f, nil
}

func clipField(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
