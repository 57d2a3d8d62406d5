package cli

import (
	"errors"
	"flag"
	"strings"
	"testing"
)

// A first argument that is no subcommand never starts the service: it is
// refused (exit 2) with the list of subcommands.
func TestUnknownSubcommandIsRefused(t *testing.T) {
	ran := ""
	run := func(args []string) error { ran = "run " + strings.Join(args, " "); return nil }
	subs := map[string]func([]string) error{
		"send":    func(args []string) error { ran = "send " + strings.Join(args, " "); return nil },
		"history": func([]string) error { return nil },
	}
	err := dispatch("executor", []string{"resolve", "--help"}, run, subs)
	if ran != "" || Exit("executor", err) != ExitUsage {
		t.Fatalf("executor resolve --help: ran %q, err %v", ran, err)
	}
	if want := `unknown subcommand "resolve": the subcommands of executor are history, send (executor --help)`; err.Error() != want {
		t.Fatalf("refusal %q, want %q", err, want)
	}
	if err := dispatch("executor", []string{"send", "--key", "k"}, run, subs); err != nil || ran != "send --key k" {
		t.Fatalf("a subcommand: %v, ran %q", err, ran)
	}
	if err := dispatch("executor", []string{"--data-dir", "d"}, run, subs); err != nil || ran != "run --data-dir d" {
		t.Fatalf("flags only: %v, ran %q", err, ran)
	}
}

// What is left after the flags is refused: flag stops at the first
// argument that is not one, so the flags after it would be lost.
func TestStrayArgumentIsRefused(t *testing.T) {
	fs := FlagSet("executor send", "Usage: executor send")
	fs.SetOutput(new(strings.Builder))
	key := fs.String("key", "", "")
	err := Parse(fs, []string{"--key", "k", "extra", "--tool", "t"})
	if Exit("executor", err) != ExitUsage || !strings.Contains(err.Error(), `unexpected argument "extra"`) || *key != "k" {
		t.Fatalf("stray argument: %v", err)
	}
	out := new(strings.Builder)
	fs = FlagSet("executor", "Usage:\n  executor send   send one intent")
	fs.SetOutput(out)
	err = Parse(fs, []string{"--help"})
	if !errors.Is(err, flag.ErrHelp) || Exit("executor", err) != ExitOK || !strings.HasPrefix(out.String(), "Usage:\n  executor send") {
		t.Fatalf("--help: %v, printed %q", err, out)
	}
	if err := Parse(fs, []string{"--nope"}); Exit("executor", err) != ExitUsage {
		t.Fatalf("an unknown flag: %v", err)
	}
}
