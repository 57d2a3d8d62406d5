package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// report gathers the rounds and the restore figures and prints them.
type report struct {
	cfg       config
	runPrefix string
	rounds    []*round
	restore   *restoreResult
	keys      *keysResult
	peers     *peerResults // --peer
	oneCaller *oneCallerResult
	flood     []floodRun // --scenario flood
	elapsed   time.Duration
}

// stat is one figure over the rounds: the median is reported, with the
// spread (min..max) when there is more than one round.
type stat []float64

func (s stat) med() float64 {
	if len(s) == 0 {
		return 0
	}
	c := slices.Clone([]float64(s))
	slices.Sort(c)
	if n := len(c); n%2 == 0 {
		return (c[n/2-1] + c[n/2]) / 2
	}
	return c[len(c)/2]
}

// show formats the median with verb, and the spread when there is one.
func (s stat) show(verb string) string {
	if len(s) == 0 {
		return "-"
	}
	out := fmt.Sprintf(verb, s.med())
	if len(s) > 1 {
		out += fmt.Sprintf(" ["+verb+".."+verb+"]", slices.Min(s), slices.Max(s))
	}
	return out
}

// over collects f of every round.
func (r *report) over(f func(*round) float64) stat {
	var s stat
	for _, rd := range r.rounds {
		s = append(s, f(rd))
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func perOr0(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// figures are the headline numbers, medians over the rounds.
type figures struct {
	execRate, baseRate, ratio            stat
	p50, p99, baseP50, baseP99           stat // at half the executor's saturating rate
	satP50, satP99, baseSatP50, baseSP   stat
	halfRate                             stat
	replayRate, replayTotal, replayX     stat
	slowRate, slowFrac                   stat
	intentsPerTxn, intentsPerFsync       stat
	inputsPerTxn, halfPerTxn             stat
	execCPU, baseCPU, txnMs, basePerTxn  stat // CPU µs per intent, ms per transaction end
	loadMB, baseMB                       stat
	execHost, baseHost                   stat // bench process CPU µs per answer
	replayCPU                            stat // executor CPU µs per intent in the replay phase
	tickMs, loopBusy, txnShare           stat // saturated: ms per committed tick, tick time / wall, txn end / tick time
	baseTxnMs                            stat // baseline: ms per End, saturated
	httpRate, kafkaRate                  stat // scenario 7: answers/s, httpClients outstanding
	httpP50, httpP99, kafkaP50, kafkaP99 stat
	addedP50, addedP99                   stat // HTTP minus Kafka path, ms
	gwCPU, gwMB                          stat // gateway process: CPU µs per call, peak RSS
	baseReplayCPU                        stat // baseline CPU µs per intent on scenario 2's stream
}

func (r *report) figures() figures {
	return figures{
		execRate:        r.over(func(d *round) float64 { return d.execSat.Rate }),
		baseRate:        r.over(func(d *round) float64 { return d.baseSat.Rate }),
		ratio:           r.over(func(d *round) float64 { return perOr0(d.execSat.Rate, d.baseSat.Rate) }),
		p50:             r.over(func(d *round) float64 { return ms(d.execHalf.P50) }),
		p99:             r.over(func(d *round) float64 { return ms(d.execHalf.P99) }),
		baseP50:         r.over(func(d *round) float64 { return ms(d.baseHalf.P50) }),
		baseP99:         r.over(func(d *round) float64 { return ms(d.baseHalf.P99) }),
		satP50:          r.over(func(d *round) float64 { return ms(d.execSat.P50) }),
		satP99:          r.over(func(d *round) float64 { return ms(d.execSat.P99) }),
		baseSatP50:      r.over(func(d *round) float64 { return ms(d.baseSat.P50) }),
		baseSP:          r.over(func(d *round) float64 { return ms(d.baseSat.P99) }),
		halfRate:        r.over(func(d *round) float64 { return d.halfRate }),
		replayRate:      r.over(func(d *round) float64 { return d.replay.ReplayRate }),
		replayTotal:     r.over(func(d *round) float64 { return d.replay.Rate }),
		replayX:         r.over(func(d *round) float64 { return perOr0(d.replay.ReplayRate, d.execSat.Rate) }),
		slowRate:        r.over(func(d *round) float64 { return d.slow.Rate }),
		slowFrac:        r.over(func(d *round) float64 { return perOr0(d.slow.Rate, d.slowLimit) }),
		intentsPerTxn:   r.over(func(d *round) float64 { return perOr0(d.execSatC.Intents, d.execSatC.Txns) }),
		intentsPerFsync: r.over(func(d *round) float64 { return perOr0(d.execSatC.Intents, d.execSatC.Fsyncs) }),
		inputsPerTxn:    r.over(func(d *round) float64 { return perOr0(d.execSatC.TxnInputs, d.execSatC.Txns) }),
		halfPerTxn:      r.over(func(d *round) float64 { return perOr0(d.execHalfC.Intents, d.execHalfC.Txns) }),
		execCPU:         r.over(func(d *round) float64 { return 1e6 * perOr0(d.execSatC.CPUSec, d.execSatC.Intents) }),
		baseCPU:         r.over(func(d *round) float64 { return 1e6 * perOr0(d.baseSatC.CPUSec, d.baseSatC.Intents) }),
		txnMs:           r.over(func(d *round) float64 { return 1e3 * perOr0(d.execSatC.TxnSec, d.execSatC.Txns) }),
		basePerTxn:      r.over(func(d *round) float64 { return perOr0(d.baseSatC.Intents, d.baseSatC.Txns) }),
		loadMB:          r.over(func(d *round) float64 { return kbToMB(d.execHWMKB) }),
		execHost:        r.over(func(d *round) float64 { return 1e6 * d.execSat.HostCPU }),
		replayCPU:       r.over(func(d *round) float64 { return 1e6 * perOr0(d.replayC.CPUSec, d.replayC.Intents) }),
		tickMs:          r.over(func(d *round) float64 { return 1e3 * perOr0(d.execSatC.TickSec, d.execSatC.Txns) }),
		baseTxnMs:       r.over(func(d *round) float64 { return 1e3 * perOr0(d.baseSatC.TxnSec, d.baseSatC.Txns) }),
		loopBusy:        r.over(func(d *round) float64 { return perOr0(d.execSatC.TickSec, d.execSat.Wall.Seconds()) }),
		txnShare:        r.over(func(d *round) float64 { return perOr0(d.execSatC.TxnSec, d.execSatC.TickSec) }),
		baseHost:        r.over(func(d *round) float64 { return 1e6 * d.baseSat.HostCPU }),
		baseMB:          r.over(func(d *round) float64 { return kbToMB(d.baseHWMKB) }),
		httpRate:        r.over(func(d *round) float64 { return d.httpPath.Rate }),
		kafkaRate:       r.over(func(d *round) float64 { return d.kafkaPath.Rate }),
		httpP50:         r.over(func(d *round) float64 { return ms(d.httpPath.P50) }),
		httpP99:         r.over(func(d *round) float64 { return ms(d.httpPath.P99) }),
		kafkaP50:        r.over(func(d *round) float64 { return ms(d.kafkaPath.P50) }),
		kafkaP99:        r.over(func(d *round) float64 { return ms(d.kafkaPath.P99) }),
		addedP50:        r.over(func(d *round) float64 { return ms(d.httpPath.P50 - d.kafkaPath.P50) }),
		addedP99:        r.over(func(d *round) float64 { return ms(d.httpPath.P99 - d.kafkaPath.P99) }),
		gwCPU:           r.over(func(d *round) float64 { return 1e6 * perOr0(d.gatewayC.CPUSec, float64(d.httpPath.Answers)) }),
		gwMB:            r.over(func(d *round) float64 { return kbToMB(d.gatewayC.HWMKB) }),
		baseReplayCPU:   r.over(func(d *round) float64 { return 1e6 * perOr0(d.baseReplayC.CPUSec, d.baseReplayC.Intents) }),
	}
}

func kbToMB(kb int64) float64 { return float64(kb) / 1024 }

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "toolexec bench: broker %s, %d partitions, phases %s + %s warm-up, %d round(s), quick=%v, %s\n\n",
		r.cfg.brokerName(), r.cfg.partitions, r.cfg.duration, r.cfg.warm, len(r.rounds), r.cfg.quick, r.elapsed.Round(time.Second))
	if r.oneCaller != nil {
		r.oneCaller.print(w)
	}
	if len(r.flood) > 0 {
		printFlood(w, r.cfg, r.flood)
	}
	if len(r.rounds) > 0 || r.restore != nil {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "scenario\tfigure\texecutor\tbaseline\tderived\ttarget\t")
		if len(r.rounds) > 0 {
			r.loadRows(tw, r.figures())
		}
		r.restoreRows(tw)
		tw.Flush()
		fmt.Fprintln(w)
	}
	if r.peers != nil {
		r.peers.print(w, r.cfg)
	}
	r.notes(w)
	fmt.Fprintln(w, r.json())
}

func row(w io.Writer, cells ...string) { fmt.Fprintln(w, strings.Join(cells, "\t")+"\t") }

func (r *report) loadRows(w io.Writer, f figures) {
	row(w, "1 unique keys", "intents/s, saturated", f.execRate.show("%.0f"), f.baseRate.show("%.0f"), "ratio "+f.ratio.show("%.2f"), verdict(f.ratio.med() >= 0.7, ">= 0.70"))
	row(w, "", "p50 / p99 ms, saturated", f.satP50.show("%.1f")+" / "+f.satP99.show("%.1f"), f.baseSatP50.show("%.1f")+" / "+f.baseSP.show("%.1f"), fmt.Sprintf("%d outstanding", r.cfg.window), "")
	row(w, "", "p50 / p99 ms, half rate", f.p50.show("%.1f")+" / "+f.p99.show("%.1f"), f.baseP50.show("%.1f")+" / "+f.baseP99.show("%.1f"), "at "+f.halfRate.show("%.0f")+"/s", verdict(f.p99.med() < 50, "p99 < 50 ms"))
	row(w, "", "CPU µs per intent (member)", f.execCPU.show("%.0f"), f.baseCPU.show("%.0f"), "ratio "+fmt.Sprintf("%.2f", perOr0(f.execCPU.med(), f.baseCPU.med())), "")
	row(w, "", "CPU µs per answer (bench: load+broker)", f.execHost.show("%.0f"), f.baseHost.show("%.0f"), "", "")
	row(w, "2 replay", "replays answered/s", f.replayRate.show("%.0f"), "", fmt.Sprintf("%.2f× unique; all answers %s/s (%.0f%% repeats)", f.replayX.med(), f.replayTotal.show("%.0f"), 100*r.cfg.dupFraction), verdict(f.replayX.med() >= 2, ">= 2× unique"))
	row(w, "", "CPU µs per intent (member)", f.replayCPU.show("%.0f"), f.baseReplayCPU.show("%.0f"), fmt.Sprintf("%.2f× unique's; ratio %.2f", perOr0(f.replayCPU.med(), f.execCPU.med()), perOr0(f.replayCPU.med(), f.baseReplayCPU.med())), "")
	limit := r.rounds[0].slowLimit
	row(w, "3 slow tool", "calls/s", f.slowRate.show("%.0f"), "", fmt.Sprintf("%s of limit %.0f/s (%d/%s)", f.slowFrac.show("%.2f"), limit, min(r.cfg.slowInFlight, executorMaxInFlight), r.cfg.slowLatency), verdict(f.slowFrac.med() >= 0.8, ">= 0.80"))
	row(w, "", "", "", "", fmt.Sprintf("one call per partition would cap at %.0f/s", float64(r.cfg.partitions)/r.cfg.slowLatency.Seconds()), "")
	row(w, "5 memory", "peak RSS MB, scenario 1", f.loadMB.show("%.0f"), f.baseMB.show("%.0f"), "", "")
	row(w, "6 group commit", "intents per txn / fsync, saturated", f.intentsPerTxn.show("%.1f")+" / "+f.intentsPerFsync.show("%.1f"), f.basePerTxn.show("%.1f")+" / -", "inputs+completions per txn "+f.inputsPerTxn.show("%.1f"), "")
	row(w, "", "intents per txn, half rate", f.halfPerTxn.show("%.1f"), "", "", "")
	row(w, "", "tick ms / txn end ms, saturated", f.tickMs.show("%.1f")+" / "+f.txnMs.show("%.1f"), "- / "+f.baseTxnMs.show("%.1f"), fmt.Sprintf("loop in ticks %.0f%% of wall; txn end %.0f%% of tick", 100*f.loopBusy.med(), 100*f.txnShare.med()), "")
	row(w, "7 gateway (HTTP)", fmt.Sprintf("calls/s, %d clients (Kafka path: same outstanding)", r.cfg.httpClients), f.httpRate.show("%.0f"), "", "Kafka path "+f.kafkaRate.show("%.0f")+"/s", "")
	row(w, "", "p50 / p99 ms", f.httpP50.show("%.1f")+" / "+f.httpP99.show("%.1f"), "", "Kafka path "+f.kafkaP50.show("%.1f")+" / "+f.kafkaP99.show("%.1f")+"; added "+f.addedP50.show("%.1f")+" / "+f.addedP99.show("%.1f"), "")
	row(w, "", "gateway CPU µs per call; peak RSS MB", f.gwCPU.show("%.0f")+"; "+f.gwMB.show("%.0f"), "", "", "")
}

func (r *report) restoreRows(w io.Writer) {
	rr, kr := r.restore, r.keys
	if rr == nil {
		return
	}
	quick := ""
	if rr.keys != 1_000_000 {
		quick = fmt.Sprintf(" (%d keys, not 1,000,000)", rr.keys)
	}
	rate := float64(rr.records) / rr.restore.Seconds()
	row(w, "4 restore", "records/s into empty Pebble"+quick, fmt.Sprintf("%.0f", rate), "", fmt.Sprintf("%d records in %.2fs; %.0f keys/s", rr.records, rr.restore.Seconds(), float64(rr.keys)/rr.restore.Seconds()), verdict(rate >= 200_000, ">= 200000"))
	row(w, "", "records/s, partitions at once", fmt.Sprintf("%.0f", float64(rr.records)/rr.parallel.Seconds()), "", fmt.Sprintf("log written at %.0f records/s", float64(rr.records)/rr.produce.Seconds()), "")
	if kr == nil {
		return
	}
	mb := kbToMB(kr.hwmKB)
	row(w, "5 memory", fmt.Sprintf("peak RSS MB, %d keys in state", kr.keys), fmt.Sprintf("%.0f", mb), "", fmt.Sprintf("then %.0f replays/s over all keys", kr.replay.Rate), verdict(mb <= 256, "<= 256 MB"))
	row(w, "", "take-over s, empty data dir: start to last partition deciding", fmt.Sprintf("%.2f", kr.takeover.Seconds()), "", fmt.Sprintf("ready (executor.New) at %.2fs, first decision at %.2fs; the executor's restores took %.2fs", kr.ready.Seconds(), kr.firstDecision.Seconds(), kr.restoreS), "")
}

func verdict(ok bool, target string) string {
	if ok {
		return target + "  ok"
	}
	return target + "  MISSED"
}

// notes lists anything that makes a figure doubtful: lost or duplicate
// answers, unexpected statuses, aborted transactions.
func (r *report) notes(w io.Writer) {
	var notes []string
	for i, d := range r.rounds {
		for name, p := range map[string]phaseResult{"executor saturated": d.execSat, "baseline saturated": d.baseSat,
			"executor half": d.execHalf, "baseline half": d.baseHalf, "replay": d.replay, "baseline replay": d.baseReplay, "slow": d.slow,
			"kafka path": d.kafkaPath, "http path": d.httpPath} {
			if p.Lost > 0 || p.Dups > 0 {
				notes = append(notes, fmt.Sprintf("round %d %s: %d lost, %d duplicate answers", i+1, name, p.Lost, p.Dups))
			}
			if odd := oddStatuses(p.Statuses); odd != "" {
				notes = append(notes, fmt.Sprintf("round %d %s: statuses %s", i+1, name, odd))
			}
			if p.Sent > 0 && p.MaxGap >= stallGap {
				notes = append(notes, fmt.Sprintf("round %d %s: STALL: no answer for %.1fs of its measured window (%d answers in it)", i+1, name, p.MaxGap.Seconds(), int(p.Rate*r.cfg.duration.Seconds())))
			}
		}
		if a := d.execSatC.Aborts + d.replayC.Aborts + d.slowC.Aborts; a > 0 {
			notes = append(notes, fmt.Sprintf("round %d: executor aborted %.0f transactions", i+1, a))
		}
	}
	slices.Sort(notes)
	for _, n := range notes {
		fmt.Fprintln(w, "note:", n)
	}
	fmt.Fprintln(w)
}

// stallGap is the time without an answer that a phase's note calls a
// stall: every phase keeps at least 32 calls outstanding, each answered
// within tens of milliseconds.
const stallGap = time.Second

func oddStatuses(m map[string]int) string {
	var odd []string
	for s, n := range m {
		if s != "succeeded" {
			odd = append(odd, fmt.Sprintf("%s=%d", s, n))
		}
	}
	slices.Sort(odd)
	return strings.Join(odd, " ")
}

// jsonReport is the last line of the output. Field names are the
// contract; see docs/PERFORMANCE.md.
type jsonReport struct {
	Unique struct {
		ExecutorPerS float64 `json:"executor_per_s"`
		BaselinePerS float64 `json:"baseline_per_s"`
		Ratio        float64 `json:"ratio"`
		P50Ms        float64 `json:"p50_ms"`
		P99Ms        float64 `json:"p99_ms"`
	} `json:"unique"`
	Replay struct {
		PerS float64 `json:"per_s"`
	} `json:"replay"`
	SlowTool struct {
		PerS            float64 `json:"per_s"`
		FractionOfLimit float64 `json:"fraction_of_limit"`
	} `json:"slow_tool"`
	Restore struct {
		RecordsPerS float64 `json:"records_per_s"`
		// TakeoverS: an executor with an empty data directory, from its
		// process's start to its first decision on the last partition of
		// the set holding meta.keys keys (scenario 5b).
		TakeoverS float64 `json:"takeover_s"`
	} `json:"restore"`
	// CPUUsPerIntent: each member's own CPU time (getrusage in its
	// process) per intent it decided, saturated unique keys and the
	// replay stream of scenario 2.
	CPUUsPerIntent struct {
		Executor cpuPair `json:"executor"`
		Baseline cpuPair `json:"baseline"`
	} `json:"cpu_us_per_intent"`
	RSSMB struct {
		Load   float64 `json:"load"`
		Keys1M float64 `json:"keys_1m"`
	} `json:"rss_mb"`
	GroupCommit struct {
		IntentsPerTxn   float64 `json:"intents_per_txn"`
		IntentsPerFsync float64 `json:"intents_per_fsync"`
	} `json:"group_commit"`
	Gateway struct {
		Clients      int     `json:"clients"`
		HTTPPerS     float64 `json:"http_per_s"`
		KafkaPerS    float64 `json:"kafka_per_s"`
		HTTPP50Ms    float64 `json:"http_p50_ms"`
		HTTPP99Ms    float64 `json:"http_p99_ms"`
		KafkaP50Ms   float64 `json:"kafka_p50_ms"`
		KafkaP99Ms   float64 `json:"kafka_p99_ms"`
		AddedP50Ms   float64 `json:"added_p50_ms"`
		AddedP99Ms   float64 `json:"added_p99_ms"`
		CPUUsPerCall float64 `json:"cpu_us_per_call"`
		RSSMB        float64 `json:"rss_mb"`
	} `json:"gateway"`
	OneCaller *jsonOneCaller `json:"one_caller,omitempty"`
	Peers     *jsonPeers     `json:"peers,omitempty"`
	Flood     []jsonFlood    `json:"flood,omitempty"`
	Meta      struct {
		Broker string `json:"broker"`
		Quick  bool   `json:"quick"`
		Rounds int    `json:"rounds"`
		Keys   int    `json:"keys"`
	} `json:"meta"`
}

type cpuPair struct {
	Unique float64 `json:"unique"`
	Replay float64 `json:"replay"`
}

func (r *report) json() string {
	var j jsonReport
	if len(r.rounds) > 0 {
		f := r.figures()
		j.Unique.ExecutorPerS, j.Unique.BaselinePerS, j.Unique.Ratio = round0(f.execRate.med()), round0(f.baseRate.med()), round3(f.ratio.med())
		j.Unique.P50Ms, j.Unique.P99Ms = round3(f.p50.med()), round3(f.p99.med())
		j.Replay.PerS = round0(f.replayRate.med())
		j.SlowTool.PerS, j.SlowTool.FractionOfLimit = round0(f.slowRate.med()), round3(f.slowFrac.med())
		j.RSSMB.Load = round0(f.loadMB.med())
		j.GroupCommit.IntentsPerTxn, j.GroupCommit.IntentsPerFsync = round3(f.intentsPerTxn.med()), round3(f.intentsPerFsync.med())
		g := &j.Gateway
		g.Clients, g.HTTPPerS, g.KafkaPerS = r.cfg.httpClients, round0(f.httpRate.med()), round0(f.kafkaRate.med())
		g.HTTPP50Ms, g.HTTPP99Ms, g.KafkaP50Ms, g.KafkaP99Ms = round3(f.httpP50.med()), round3(f.httpP99.med()), round3(f.kafkaP50.med()), round3(f.kafkaP99.med())
		g.AddedP50Ms, g.AddedP99Ms = round3(f.addedP50.med()), round3(f.addedP99.med())
		g.CPUUsPerCall, g.RSSMB = round0(f.gwCPU.med()), round0(f.gwMB.med())
		c := &j.CPUUsPerIntent
		c.Executor = cpuPair{Unique: round0(f.execCPU.med()), Replay: round0(f.replayCPU.med())}
		c.Baseline = cpuPair{Unique: round0(f.baseCPU.med()), Replay: round0(f.baseReplayCPU.med())}
	}
	if r.restore != nil {
		j.Restore.RecordsPerS = round0(float64(r.restore.records) / r.restore.restore.Seconds())
		j.Meta.Keys = r.restore.keys
	}
	if r.keys != nil {
		j.RSSMB.Keys1M = round0(kbToMB(r.keys.hwmKB))
		j.Restore.TakeoverS = round3(r.keys.takeover.Seconds())
	}
	if r.peers != nil {
		j.Peers = r.peers.json(r.cfg)
	}
	if r.oneCaller != nil {
		j.OneCaller = r.oneCaller.json()
	}
	j.Flood = floodJSON(r.flood)
	j.Meta.Broker, j.Meta.Quick, j.Meta.Rounds = "kfake", r.cfg.quick, len(r.rounds)
	if len(r.cfg.brokers) > 0 {
		j.Meta.Broker = "kafka"
	}
	b, _ := json.Marshal(j)
	return string(b)
}

func round0(x float64) float64 { return math.Round(x) }
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
