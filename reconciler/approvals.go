package reconciler

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/atmostonce/toolexec/internal/msgpack/mpread"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/state"
	"github.com/atmostonce/toolexec/wire/jsonview"
)

// Approvals: every scan also walks the approval index of each owned,
// caught-up partition (the keys awaiting a person's approval; the view's
// fold keeps it, state/approvals.go), publishes how many wait per tool and
// how long the oldest has, and keeps the rows the console lists. The
// reconciler decides nothing about them: a person does, through the
// console, its API or `reconciler approve|deny`, each a command on the
// control topic. A request that lapses is ended by the executor's sweep.

// MaxApprovalRows bounds the rows a scan keeps for the console (each holds
// its arguments). The gauges count every key awaiting approval.
const MaxApprovalRows = 1000

// ApprovalRow is one key awaiting approval, as an operator decides on it.
type ApprovalRow struct {
	Tenant string `json:"tenant"`
	Key    string `json:"key"`
	Tool   string `json:"tool"`
	// CallID is the intent whose request this is; ArgsDigest the hex
	// SHA-256 of its canonical arguments. A decision names both, so that
	// it applies to this request with these arguments only.
	CallID     string `json:"call_id"`
	ArgsDigest string `json:"args_digest"`
	// Args are the arguments as the tool will receive them.
	Args        any    `json:"args"`
	RequestedAt int64  `json:"requested_at"` // unix ms
	Until       int64  `json:"until"`        // the request lapses then
	Approvers   string `json:"approvers,omitempty"`
	Waiters     int    `json:"waiters"` // intents waiting besides the one that asked
}

// RowOfRequest describes rec, a key awaiting approval. Pure.
func RowOfRequest(rec *saga.Record) ApprovalRow {
	w := ApprovalRow{Tenant: rec.Tenant, Key: rec.Key, Tool: rec.Tool, CallID: rec.Origin.IntentID,
		ArgsDigest: hex.EncodeToString(rec.ArgsHash), Args: argsValue(rec.Args), Waiters: len(rec.Waiters)}
	if ap := rec.Approval; ap != nil {
		w.RequestedAt, w.Until, w.Approvers = ap.RequestedAt, ap.Until, ap.Approvers
	}
	return w
}

// argsValue is canonical msgpack arguments as a JSON-able value.
func argsValue(b []byte) any {
	var v any
	if len(b) == 0 || mpread.Unmarshal(b, &v) != nil {
		return map[string]any{}
	}
	return jsonview.Value(v)
}

// approvalGauges is one scan's count of keys awaiting approval.
type approvalGauges struct {
	waiting map[string]int   // by tool
	oldest  map[string]int64 // by tool: ms since the oldest request
}

func newApprovalGauges() *approvalGauges {
	return &approvalGauges{waiting: map[string]int{}, oldest: map[string]int64{}}
}

// scanApprovals walks p's approval index: every key is counted, the
// first MaxApprovalRows (over the whole scan) become rows.
func (r *Reconciler) scanApprovals(now int64, p int32, g *approvalGauges, rows *[]ApprovalRow) error {
	after := state.Awaiting{}
	for {
		page, err := r.store.AwaitingAfter(p, after.Tenant, after.Key, walkPage)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrFatal, err)
		}
		for _, a := range page {
			g.waiting[a.Tool]++
			g.oldest[a.Tool] = max(g.oldest[a.Tool], now-a.RequestedAt)
			if len(*rows) < MaxApprovalRows {
				if err := r.approvalRow(a, rows); err != nil {
					return err
				}
			}
		}
		if len(page) < walkPage {
			return nil
		}
		after = page[len(page)-1]
	}
}

func (r *Reconciler) approvalRow(a state.Awaiting, rows *[]ApprovalRow) error {
	rec, err := r.store.Get(a.Tenant, a.Key)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrFatal, err)
	}
	if rec != nil && rec.Status == saga.StatusAwaitingApproval {
		*rows = append(*rows, RowOfRequest(rec))
	}
	return nil
}

// Approvals returns the keys awaiting approval as of the last scan, in
// the partitions it covered, oldest first (at most MaxApprovalRows).
func (r *Reconciler) Approvals() []ApprovalRow {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.mu.approvals)
}

func sortApprovals(rows []ApprovalRow) {
	slices.SortFunc(rows, func(a, b ApprovalRow) int {
		return cmp.Or(cmp.Compare(a.RequestedAt, b.RequestedAt), cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Key, b.Key))
	})
}

// approvalMetrics are the gauges of keys awaiting approval.
type approvalMetrics struct {
	waiting *prometheus.GaugeVec // by tool
	oldest  *prometheus.GaugeVec // by tool, seconds
}

func newApprovalMetrics(reg prometheus.Registerer, opts func(name, help string) prometheus.Opts) approvalMetrics {
	m := approvalMetrics{
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts(opts("awaiting_approval",
			"Keys awaiting a person's approval (nothing ran for them yet), by tool.")), []string{"tool"}),
		oldest: prometheus.NewGaugeVec(prometheus.GaugeOpts(opts("awaiting_approval_oldest_age_seconds",
			"Age of the oldest key awaiting approval, by tool; absent when none.")), []string{"tool"}),
	}
	if reg != nil {
		reg.MustRegister(m.waiting, m.oldest)
	}
	return m
}

// publish replaces the gauges with g: a tool with no key waiting any more
// drops out rather than keep its last value.
func (m approvalMetrics) publish(g *approvalGauges) {
	m.waiting.Reset()
	m.oldest.Reset()
	for tool, n := range g.waiting {
		m.waiting.WithLabelValues(tool).Set(float64(n))
		m.oldest.WithLabelValues(tool).Set(float64(g.oldest[tool]) / 1000)
	}
}
