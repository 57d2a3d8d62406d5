package main

import (
	"errors"
	"strings"
	"testing"
)

// The replay names the seed and every flag the run was given, and only
// those: what a failing run prints must run it again as it ran.
func TestReplayCommandCarriesTheGivenFlags(t *testing.T) {
	o, err := parseFlags([]string{"--seed", "7", "--runs", "3", "--duration", "15s", "--codes", "documented"})
	if err != nil {
		t.Fatal(err)
	}
	got := replayCommand(9, o.passed)
	want := "go run ./harness/cmd/sim --seed=9 --codes=documented --duration=15s" // flag.Visit goes in lexical order
	if got != want {
		t.Fatalf("replay %q, want %q", got, want)
	}
	if _, err := parseFlags([]string{"--runs", "0"}); err == nil {
		t.Fatal("--runs 0 without a budget was accepted")
	}
}

// A child that gave no report is named by its panic, else by its own
// error line, else by its exit.
func TestCrashReason(t *testing.T) {
	panicked := "sim: starting\npanic: invariant broken\n\ngoroutine 1 [running]:\nmain.main()\n"
	if got := crashReason(errors.New("exit status 2"), panicked); !strings.HasPrefix(got, "panic: invariant broken") {
		t.Fatalf("crash reason %q, want the panic", got)
	}
	if got := crashReason(errors.New("exit status 2"), "sim: the run could not be judged: x\n"); got != "sim: the run could not be judged: x" {
		t.Fatalf("crash reason %q, want the child's error line", got)
	}
	if got := crashReason(errors.New("signal: killed"), ""); got != "exit signal: killed" {
		t.Fatalf("crash reason %q, want the exit", got)
	}
}
