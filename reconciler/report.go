package reconciler

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/atmostonce/toolexec/internal/httpserve"
	"github.com/atmostonce/toolexec/wire"
)

// Row is one key in doubt as an operator sees it (reconciler pending, and
// the /pending endpoint as JSON).
type Row struct {
	Tenant string `json:"tenant"`
	Key    string `json:"key"`
	Tool   string `json:"tool"`
	Class  string `json:"class,omitempty"`
	Phase  string `json:"phase"`  // call or compensation
	Status string `json:"status"` // the saga status of the key
	CallID string `json:"call_id"`
	// DownstreamKey is the Idempotency-Key the tool saw for this call (or
	// compensation): what to look for in the tool's own records.
	DownstreamKey string `json:"downstream_key,omitempty"`
	CalledAt      int64  `json:"called_at"` // unix ms the call (compensation) started
	Deadline      int64  `json:"deadline"`  // unix ms it became the reconciler's
	Waiters       int    `json:"waiters"`   // intents waiting for the final answer
	// State: within_ttl (an executor call may still run), retry, probe,
	// compensate (being investigated so), command_sent, escalated.
	State    string `json:"state"`
	Attempts int    `json:"attempts"`
	NextAt   int64  `json:"next_at,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Command  string `json:"command,omitempty"` // the command sent: "<type> <outcome> <id>"
	// Investigated is true when the state comes from a running reconciler,
	// false when it is what its policy would do (it was not reachable).
	Investigated bool `json:"investigated"`
}

// RoutingKey is the row's key as on the wire.
func (w *Row) RoutingKey() string { return wire.RoutingKey(w.Tenant, w.Key) }

// rowOf describes subj and what is known of its investigation. Pure.
func rowOf(now int64, subj Subject, inv *Investigation) Row {
	w := Row{Tenant: subj.Tenant, Key: subj.Key, Tool: subj.Tool, Class: string(subj.Class), Phase: subj.Phase.String(),
		Status: subj.Status.String(), CallID: subj.CallID, DownstreamKey: subj.DownstreamKey, CalledAt: subj.CalledAt, Deadline: subj.Deadline, Waiters: subj.Waiters}
	if now < subj.Deadline {
		w.State = "within_ttl"
		return w
	}
	w.State = stateOf(subj, inv)
	if inv != nil && inv.matches(subj) {
		w.Attempts, w.NextAt, w.Reason = inv.Attempts, inv.NextAt, inv.Reason
		if inv.Sent != nil {
			w.Command = fmt.Sprintf("%s %s %s", inv.Sent.Type, inv.Sent.Outcome, inv.Sent.ID)
		}
	}
	return w
}

func stateOf(subj Subject, inv *Investigation) string {
	switch {
	case inv != nil && inv.matches(subj) && inv.Escalated:
		return "escalated"
	case inv != nil && inv.matches(subj) && inv.Sent != nil:
		return "command_sent"
	}
	switch step := byClass(0, subj, Investigation{}, Policy{}); step.Kind {
	case StepEscalate:
		return "escalated"
	default:
		return step.Kind.String()
	}
}

// Merge completes rows read from the log with what a running reconciler
// reported for the same subjects (state, attempts, the command sent). Rows
// are sorted oldest first.
func Merge(fromLog, fromReconciler []Row) []Row {
	seen := make(map[string]Row, len(fromReconciler))
	for _, w := range fromReconciler {
		seen[w.RoutingKey()+"\x00"+w.CallID] = w
	}
	out := slices.Clone(fromLog)
	for i := range out {
		w, ok := seen[out[i].RoutingKey()+"\x00"+out[i].CallID]
		if !ok {
			continue
		}
		out[i].State, out[i].Attempts, out[i].NextAt, out[i].Reason, out[i].Command = w.State, w.Attempts, w.NextAt, w.Reason, w.Command
		out[i].Investigated = true
		if out[i].Class == "" {
			out[i].Class = w.Class
		}
	}
	sortRows(out)
	return out
}

func sortRows(rows []Row) {
	slices.SortFunc(rows, func(a, b Row) int {
		return cmp.Or(cmp.Compare(a.CalledAt, b.CalledAt), cmp.Compare(a.RoutingKey(), b.RoutingKey()))
	})
}

// Handler serves /healthz, /readyz and, when reg is not nil, /metrics
// from reg. Callers may add routes to it: the operator console, which
// serves /pending (WritePending) behind its sign-in.
func (r *Reconciler) Handler(reg *prometheus.Registry) *http.ServeMux {
	return httpserve.Health(reg, r.Ready)
}

// WritePending answers /pending: rows (a scan's, Rows) as JSON, oldest
// call first, in the form FetchRows reads. They list every tenant's keys
// in doubt and their downstream keys: the console serves them to
// operators only.
func WritePending(w http.ResponseWriter, rows []Row) {
	sortRows(rows)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"rows": rows})
}
