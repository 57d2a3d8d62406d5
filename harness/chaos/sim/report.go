package sim

import (
	"maps"
	"slices"
	"strings"

	"github.com/atmostonce/toolexec/harness/chaos"
)

// RunReport is one run's verdict and what it injected.
type RunReport struct {
	Seed       uint64   `json:"seed"`
	Seconds    float64  `json:"seconds"`
	Params     params   `json:"params"`
	Violations []string `json:"violations"`
	Notes      []string `json:"notes,omitempty"`
	// Injected counts the network faults by "Kind/CODE/way" (the code "-"
	// for lost answers and delays): the requests each was injected on.
	Injected map[string]int `json:"injected"`
	// Requests counts the requests the product's clients sent, by kind.
	Requests map[string]int `json:"requests"`
	// Faults counts every fault attempted, by kind and kind:detail.
	Faults map[string]int `json:"faults"`
	// Exits counts the members whose Run ended on its own, by reason.
	Exits      map[string]int `json:"exits"`
	CallStarts int            `json:"call_starts"`
	Load       map[string]int `json:"load"`
	// Commands counts the answers to the reconciler's commands by
	// status; CommandErrors the reasons of the refused ones.
	Commands      map[string]int `json:"commands"`
	CommandErrors map[string]int `json:"command_errors,omitempty"`
	Verdict       *chaos.Report  `json:"verdict"`
	Dir           string         `json:"dir,omitempty"` // the run's data and log, kept when it failed
}

// Summary is what a sequence of runs found: the last line of harness/cmd/sim.
type Summary struct {
	Runs       int      `json:"runs"`
	Seed       uint64   `json:"seed"`
	Seconds    float64  `json:"seconds"`
	Violations int      `json:"violations"` // runs with at least one violation
	Failures   []Failed `json:"failures"`
	// Injected counts the network faults by request kind; InjectedBy by
	// "Kind/CODE/way", SurvivedBy the same in runs without a violation.
	Injected   map[string]int `json:"injected"`
	InjectedBy map[string]int `json:"injected_by"`
	SurvivedBy map[string]int `json:"survived_by"`
	Faults     map[string]int `json:"faults"`
	Requests   map[string]int `json:"requests"`
	Exits      map[string]int `json:"exits"`
	Intents    int            `json:"intents"`
	Answers    int            `json:"answers"`
	Escalated  int            `json:"escalated"`
	// EscalatedAfterResend: escalations a member's not_executed fact
	// named, of calls the reconciler resent since (chaos's
	// checkKnownEscalations); not violations.
	EscalatedAfterResend int `json:"escalated_after_resend"`
	Undecided            int `json:"undecided"`
	CallStarts           int `json:"call_starts"`
	Unsettled            int `json:"unsettled_runs"`
}

// Failed is one run with violations, and how to replay it.
type Failed struct {
	Seed       uint64   `json:"seed"`
	Violations []string `json:"violations"`
	Replay     string   `json:"replay"`
	Dir        string   `json:"dir,omitempty"`
}

// NewSummary starts a summary of runs from seed.
func NewSummary(seed uint64) *Summary {
	return &Summary{Seed: seed, Failures: []Failed{}, Injected: map[string]int{}, InjectedBy: map[string]int{}, SurvivedBy: map[string]int{},
		Faults: map[string]int{}, Requests: map[string]int{}, Exits: map[string]int{}}
}

// Add counts one run; replay is the command that replays it.
func (s *Summary) Add(r *RunReport, replay string) {
	s.Runs++
	s.Seconds += r.Seconds
	failed := len(r.Violations) > 0
	if failed {
		s.Violations++
		s.Failures = append(s.Failures, Failed{Seed: r.Seed, Violations: first(r.Violations, 20), Replay: replay, Dir: r.Dir})
	}
	for l, n := range r.Injected {
		s.InjectedBy[l] += n
		kind, _, _ := strings.Cut(l, "/")
		s.Injected[kind] += n
		if !failed {
			s.SurvivedBy[l] += n
		}
	}
	addAll(s.Faults, r.Faults)
	addAll(s.Requests, r.Requests)
	addAll(s.Exits, r.Exits)
	s.CallStarts += r.CallStarts
	if len(r.Notes) > 0 {
		s.Unsettled++
	}
	if v := r.Verdict; v != nil {
		s.Intents += v.Intents
		s.Answers += v.Answers
		s.Escalated += v.Escalated
		s.EscalatedAfterResend += v.EscalatedAfterResend
		s.Undecided += v.Undecided
	}
}

// Crashed counts a run whose process ended without a report (a panic,
// an out-of-memory kill): a violation.
func (s *Summary) Crashed(seed uint64, why, replay string) {
	s.Runs++
	s.Violations++
	s.Failures = append(s.Failures, Failed{Seed: seed, Violations: []string{"process_crash: " + why}, Replay: replay})
}

func first(v []string, n int) []string { return slices.Clone(v[:min(n, len(v))]) }

func addAll(dst, src map[string]int) {
	for _, k := range slices.Sorted(maps.Keys(src)) {
		dst[k] += src[k]
	}
}
