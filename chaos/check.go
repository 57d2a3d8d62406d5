package chaos

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/topics"
)

// Report is the run's verdict; its JSON is the last line of the output.
type Report struct {
	Seconds          float64        `json:"seconds"`
	Seed             uint64         `json:"seed"`
	Intents          int            `json:"intents"`
	Keys             int            `json:"keys"`
	Faults           map[string]int `json:"faults"`
	FaultDetail      map[string]int `json:"fault_detail"`
	EffectsMaxPerKey int            `json:"effects_max_per_key"`
	DuplicateEffects int            `json:"duplicate_effects"`
	LostIntents      int            `json:"lost_intents"`
	LostByTool       map[string]int `json:"lost_by_tool"`
	Unanswered       int            `json:"unanswered"`
	InDoubt          int            `json:"in_doubt"`
	Settled          int            `json:"settled"`
	SettledBy        map[string]int `json:"settled_by"`
	Escalated        int            `json:"escalated"`
	EscalatedIntents int            `json:"escalated_intents"`
	EscalatedKeys    []string       `json:"escalated_keys"` // the first 20, sorted
	ProduceFailed    int            `json:"produce_failed"`
	Answers          int            `json:"answers"`
	Statuses         map[string]int `json:"statuses"`
	Load             map[string]int `json:"load"`
	ExecutorExits    int            `json:"executor_exits"`
	ReconcilerExits  int            `json:"reconciler_exits"`
	LedgerCalls      int            `json:"ledger_calls"`
	LedgerEffects    int            `json:"ledger_effects"`
	LedgerDrops      int            `json:"ledger_drops"`
	Violations       []string       `json:"violations"`
	kinds            map[string]int // violations by kind
}

// maxPerKind bounds the violations listed per kind (the word before the
// colon), so one frequent kind does not hide the others; the rest are
// counted.
const maxPerKind = 10

func (r *Report) violate(format string, a ...any) {
	v := fmt.Sprintf(format, a...)
	kind, _, _ := strings.Cut(v, ":")
	if r.kinds == nil {
		r.kinds = map[string]int{}
	}
	if r.kinds[kind]++; r.kinds[kind] > maxPerKind {
		return
	}
	r.Violations = append(r.Violations, v)
}

// checkInput is everything the verdict is computed from.
type checkInput struct {
	intents   map[string]intentRec
	ledger    LedgerStats
	hist      map[string]*keyHistory // by routing key
	escalated map[string]bool        // routing keys the reconciler escalated
	stuck     []string               // events partitions whose open transaction never ended
}

// check computes the verdict. Pure.
func check(in checkInput, r *Report) {
	r.SettledBy, r.Statuses, r.LostByTool = map[string]int{}, map[string]int{}, map[string]int{}
	for _, s := range in.stuck {
		r.violate("hanging_transaction: %s (the log was read up to its last stable offset)", s)
	}
	checkLedger(in, r)
	checkIntents(in, r)
	checkKeys(in, r)
	r.Escalated = len(in.escalated)
	r.EscalatedKeys = slices.Sorted(maps.Keys(in.escalated))
	if len(r.EscalatedKeys) > 20 {
		r.EscalatedKeys = r.EscalatedKeys[:20]
	}
	for _, kind := range slices.Sorted(maps.Keys(r.kinds)) {
		if n := r.kinds[kind]; n > maxPerKind {
			r.Violations = append(r.Violations, fmt.Sprintf("%s: %d in all, %d listed", kind, n, maxPerKind))
		}
	}
	if r.Violations == nil {
		r.Violations = []string{}
	}
}

// checkLedger: at most one effect per downstream key, and no effect
// without a committed started event (the fence).
func checkLedger(in checkInput, r *Report) {
	r.LedgerCalls, r.LedgerEffects, r.LedgerDrops = in.ledger.Calls, in.ledger.Effects, in.ledger.Drops
	for dk, k := range in.ledger.Keys {
		r.EffectsMaxPerKey = max(r.EffectsMaxPerKey, k.Effects)
		rk := topics.RoutingKey(k.Tenant, k.Key)
		if k.Effects > 1 {
			r.DuplicateEffects += k.Effects - 1
			r.violate("duplicate_effect: %s %s downstream key %s: %d effects, %d requests", k.Path, rk, dk, k.Effects, k.Calls)
		}
		h := in.hist[rk]
		switch {
		case k.Effects == 0:
		case h == nil:
			r.violate("effect_without_record: %s %s: effect at the tool, no event in the log", k.Path, rk)
		case k.Path == "/undo" && h.CompStarted == 0:
			r.violate("compensation_without_started: %s: undo performed, no compensation_started in the log", rk)
		case k.Path != "/undo" && h.Started == 0:
			r.violate("effect_without_started: %s %s: effect at the tool, no started event in the log", k.Path, rk)
		}
	}
}

// checkIntents: every produced intent has exactly one terminal answer, or
// its key is escalated.
func checkIntents(in checkInput, r *Report) {
	keys := map[string]bool{}
	for _, it := range in.intents {
		if !it.Produced {
			r.ProduceFailed++
			continue
		}
		r.Intents++
		rk := topics.RoutingKey(it.Tenant, it.Key)
		keys[rk] = true
		for _, s := range it.Terminal {
			r.Statuses[s]++
		}
		switch n := len(it.Terminal); {
		case n == 1:
		case n > 1:
			r.violate("multiple_terminal_answers: intent %s of %s (%s): %v", it.ID, rk, it.Tool, it.Terminal)
		case in.escalated[rk]:
			r.EscalatedIntents++
		case it.Pending > 0:
			r.Unanswered++
			r.violate("unanswered: intent %s of %s (%s): %d pending answers, no terminal one, key not escalated", it.ID, rk, it.Tool, it.Pending)
		default:
			r.LostIntents++
			r.LostByTool[it.Tool]++
			k := in.ledger.Keys[tools.DownstreamKey(it.Tenant, it.Tool, it.Key)]
			r.violate("lost_intent: intent %s of %s (%s, %s): no answer at all; the tool saw %d requests for the key", it.ID, rk, it.Tool, it.Type, k.Calls)
		}
	}
	r.Keys = len(keys)
}

// checkKeys: every key that was in doubt was settled by its class's path
// (or, irreversible, escalated), and what the log says agrees with the
// ledger.
func checkKeys(in checkInput, r *Report) {
	rks := make([]string, 0, len(in.hist))
	for rk := range in.hist {
		rks = append(rks, rk)
	}
	sort.Strings(rks)
	for _, rk := range rks {
		h := in.hist[rk]
		if h.Started == 0 {
			continue
		}
		tenant, key, _ := topics.SplitRoutingKey(rk)
		checkAgainstLedger(in, r, rk, h, in.ledger.Keys[tools.DownstreamKey(tenant, h.Tool, key)])
		checkInDoubt(in, r, rk, h)
	}
}

func checkAgainstLedger(_ checkInput, r *Report, rk string, h *keyHistory, k keyLedger) {
	if h.Tool == ToolRead {
		return
	}
	switch h.LastStatus {
	case saga.StatusNotExecuted:
		if k.Effects > 0 {
			r.violate("effect_recorded_not_executed: %s (%s): the tool performed the effect, the log says not_executed", rk, h.Tool)
		}
	case saga.StatusSucceeded:
		if k.Effects == 0 {
			r.violate("succeeded_without_effect: %s (%s): the log says succeeded, the tool never performed it", rk, h.Tool)
		}
	}
}

func checkInDoubt(in checkInput, r *Report, rk string, h *keyHistory) {
	resolvedByRec := h.ResolvedBy["reconciler"]
	wasInDoubt := h.Unknown > 0 || len(h.ResolvedBy) > 0 || h.CompInDoubt > 0 || h.LastStatus.InDoubt()
	if !wasInDoubt {
		return
	}
	r.InDoubt++
	final := h.LastStatus
	settled := final.Settled() || final == saga.StatusNotExecuted
	class := classOf[h.Tool]
	switch {
	case !settled && in.escalated[rk]:
		return // counted as escalated
	case !settled:
		r.violate("unsettled: %s (%s, %s) still %s, not escalated", rk, h.Tool, class, final)
		return
	}
	r.Settled++
	path := "other"
	switch {
	case h.CompInDoubt > 0:
		path = "compensate"
	case h.Unknown == 0 && h.ResolvedComp > 0 && h.ResolvedComp == len(h.ResolvedSt):
		path = "compensation_resolve"
		class = "compensation" // the doubt was the compensation's: its tool's path
	case resolvedByRec > 0 && class == "native_key":
		path = "retry"
	case resolvedByRec > 0 && class == "probe":
		path = "probe"
	case resolvedByRec > 0:
		path = "resolve"
	}
	r.SettledBy[class+":"+path]++
	want := map[string]string{"native_key": "retry", "probe": "probe", "compensatable": "compensate", "compensation": "compensation_resolve"}[class]
	if want != "" && path != want {
		r.violate("wrong_path: %s (%s) was in doubt and settled by %s (final %s), its class settles by %s", rk, class, path, final, want)
	}
	if class == "irreversible" {
		r.violate("irreversible_settled: %s was in doubt and settled %s by %v, not by an operator", rk, final, h.ResolvedBy)
	}
}
