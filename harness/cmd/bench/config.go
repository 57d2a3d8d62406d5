package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"
)

// config is the bench's configuration. Flags left unset take the full
// defaults, or the quick ones under --quick.
type config struct {
	brokers      []string      // empty: an in-process kfake cluster
	kafkaConfig  string        // --kafka-config: TLS and SASL settings of every client
	quick        bool          // fewer keys, shorter phases, one repeat
	duration     time.Duration // measured part of each load phase
	warm         time.Duration // unmeasured lead-in of each load phase
	repeats      int           // rounds of the load scenarios; medians and spread are reported
	partitions   int32         // of intents, control and events
	window       int           // outstanding intents of a saturating (closed-loop) phase
	dupFraction  float64       // share of intents in the replay phase that repeat a completed key
	slowLatency  time.Duration // per call of the slow tool
	slowInFlight int           // max_in_flight of the slow tool
	httpClients  int           // concurrent HTTP clients of the gateway scenario (and outstanding intents of its Kafka path)
	keys         int           // keys in the restore and memory scenarios
	oneCaller    int           // calls per path of the one-caller scenario; 0 skips it
	traceDump    string        // file for the one-caller scenario's raw hop events; empty: none
	cpuProfile   string        // path prefix of CPU profiles; empty: none
	memProfile   string        // path prefix of heap (allocation) profiles; empty: none
	keepTopics   bool          // leave the run's topics on the broker
	keepScratch  bool          // leave the scratch directory (members' logs and data)
	skipRestore  bool          // skip scenarios 4 and 5b (keys in state)
	skipLoad     bool          // skip scenarios 1, 2, 3, 5a and 6
	tracing      bool          // the members trace every call, to a sink in the bench (tracing.go)
	peer         peerConfig    // --peer and its settings; run by hand, never in CI
	scenario     string        // "": every scenario but the flood; "flood": the flood alone (flood.go)
	flood        floodConfig   // --flood-*
}

type defaults struct {
	duration, warm            time.Duration
	repeats, keys, oneCaller  int
	floodQuiet, floodDuration time.Duration
}

var (
	fullDefaults = defaults{duration: 15 * time.Second, warm: 3 * time.Second, repeats: 3, keys: 1_000_000, oneCaller: 300,
		floodQuiet: 10 * time.Second, floodDuration: 40 * time.Second}
	quickDefaults = defaults{duration: 4 * time.Second, warm: time.Second, repeats: 1, keys: 100_000, oneCaller: 100,
		floodQuiet: 5 * time.Second, floodDuration: 12 * time.Second}
)

func parseFlags(args []string) (config, error) {
	var c config
	var brokers string
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&brokers, "brokers", "", "comma-separated seed brokers; empty starts an in-process kfake cluster")
	fs.StringVar(&c.kafkaConfig, "kafka-config", "", "Kafka client properties (TLS, SASL) for every client of the run, members included; needs --brokers")
	fs.BoolVar(&c.quick, "quick", false, "short run (under 2 minutes): 4s phases, 1 repeat, 100k keys")
	fs.DurationVar(&c.duration, "duration", fullDefaults.duration, "measured part of each load phase (quick: 4s)")
	fs.DurationVar(&c.warm, "warm", fullDefaults.warm, "unmeasured lead-in of each load phase (quick: 1s)")
	fs.IntVar(&c.repeats, "repeats", fullDefaults.repeats, "rounds of the load scenarios, with fresh members and topics each (quick: 1)")
	var parts int
	fs.IntVar(&parts, "partitions", 12, "partitions of the intents, control and events topics")
	fs.IntVar(&c.window, "window", 2000, "outstanding intents in a saturating phase (closed loop)")
	fs.Float64Var(&c.dupFraction, "dup-fraction", 0.8, "share of the replay phase's intents that repeat a completed key (>= 0.5)")
	fs.DurationVar(&c.slowLatency, "slow-latency", 50*time.Millisecond, "duration of one call of the slow tool")
	fs.IntVar(&c.slowInFlight, "slow-max-in-flight", 64, "max_in_flight of the slow tool (the product default)")
	fs.IntVar(&c.httpClients, "http-clients", 32, "concurrent HTTP clients in the gateway scenario (its Kafka path keeps as many intents outstanding)")
	fs.IntVar(&c.keys, "keys", fullDefaults.keys, "keys in the restore and memory scenarios (quick: 100000)")
	fs.IntVar(&c.oneCaller, "one-caller", fullDefaults.oneCaller, "calls per path in the one-caller scenario (quick: 100); 0 skips it")
	fs.StringVar(&c.traceDump, "trace-dump", "", "write the one-caller scenario's raw hop events (both members) to this file as JSON")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write CPU profiles to <prefix>.{executor,baseline,executor-replay,executor-keys,restore-serial,restore-parallel,gateway}.pprof")
	fs.StringVar(&c.memProfile, "memprofile", "", "write the executor's allocation profile after round 1 to <prefix>.executor.heap.pprof")
	fs.BoolVar(&c.keepTopics, "keep-topics", false, "do not delete the run's topics at the end")
	fs.BoolVar(&c.keepScratch, "keep-scratch", false, "do not delete the scratch directory (the members' logs and data directories) at the end")
	fs.BoolVar(&c.skipRestore, "skip-restore", false, "skip the restore scenario and the memory figure with keys in state")
	fs.BoolVar(&c.skipLoad, "skip-load", false, "skip the load scenarios (unique, replay, slow tool, group commit)")
	fs.BoolVar(&c.tracing, "tracing", false, "the executor and gateway members trace every call (OpenTelemetry, sampled at 100%) to an OTLP/HTTP sink in the bench; off: no member traces")
	c.peer.flags(fs)
	modes := floodFlags(fs, &c)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	c.partitions = int32(parts)
	if brokers != "" {
		c.brokers = strings.Split(brokers, ",")
	}
	if err := c.peer.parse(); err != nil {
		return c, err
	}
	if *modes != "" {
		c.flood.modes = strings.Split(*modes, ",")
	}
	if c.quick {
		c.applyQuick(setFlags(fs))
	}
	return c, c.validate()
}

func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// applyQuick replaces the full defaults by the quick ones, except for
// flags given explicitly.
func (c *config) applyQuick(set map[string]bool) {
	d := quickDefaults
	if !set["duration"] {
		c.duration = d.duration
	}
	if !set["warm"] {
		c.warm = d.warm
	}
	if !set["repeats"] {
		c.repeats = d.repeats
	}
	if !set["keys"] {
		c.keys = d.keys
	}
	if !set["one-caller"] {
		c.oneCaller = d.oneCaller
	}
	if !set["flood-quiet"] {
		c.flood.quiet = d.floodQuiet
	}
	if !set["flood-duration"] {
		c.flood.duration = d.floodDuration
	}
}

// floodFlags are the flood scenario's (flood.go); it returns --flood-modes,
// split after parsing.
func floodFlags(fs *flag.FlagSet, c *config) *string {
	fs.StringVar(&c.scenario, "scenario", "", "flood: run the flood scenario alone (tenant A floods a slow tool, tenant B calls another; docs/PERFORMANCE.md); empty: every other scenario")
	f := &c.flood
	fs.DurationVar(&f.quiet, "flood-quiet", fullDefaults.floodQuiet, "flood: how long tenant B calls alone before the flood (quick: 5s)")
	fs.DurationVar(&f.duration, "flood-duration", fullDefaults.floodDuration, "flood: how long tenant A floods (quick: 12s)")
	fs.Float64Var(&f.rate, "flood-rate", 100, "flood: tenant A's calls per second (on schedule)")
	fs.IntVar(&f.senders, "flood-senders", 8, "flood: tenant A's calls at once")
	fs.DurationVar(&f.slow, "flood-slow-latency", 300*time.Millisecond, "flood: duration of one call of the slow tool A floods")
	fs.IntVar(&f.slowInFlight, "flood-slow-max-in-flight", 16, "flood: max_in_flight of the slow tool")
	fs.DurationVar(&f.every, "flood-every", 200*time.Millisecond, "flood: tenant B's period between calls of the no-op tool")
	fs.DurationVar(&f.bWait, "flood-wait", 10*time.Second, "flood: how long each of B's calls waits for its answer (the gateway's default Prefer: wait)")
	return fs.String("flood-modes", "gateway,kafka", "flood: the modes, in order: gateway (through a gateway process), kafka (produced straight to Kafka)")
}

func (c *config) validate() error {
	switch {
	case c.duration < time.Second:
		return errors.New("--duration: at least 1s")
	case c.warm < 0:
		return errors.New("--warm: must not be negative")
	case c.repeats < 1:
		return errors.New("--repeats: at least 1")
	case c.partitions < 1 || c.partitions > 1000:
		return errors.New("--partitions: 1..1000")
	case c.window < 1:
		return errors.New("--window: at least 1")
	case c.dupFraction < 0.5 || c.dupFraction > 1:
		return errors.New("--dup-fraction: 0.5..1 (heavy duplication)")
	case c.slowLatency <= 0 || c.slowInFlight < 1:
		return errors.New("--slow-latency and --slow-max-in-flight: must be positive")
	case c.httpClients < 1 || c.httpClients > 4096:
		return errors.New("--http-clients: 1..4096")
	case c.oneCaller < 0:
		return errors.New("--one-caller: must not be negative")
	case c.keys < int(c.partitions):
		return errors.New("--keys: at least one per partition")
	case c.kafkaConfig != "" && len(c.brokers) == 0:
		return errors.New("--kafka-config needs --brokers (the in-process kfake cluster has no TLS or SASL)")
	case c.scenario != "" && c.scenario != "flood":
		return fmt.Errorf("--scenario %q: want flood (or nothing)", c.scenario)
	}
	return c.flood.validate()
}

func (f *floodConfig) validate() error {
	switch {
	case f.quiet < time.Second || f.duration < time.Second:
		return errors.New("--flood-quiet and --flood-duration: at least 1s")
	case f.rate <= 0 || f.senders < 1 || f.slowInFlight < 1 || f.slow <= 0 || f.every <= 0 || f.bWait < time.Second:
		return errors.New("--flood-rate, --flood-senders, --flood-slow-*, --flood-every: positive; --flood-wait: at least 1s")
	}
	for _, m := range f.modes {
		if m != "gateway" && m != "kafka" {
			return fmt.Errorf("--flood-modes: %q is not gateway or kafka", m)
		}
	}
	return nil
}

// brokerName names the broker in the output.
func (c *config) brokerName() string {
	if len(c.brokers) == 0 {
		return "kfake (in-process)"
	}
	return "kafka " + strings.Join(c.brokers, ",")
}
