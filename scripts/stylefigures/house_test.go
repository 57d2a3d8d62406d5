package main

import "testing"

func TestHistoryIn(t *testing.T) {
	for line, history := range map[string]bool{
		"coordinator aborted the records (finding 18).":       true,
		"Before the fix the drain returned the error":         true,
		"the seeded run (issue 36 section 3)":                 true,
		"replay it: go run ./harness/cmd/sim --seed=6009":     true,
		"such intents used to get no answer at all.":          true,
		"found by the chaos harness":                          true,
		"the traceparent of the issue's reproduction":         true,
		"as in D1 of the review":                              true,
		"a buffer is used to hold the records":                false,
		"when the last round ended":                           false,
		"the fix form's header (msgpack fixmap)":              false,
		"the seed brokers as a --brokers flag takes them":     false,
		"a tick dispatches its calls, then materialises them": false,
	} {
		if got := historyIn(line) != ""; got != history {
			t.Errorf("%q: history %v, want %v", line, got, history)
		}
	}
}
