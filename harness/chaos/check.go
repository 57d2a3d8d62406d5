package chaos

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/wire"
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
	// EscalatedKnown counts the calls escalated to a person although a
	// member knew their answer (facts.go); each is a violation.
	EscalatedKnown int `json:"escalated_known"`
	// EscalatedAfterResend counts the escalated calls a member's
	// not_executed fact named but the reconciler had resent since
	// (checkKnownEscalations): not violations.
	EscalatedAfterResend int      `json:"escalated_after_resend,omitempty"`
	EscalatedKeys        []string `json:"escalated_keys"` // the first 20, sorted
	// Undecided counts the intents left unanswered, and UndecidedKeys the
	// keys left in doubt, on partitions the run made undecidable on
	// purpose (a log start moved past every snapshot round: the executor
	// must refuse them, docs/DESIGN.md "Gaps"); only the simulation sets
	// them.
	Undecided     int `json:"undecided,omitempty"`
	UndecidedKeys int `json:"undecided_keys,omitempty"`
	// LateLandings counts undos that came before an effect whose request
	// had reached the tool before its call's deadline, the tool acting
	// after it (the documented limit, not a violation).
	LateLandings    int            `json:"late_landings,omitempty"`
	ProduceFailed   int            `json:"produce_failed"`
	Answers         int            `json:"answers"`
	Statuses        map[string]int `json:"statuses"`
	Load            map[string]int `json:"load"`
	ExecutorExits   int            `json:"executor_exits"`
	ReconcilerExits int            `json:"reconciler_exits"`
	LedgerCalls     int            `json:"ledger_calls"`
	LedgerEffects   int            `json:"ledger_effects"`
	LedgerDrops     int            `json:"ledger_drops"`
	// LedgerFenced counts downstream keys a probe fenced (the probe tool
	// never saw them), LedgerRefused the requests refused for a fence:
	// each one a late request that would have acted after its key was
	// settled not_executed.
	LedgerFenced  int `json:"ledger_fenced"`
	LedgerRefused int `json:"ledger_refused"`
	// Hostile counts the hostile records sent, by poison kind;
	// HostileDeadLetters those without a readable id found dead-lettered.
	Hostile             map[string]int `json:"hostile"`
	HostileDeadLetters  int            `json:"hostile_dead_letters"`
	AbortedTransactions int            `json:"aborted_transactions"`
	AbortedBound        int            `json:"aborted_bound"`
	// DoubleAnswers counts the intents with more than one terminal answer
	// (each also a multiple_terminal_answers violation).
	DoubleAnswers int `json:"double_answers"`
	// LeaderElections and ISRShrinks are what the harness saw in the
	// metadata of the run's topics and of the transaction and offsets
	// logs, polled every second (a floor: a change undone between two
	// looks is missed).
	LeaderElections int `json:"leader_elections"`
	ISRShrinks      int `json:"isr_shrinks"`
	// CommitsUnconfirmed counts the ticks whose reported commit the
	// commit confirmation could not confirm (markers not seen in time, or
	// aborted); CommitsAbortedAfterSuccess those the broker aborted after
	// EndTxn reported them committed. Their calls were not made.
	CommitsUnconfirmed         int `json:"commits_unconfirmed"`
	CommitsAbortedAfterSuccess int `json:"commits_aborted_after_success"`
	// AbortedBehindOffsets counts the failed ends whose offsets the group
	// showed committed while their records were aborted; their inputs
	// were decided again.
	AbortedBehindOffsets int `json:"aborted_behind_offsets"`
	// FactsKept and FactsDelivered are the executors' facts: outcomes and
	// unsent calls they could not record, delivered to the keys' owners.
	FactsKept      int `json:"facts_kept"`
	FactsDelivered int `json:"facts_delivered"`
	// Approver counts what the run's approver sent (approve, deny, twice,
	// forged, left_to_lapse); Approvals what the log says became of the
	// requests (requested, approved, denied, lapsed); CallsWithoutApproval
	// the calls of ToolApproval started without an approved event of
	// their request and digest (each a violation).
	Approver             map[string]int `json:"approver"`
	Approvals            map[string]int `json:"approvals"`
	CallsWithoutApproval int            `json:"calls_without_approval"`
	Violations           []string       `json:"violations"`
	kinds                map[string]int // violations by kind
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
	// undecided says whether an intent (tenant and id; "" for a key's
	// record) of a routing key lies on a partition the run made
	// undecidable on purpose; nil: none.
	undecided func(tenant, id, rk string) bool
	// escalatedCalls are the calls the reconciler ever listed escalated,
	// facts those a member delivered a fact about (facts.go).
	escalatedCalls map[callRef]bool
	facts          map[callRef]string // with the fact's outcome
	stuck          []string           // events partitions whose open transaction never ended
	// The hostile waves' records, the dead letters by the record they are
	// about, the executors' aborted transactions and the faults injected.
	hostile     []hostileRec
	deadLetters map[deadLetterAt]*wire.DeadLetter
	aborted     int
	faults      int
}

// check computes the verdict. Pure.
func check(in checkInput, r *Report) {
	r.SettledBy, r.Statuses, r.LostByTool = map[string]int{}, map[string]int{}, map[string]int{}
	for _, s := range in.stuck {
		r.violate("hanging_transaction: %s (the log was read up to its last stable offset)", s)
	}
	checkLedger(in, r)
	checkApprovals(in, r)
	checkIntents(in, r)
	checkKeys(in, r)
	checkHostile(in, r)
	checkKnownEscalations(in, r)
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

// checkLedger holds the effects the tool saw against the log: at most
// one effect per downstream key; every effect under a downstream key that
// a started (or compensation_started) event of its key carries (the
// fence); none under a call or compensation the log says never reached
// the tool (not_executed); at most one call of a key with an effect,
// unless the earlier one expired (a key runs again only after its call
// was settled not_executed, which had no effect, or expired); and no undo
// before the effect it undoes.
func checkLedger(in checkInput, r *Report) {
	r.LedgerCalls, r.LedgerEffects, r.LedgerDrops = in.ledger.Calls, in.ledger.Effects, in.ledger.Drops
	r.LedgerFenced, r.LedgerRefused = in.ledger.Fenced, in.ledger.Refused
	for _, dk := range slices.Sorted(maps.Keys(in.ledger.Keys)) {
		k := in.ledger.Keys[dk]
		r.EffectsMaxPerKey = max(r.EffectsMaxPerKey, k.Effects)
		rk := wire.RoutingKey(k.Tenant, k.Key)
		if k.Effects > 1 {
			r.DuplicateEffects += k.Effects - 1
			r.violate("duplicate_effect: %s %s downstream key %s: %d effects, %d requests", k.Path, rk, dk, k.Effects, k.Calls)
		}
		if k.Effects > 0 {
			checkEffect(in.hist[rk], r, rk, dk, k)
		}
	}
	for _, rk := range slices.Sorted(maps.Keys(in.hist)) {
		checkGenerations(in, r, rk, in.hist[rk])
	}
}

// checkEffect finds the call (or compensation) an effect belongs to.
func checkEffect(h *keyHistory, r *Report, rk, dk string, k keyLedger) {
	if h == nil {
		r.violate("effect_without_record: %s %s: effect at the tool, no event in the log", k.Path, rk)
		return
	}
	gens, what := h.Calls, "started"
	if k.Path == pathOf[ToolUndo] {
		gens, what = h.Comps, "compensation_started"
	}
	g, ok := findGeneration(gens, dk)
	switch {
	case !ok && k.Path == pathOf[ToolUndo]:
		r.violate("compensation_without_started: %s: undo performed under %s, no compensation_started in the log carries it", rk, dk)
	case !ok:
		r.violate("effect_without_started: %s %s: effect under %s, no %s event in the log carries it", k.Path, rk, dk, what)
	case g.Status == saga.StatusNotExecuted:
		r.violate("effect_recorded_not_executed: %s %s (%s): the tool performed %s's effect, the log says not_executed", k.Path, rk, h.Tool, g.ID)
	}
}

func findGeneration(gens []generation, dk string) (generation, bool) {
	for _, g := range gens {
		if g.DK == dk {
			return g, true
		}
	}
	return generation{}, false
}

// checkGenerations: one call with an effect per key (a second one is a
// duplicate effect under a new downstream key unless the first expired),
// no undo before the effect, and no compensation started while the call
// could still land.
func checkGenerations(in checkInput, r *Report, rk string, h *keyHistory) {
	for _, e := range h.EarlyUndo {
		r.violate("compensation_before_pending_ttl: %s (%s): %s", rk, h.Tool, e)
	}
	if h.Tool == ToolRead {
		return
	}
	path := pathOf[h.Tool]
	var effect time.Time
	var late bool // the first effect's request reached the tool before its call's deadline
	var with []generation
	for _, g := range h.Calls {
		if k := in.ledger.Keys[g.DK]; k.Path == path && k.Effects > 0 {
			with = append(with, g)
			if effect.IsZero() || k.FirstEffect.Before(effect) {
				effect = k.FirstEffect
				late = g.Deadline > 0 && k.FirstRequest.UnixMilli() < g.Deadline
			}
		}
	}
	for i := 0; i+1 < len(with); i++ {
		if !with[i].Expired {
			r.DuplicateEffects++
			r.violate("duplicate_effect_across_calls: %s (%s): calls %s and %s both had an effect, under %s and %s", rk, h.Tool,
				with[i].ID, with[i+1].ID, with[i].DK, with[i+1].DK)
		}
	}
	for _, g := range h.Comps {
		k := in.ledger.Keys[g.DK]
		switch {
		case k.Effects == 0 || effect.IsZero() || !k.FirstEffect.Before(effect):
		case late:
			// The call's request reached the tool within its budget and
			// the tool acted after the deadline, when the key was the
			// reconciler's: the documented limit (docs/RELIABILITY.md,
			// Limits) that only a tool refusing requests past a deadline
			// closes. Counted, not a broken promise.
			r.LateLandings++
		default:
			r.violate("undo_before_effect: %s: compensation %s undid at %s, the effect came at %s", rk, g.ID,
				k.FirstEffect.Format("15:04:05.000"), effect.Format("15:04:05.000"))
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
		rk := wire.RoutingKey(it.Tenant, it.Key)
		keys[rk] = true
		for _, s := range it.Terminal {
			r.Statuses[s]++
		}
		switch n := len(it.Terminal); {
		case n == 1:
		case n > 1:
			r.DoubleAnswers++
			r.violate("multiple_terminal_answers: intent %s of %s (%s): %v", it.ID, rk, it.Tool, it.Terminal)
		case in.escalated[rk]:
			r.EscalatedIntents++
		case in.undecided != nil && in.undecided(it.Tenant, it.ID, rk):
			r.Undecided++
		case it.Pending > 0:
			r.Unanswered++
			r.violate("unanswered: intent %s of %s (%s): %d pending answers, no terminal one, key not escalated", it.ID, rk, it.Tool, it.Pending)
		default:
			r.LostIntents++
			r.LostByTool[it.Tool]++
			r.violate("lost_intent: intent %s of %s (%s, %s): no answer at all; the tool saw %d requests for the key", it.ID, rk, it.Tool, it.Type,
				requestsOf(in.ledger, it.Tenant, it.Key))
		}
	}
	r.Keys = len(keys)
}

// checkKeys: every key that was in doubt was settled by its class's path
// (or, irreversible, escalated), or by its member's fact, and what the log
// says agrees with the ledger.
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
		checkAgainstLedger(in, r, rk, h)
		checkInDoubt(in, r, rk, h)
	}
}

// checkAgainstLedger: the key's last call, if the log says it succeeded,
// had its effect under its own downstream key. (An effect under a call
// the log says not_executed is checkEffect's.)
func checkAgainstLedger(in checkInput, r *Report, rk string, h *keyHistory) {
	if h.Tool == ToolRead || len(h.Calls) == 0 {
		return
	}
	last := h.Calls[len(h.Calls)-1]
	if last.Status == saga.StatusSucceeded && in.ledger.Keys[last.DK].Effects == 0 {
		r.violate("succeeded_without_effect: %s (%s): the log says call %s succeeded, the tool never performed it under %s", rk, h.Tool, last.ID, last.DK)
	}
}

// requestsOf counts the requests the tool saw for a logical key, under
// any downstream key.
func requestsOf(l LedgerStats, tenant, key string) int {
	n := 0
	for _, k := range l.Keys {
		if k.Tenant == tenant && k.Key == key {
			n += k.Calls
		}
	}
	return n
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
	label := string(class)
	switch {
	case !settled && in.escalated[rk]:
		return // counted as escalated
	case !settled && in.undecided != nil && in.undecided("", "", rk):
		r.UndecidedKeys++
		return
	case !settled:
		r.violate("unsettled: %s (%s, %s) still %s, not escalated", rk, h.Tool, class, final)
		return
	}
	r.Settled++
	path := "other"
	investigation := class.Investigation()
	switch {
	case h.ResolvedBy["executor"] > 0 && resolvedByRec == 0 && h.CompInDoubt == 0:
		path = "fact" // the call's member delivered what it knew: any class
	case h.CompInDoubt > 0:
		path = "compensate"
	case h.Unknown == 0 && h.ResolvedComp > 0 && h.ResolvedComp == len(h.ResolvedSt):
		path = "compensation_resolve"
		label = "compensation" // the doubt was the compensation's: its tool's path
	case resolvedByRec > 0 && investigation == tools.InvestigateRetry:
		path = "retry"
	case resolvedByRec > 0 && investigation == tools.InvestigateProbe:
		path = "probe"
	case resolvedByRec > 0:
		path = "resolve"
	}
	r.SettledBy[label+":"+path]++
	if want := wantPath(label, investigation); want != "" && path != want && path != "fact" {
		r.violate("wrong_path: %s (%s) was in doubt and settled by %s (final %s), its class settles by %s", rk, label, path, final, want)
	}
	if label != "compensation" && investigation == tools.InvestigateEscalate && path != "fact" {
		r.violate("irreversible_settled: %s was in doubt and settled %s by %v, not by an operator", rk, final, h.ResolvedBy)
	}
}

// wantPath is the path by which a key in doubt must be settled: its
// class's investigation, or for a compensation in doubt the resolve the
// reconciler sends after retrying or probing the compensating tool.
func wantPath(label string, inv tools.Investigation) string {
	if label == "compensation" {
		return "compensation_resolve"
	}
	switch inv {
	case tools.InvestigateRetry:
		return "retry"
	case tools.InvestigateProbe:
		return "probe"
	case tools.InvestigateCompensate:
		return "compensate"
	}
	return ""
}
