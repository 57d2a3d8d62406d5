package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/atmostonce/toolexec/internal/gctune"
)

// memberCommand is the hidden subcommand that runs one member (executor or
// baseline) in its own process. The parent talks to it over stdin and
// stdout, one line each way per command:
//
//	stats          -> counters as JSON
//	cpu <path>     -> start a CPU profile
//	cpustop        -> stop it
//	heap <path>    -> write a heap profile (alloc_space is cumulative)
//	trace          -> the hop events recorded since the last trace (--trace)
//
// The first line the member writes is {"ready":true} (with "addr" for a
// member that serves HTTP: the gateway); EOF on stdin stops
// it (gracefully: the executor drains). Logs go to stderr.
const memberCommand = "__member"

// memberOpts are the member's flags, set by the parent.
type memberOpts struct {
	role         string // "executor", "baseline" or "gateway"
	brokers      []string
	prefix       string
	group        string
	partitions   int
	dataDir      string
	slowLatency  time.Duration
	slowInFlight int
	kafkaConfig  string // --kafka-config of the parent
	toolURL      string // the peer comparison's HTTP tool (bench.http); empty: not registered
	httpAddr     string // the gateway's listen address; empty: a free port
	trace        bool   // record hop events (trace.go) for the one-caller scenario
	tenantsFile  string // the gateway's tenants file; empty: the bench tenant alone, without limits
}

func (o memberOpts) args() []string {
	return []string{memberCommand, "--role", o.role, "--brokers", strings.Join(o.brokers, ","), "--prefix", o.prefix,
		"--group", o.group, "--partitions", fmt.Sprint(o.partitions), "--data-dir", o.dataDir,
		"--slow-latency", o.slowLatency.String(), "--slow-max-in-flight", fmt.Sprint(o.slowInFlight),
		"--kafka-config", kafkaConfigFile, "--tool-url", o.toolURL, "--http-addr", o.httpAddr, fmt.Sprintf("--trace=%v", o.trace), "--tenants", o.tenantsFile}
}

func parseMemberFlags(args []string) (memberOpts, error) {
	var o memberOpts
	var brokers string
	fs := flag.NewFlagSet(memberCommand, flag.ContinueOnError)
	fs.StringVar(&o.role, "role", "", "executor | baseline | gateway")
	fs.StringVar(&brokers, "brokers", "", "")
	fs.StringVar(&o.prefix, "prefix", "", "")
	fs.StringVar(&o.group, "group", "", "")
	fs.IntVar(&o.partitions, "partitions", 12, "")
	fs.StringVar(&o.dataDir, "data-dir", "", "")
	fs.DurationVar(&o.slowLatency, "slow-latency", 50*time.Millisecond, "")
	fs.IntVar(&o.slowInFlight, "slow-max-in-flight", 64, "")
	fs.StringVar(&o.kafkaConfig, "kafka-config", "", "")
	fs.StringVar(&o.toolURL, "tool-url", "", "")
	fs.StringVar(&o.httpAddr, "http-addr", "", "")
	fs.BoolVar(&o.trace, "trace", false, "")
	fs.StringVar(&o.tenantsFile, "tenants", "", "")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.brokers = strings.Split(brokers, ",")
	return o, loadKafkaConfig(context.Background(), o.kafkaConfig, o.brokers)
}

// member is what runs in the child: the executor or the baseline.
type member interface {
	run(ctx context.Context) error
	counters() counters
	close()
}

func runMember(args []string) error {
	o, err := parseMemberFlags(args)
	if err != nil {
		return err
	}
	gctune.Apply() // both members run as the executor is shipped
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m, err := newMember(ctx, o)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- m.run(ctx) }()
	out := json.NewEncoder(os.Stdout)
	ready := map[string]any{"ready": true}
	if a, ok := m.(interface{ addr() string }); ok {
		ready["addr"] = a.addr()
	}
	if err := out.Encode(ready); err != nil {
		return err
	}
	serveErr := serveCommands(os.Stdin, out, m, done)
	cancel()
	runErr := <-done
	pprof.StopCPUProfile()
	m.close()
	return errors.Join(serveErr, runErr)
}

func newMember(ctx context.Context, o memberOpts) (member, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	switch o.role {
	case "executor":
		return newExecutorMember(ctx, o)
	case "baseline":
		return newBaseline(ctx, o)
	case "gateway":
		return newGatewayMember(ctx, o)
	}
	return nil, fmt.Errorf("unknown role %q", o.role)
}

// serveCommands answers the parent until stdin closes or the member stops.
func serveCommands(in io.Reader, out *json.Encoder, m member, done chan error) error {
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	for {
		select {
		case err := <-done:
			done <- err // run returned early: give the error back to runMember
			return fmt.Errorf("member stopped: %w", err)
		case line, ok := <-lines:
			if !ok {
				return nil
			}
			if err := out.Encode(command(line, m)); err != nil {
				return err
			}
		}
	}
}

func command(line string, m member) any {
	verb, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	switch verb {
	case "stats":
		return m.counters()
	case "cpu":
		return errReply(startCPUProfile(arg))
	case "cpustop":
		pprof.StopCPUProfile()
		return errReply(nil)
	case "heap":
		return errReply(writeHeapProfile(arg))
	case "trace":
		if t, ok := m.(interface{ tracer() *hopTracer }); ok && t.tracer() != nil {
			return t.tracer().take()
		}
		return []hopEvent{}
	}
	return errReply(fmt.Errorf("unknown command %q", verb))
}

func errReply(err error) map[string]string {
	if err != nil {
		return map[string]string{"error": err.Error()}
	}
	return map[string]string{}
}

func startCPUProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return err
	}
	return nil
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.Lookup("allocs").WriteTo(f, 0)
}
