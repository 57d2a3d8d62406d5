package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/atmostonce/toolexec/internal/buildinfo"
	"github.com/atmostonce/toolexec/internal/gctune"
)

// Main runs the subcommand named by the first argument with the rest, or
// run with all of them, and exits 1 with "<name>: <error>" on failure.
// --version alone prints the build (buildinfo) and exits 0. Otherwise the
// Go runtime's soft memory limit is first set from the container's
// (gctune.ApplyMemoryLimit).
func Main(name string, run func([]string) error, subcommands map[string]func([]string) error) {
	args := os.Args[1:]
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
		fmt.Println(buildinfo.Read().String(name))
		return
	}
	_, err := gctune.ApplyMemoryLimit()
	switch sub, ok := subcommand(args, subcommands); {
	case err != nil:
	case ok:
		err = sub(args[1:])
	default:
		err = run(args)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

func subcommand(args []string, subcommands map[string]func([]string) error) (func([]string) error, bool) {
	if len(args) == 0 {
		return nil, false
	}
	sub, ok := subcommands[args[0]]
	return sub, ok
}

// Logger is a long-running process's log: text on stderr, info and up.
func Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// SignalContext is cancelled on SIGINT or SIGTERM: the cue for a graceful
// stop (the executor drains its calls, the reconciler leaves its group).
func SignalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// Hangups catches SIGHUP from the moment it is called, so that one that
// arrives during a long start neither kills the process (the default
// action of SIGHUP) nor is lost: the channel keeps the latest until a
// reader takes it (a reload of a tenants file, or a log line saying there
// is nothing to reload). Call it first thing; stop releases the signal.
func Hangups() (hup <-chan os.Signal, stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	return ch, func() { signal.Stop(ch) }
}
