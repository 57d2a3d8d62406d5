package sim

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/atmostonce/toolexec/harness/chaos"
)

// Config is one run. Zero values take the defaults of harness/cmd/sim.
type Config struct {
	Seed     uint64
	Duration time.Duration // of the load and the faults; default 20s
	Settle   time.Duration // longest wait for every intent's answer afterwards; default 90s
	// Members, Partitions and Rate override what the seed chooses
	// (2 to 4 members, 2 to 6 partitions, 15 to 40 intents a second).
	Members    int
	Partitions int
	Rate       float64
	FaultGap   time.Duration // mean time between two faults; default 300ms
	// Faults are the fault kinds allowed (FaultKinds); empty:
	// DefaultFaults. Each run injects a subset of them, chosen by the
	// seed (swarm testing).
	Faults []string
	Codes  CodeSet // default CodesAny
	// WorkDir holds the run's data dirs and its log; a temp dir when
	// empty. It is removed after a run without violations unless Keep.
	WorkDir string
	Keep    bool
	Log     io.Writer // progress lines; nil: none
}

// The fault kinds.
const (
	FaultRefused      = "refused"        // kfake's Fault API: a request refused with a code, not applied
	FaultErrored      = "errored"        // applied, answered with a code (kfakeresp.Interposer)
	FaultLost         = "lost"           // applied, the connection cut before the answer
	FaultDelay        = "delay"          // a request held before the broker reads it
	FaultJoin         = "member_join"    // a member starts (a new one, or a stopped one's data dir)
	FaultLeave        = "member_leave"   // a member shuts down gracefully (drain, leave)
	FaultCrash        = "member_crash"   // a member is abandoned as kill -9 would (executor.Crash)
	FaultWipe         = "member_wipe"    // a crash that also loses the data dir
	FaultLogStart     = "log_start"      // the events log start moved where retention may move it
	FaultLogStartPast = "log_start_past" // moved past every snapshot round: the executor must refuse
	FaultPebble       = "pebble"         // a member's Pebble log writes or syncs fail for a while (vfs/errorfs)
	FaultCoordinator  = "coordinator_move"
	FaultLeaders      = "leader_move" // with more than one broker
	FaultHostile      = "hostile"     // a wave of hostile records (chaos.Hostile)
	FaultReconciler   = "reconciler_restart"
)

// FaultKinds lists every kind, in the order of the report.
var FaultKinds = []string{FaultRefused, FaultErrored, FaultLost, FaultDelay, FaultJoin, FaultLeave, FaultCrash, FaultWipe,
	FaultLogStart, FaultLogStartPast, FaultPebble, FaultCoordinator, FaultLeaders, FaultHostile, FaultReconciler}

// DefaultFaults are the kinds allowed when Config.Faults is empty: all
// but leader moves. kfake (v0.0.0-20260918054303) answers an
// OffsetForLeaderEpoch after ShufflePartitionLeaders on a partition with
// transactions so that franz-go sees records lost and resets its
// consumers to offset 0, which a real broker with clean leader elections
// never does; the executors then decide every intent again (reads are
// answered again), a broker artefact the checks would count as the
// product's double answers. Name leader_move in --faults to see it.
var DefaultFaults = slices.DeleteFunc(slices.Clone(FaultKinds), func(f string) bool { return f == FaultLeaders })

func (c *Config) defaults() error {
	if c.Duration <= 0 {
		c.Duration = 20 * time.Second
	}
	if c.Settle <= 0 {
		c.Settle = 120 * time.Second
	}
	if c.FaultGap <= 0 {
		c.FaultGap = 300 * time.Millisecond
	}
	if c.Codes == "" {
		c.Codes = CodesAny
	}
	if c.Codes != CodesAny && c.Codes != CodesDocumented {
		return fmt.Errorf("sim: codes %q: want %s or %s", c.Codes, CodesAny, CodesDocumented)
	}
	for _, f := range c.Faults {
		if !slices.Contains(FaultKinds, f) {
			return fmt.Errorf("sim: fault kind %q: want one of %s", f, strings.Join(FaultKinds, ", "))
		}
	}
	if len(c.Faults) == 0 {
		c.Faults = DefaultFaults
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	return nil
}

// params are what the seed chooses for one run, beyond the workload and
// the fault schedule. They are printed with the run's report.
type params struct {
	Members    int   `json:"members"`
	Partitions int32 `json:"partitions"`
	Brokers    int   `json:"brokers"`
	// Kafka is the broker version kfake advertises: "4.4" (its own, with
	// transaction version 2: partitions join a transaction with their
	// first produce, no AddPartitionsToTxn or AddOffsetsToTxn) or "3.9"
	// (before KIP-890's second part: franz-go sends both).
	Kafka string  `json:"kafka"`
	Rate  float64 `json:"rate"`
	// Faults is the run's subset of the allowed fault kinds, Weights
	// their relative frequency.
	Faults  []string       `json:"faults"`
	Weights map[string]int `json:"-"`
	// MaxInFlight is each tool's max_in_flight (0: none), and the
	// member's overall bound.
	ToolMaxInFlight map[string]int `json:"tool_max_in_flight"`
	MaxInFlight     int            `json:"max_in_flight"`
	MaxPollRecords  int            `json:"max_poll_records"`
	// ToolLatency bounds the ledger's answer time (a hash of the
	// downstream key picks each call's).
	ToolLatency      time.Duration `json:"tool_latency"`
	SessionTimeout   time.Duration `json:"session_timeout"`
	DrainTimeout     time.Duration `json:"drain_timeout"`
	TxnTimeout       time.Duration `json:"transaction_timeout"`
	SnapshotInterval time.Duration `json:"snapshot_interval"`
	SlowPercent      int           `json:"slow_percent"`   // keys whose effect comes after the tool's timeout
	ClientPercent    int           `json:"client_percent"` // intents sent by agents through package client
}

// choose derives a run's parameters from its seed.
func choose(c Config) params {
	rng := rand.New(rand.NewPCG(c.Seed, 1))
	p := params{
		Members:          2 + rng.IntN(3),
		Partitions:       int32(2 + rng.IntN(5)),
		Brokers:          []int{1, 1, 3}[rng.IntN(3)],
		Rate:             float64(15 + rng.IntN(26)),
		MaxInFlight:      []int{4, 16, 64}[rng.IntN(3)],
		MaxPollRecords:   []int{50, 200, 1000}[rng.IntN(3)],
		ToolLatency:      time.Duration(rng.IntN(900)) * time.Millisecond,
		SessionTimeout:   time.Duration(1500+rng.IntN(2000)) * time.Millisecond,
		DrainTimeout:     time.Duration(2+rng.IntN(4)) * time.Second,
		TxnTimeout:       time.Duration(5+rng.IntN(6)) * time.Second,
		SnapshotInterval: time.Duration(2+rng.IntN(6)) * time.Second,
		SlowPercent:      rng.IntN(8),
		Kafka:            []string{"4.4", "3.9"}[rng.IntN(2)],
		ClientPercent:    10 + rng.IntN(30),
		ToolMaxInFlight:  map[string]int{},
		Weights:          map[string]int{},
	}
	for _, t := range toolNames {
		p.ToolMaxInFlight[t] = []int{0, 1, 2, 8}[rng.IntN(4)]
	}
	if c.Members > 0 {
		p.Members = c.Members
	}
	if c.Partitions > 0 {
		p.Partitions = int32(c.Partitions)
	}
	if c.Rate > 0 {
		p.Rate = c.Rate
	}
	p.boundQueues()
	// Swarm testing: each run injects a random subset of the allowed
	// kinds, each with a random weight, so that some runs are dense in
	// one kind of trouble instead of every run thin in all of them.
	for _, f := range c.Faults {
		if f == FaultLeaders && p.Brokers == 1 {
			continue
		}
		if rng.IntN(3) > 0 {
			p.Faults = append(p.Faults, f)
			p.Weights[f] = 1 + rng.IntN(4)
		}
	}
	if len(p.Faults) == 0 && len(c.Faults) > 0 {
		f := c.Faults[rng.IntN(len(c.Faults))]
		if f != FaultLeaders || p.Brokers > 1 {
			p.Faults, p.Weights[f] = []string{f}, 1
		}
	}
	return p
}

// boundQueues raises a tool's max_in_flight where the run's load would
// outgrow it: a queue that only grows holds every later call past its
// pending_ttl and pauses the members' polls, and the run would end with
// intents no member reached in time, an overload the run did not mean to
// test. Each tool keeps room for twice its share of the rate at its mean
// latency (with 50 ms for the request itself).
func (p *params) boundQueues() {
	perCall := p.ToolLatency.Seconds()/2 + 0.05
	// One member may hold every partition: its overall bound alone must
	// carry the load.
	p.MaxInFlight = max(p.MaxInFlight, int(math.Ceil(2*p.Rate*perCall)))
	for _, m := range chaos.ToolMix {
		n := p.ToolMaxInFlight[m.Tool]
		if n == 0 {
			continue
		}
		need := int(math.Ceil(2 * p.Rate * float64(m.Weight) / 100 * perCall))
		p.ToolMaxInFlight[m.Tool] = max(n, need)
	}
}
