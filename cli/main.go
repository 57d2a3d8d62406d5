package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/atmostonce/toolexec/internal/buildinfo"
	"github.com/atmostonce/toolexec/internal/gctune"
)

// Exit statuses every command shares. A subcommand may give other
// statuses a meaning of its own (executor send: one per terminal status).
const (
	ExitOK    = 0
	ExitError = 1 // the command failed; the message says why
	ExitUsage = 2 // a flag, argument or subcommand that the command does not take
)

// Main runs the subcommand named by the first argument with the rest, or
// run with all of them, and exits with the status of the error (Exit):
// 0 without one, 1 with "<name>: <error>" on stderr. --version alone
// prints the build (buildinfo) and exits 0. Otherwise the Go runtime's
// soft memory limit is first set from the container's
// (gctune.ApplyMemoryLimit). A first argument that is
// neither a flag nor a subcommand is refused (exit 2) with the list of
// subcommands: a mistyped subcommand must never start the service.
func Main(name string, run func([]string) error, subcommands map[string]func([]string) error) {
	os.Exit(Exit(name, dispatch(name, os.Args[1:], run, subcommands)))
}

func dispatch(name string, args []string, run func([]string) error, subcommands map[string]func([]string) error) error {
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
		fmt.Println(buildinfo.Read().String(name))
		return nil
	}
	if _, err := gctune.ApplyMemoryLimit(); err != nil {
		return err
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return run(args)
	}
	if sub, ok := subcommands[args[0]]; ok {
		return sub(args[1:])
	}
	return Usagef("unknown subcommand %q: %s (%s --help)", args[0], subcommandList(name, subcommands), name)
}

func subcommandList(name string, subcommands map[string]func([]string) error) string {
	if len(subcommands) == 0 {
		return name + " takes no subcommand"
	}
	names := make([]string, 0, len(subcommands))
	for n := range subcommands {
		names = append(names, n)
	}
	slices.Sort(names)
	return "the subcommands of " + name + " are " + strings.Join(names, ", ")
}

// ExitStatus ends a command with Code. Err, when not nil, is printed as
// any error is ("<name>: <error>" on stderr); a nil Err prints nothing
// (the command said what it had to, or flag printed the problem already).
type ExitStatus struct {
	Code int
	Err  error
}

func (e *ExitStatus) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitStatus) Unwrap() error { return e.Err }

// Usagef is a usage error: a flag, argument or subcommand the command
// does not take (exit 2).
func Usagef(format string, args ...any) error {
	return &ExitStatus{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// Exit prints err as Main does and returns the exit status it stands for:
// 0 for nil and for --help (flag.ErrHelp: flag printed the usage), the
// code of an ExitStatus, else 1.
func Exit(name string, err error) int {
	var st *ExitStatus
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.As(err, &st):
		if st.Err != nil {
			fmt.Fprintln(os.Stderr, name+":", st.Err)
		}
		return st.Code
	}
	fmt.Fprintln(os.Stderr, name+":", err)
	return ExitError
}

// FlagSet is a flag set named name whose usage (--help, a flag it does
// not know) prints synopsis, then the flags.
func FlagSet(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintln(out, strings.TrimRight(synopsis, "\n"))
		fmt.Fprintf(out, "\nFlags of %s:\n", name)
		fs.PrintDefaults()
	}
	return fs
}

// Parse parses args into fs and refuses what is left after the flags: a
// stray argument is a mistake (a subcommand of another command, a value
// whose flag was forgotten, flags after an argument, where flag stops
// parsing), never something to ignore. A flag error is a usage error
// (exit 2; flag printed it and the usage already); --help returns
// flag.ErrHelp (exit 0).
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &ExitStatus{Code: ExitUsage}
	}
	if fs.NArg() > 0 {
		return Usagef("unexpected argument %q: %s takes only flags, and they come first (%s --help)", fs.Arg(0), fs.Name(), fs.Name())
	}
	return nil
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
