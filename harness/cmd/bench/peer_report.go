package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

// loadAverage is /proc/loadavg's first three fields, for the record: on
// this shared 2-core machine the figures of a run mean little without it.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// peerPhaseNames name the three phases in the table and the JSON.
var peerPhaseNames = [3]string{"new", "replay", "dup"}

func (rd peerRound) phases() [3]peerPhaseResult {
	return [3]peerPhaseResult{rd.fresh, rd.replay, rd.dup}
}

// peerFigures are one system's figures in one phase, over the rounds.
type peerFigures struct {
	rate, p50, p99 stat
	cpu            map[string]stat // per process, and "bench"
	total          stat            // CPU µs per call of the system's processes (not "bench")
	statuses       map[string]int  // over all rounds
	keys, extra    int             // over all rounds
}

// peerPhaseFigures gathers phase i of every round of one system.
func peerPhaseFigures(rounds []peerRound, i int) peerFigures {
	f := peerFigures{cpu: map[string]stat{}, statuses: map[string]int{}}
	for _, rd := range rounds {
		p := rd.phases()[i]
		f.rate = append(f.rate, p.res.Rate)
		f.p50, f.p99 = append(f.p50, ms(p.res.P50)), append(f.p99, ms(p.res.P99))
		total := 0.0
		for name, us := range p.cpuUs {
			f.cpu[name] = append(f.cpu[name], us)
			if name != "bench" {
				total += us
			}
		}
		f.total = append(f.total, total)
		for s, n := range p.res.Statuses {
			f.statuses[s] += n
		}
		f.keys += p.keys
		f.extra += p.extra
	}
	return f
}

// cpuCell is "executor 120, gateway 80 (= 200); bench 30".
func (f peerFigures) cpuCell() string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(f.cpu)) {
		if name != "bench" {
			parts = append(parts, fmt.Sprintf("%s %.0f", name, f.cpu[name].med()))
		}
	}
	return fmt.Sprintf("%s (= %.0f); bench %.0f", strings.Join(parts, ", "), f.total.med(), f.cpu["bench"].med())
}

func statusCell(m map[string]int) string {
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", s, m[s]))
	}
	return strings.Join(parts, ", ")
}

func (pr *peerResults) print(w io.Writer, cfg config) {
	fmt.Fprintf(w, "peers: HTTP with Idempotency-Key, %d clients, the bench's HTTP tool; %d round(s); load average at start %s\n",
		cfg.httpClients, cfg.repeats, pr.load)
	fmt.Fprintln(w, "CPU µs per call: each process's own CPU time (/proc/<pid>/stat, its tree) over the phase / answers; bench = load generator + tool (+ kfake)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "system\tphase\tcalls/s\tp50 / p99 ms\tCPU µs per call\tanswers\textra effects\t")
	labels := [3]string{"new keys", "replays", "duplicates (pairs)"}
	for _, sys := range pr.order {
		for i := range peerPhaseNames {
			f := peerPhaseFigures(pr.rounds[sys], i)
			name := sys
			if i > 0 {
				name = ""
			}
			row(tw, name, labels[i], f.rate.show("%.0f"), f.p50.show("%.1f")+" / "+f.p99.show("%.1f"), f.cpuCell(),
				statusCell(f.statuses), fmt.Sprintf("%d over %d keys", f.extra, f.keys))
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	pr.printCrash(w)
}

func (pr *peerResults) printCrash(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "crash test\tkilled\tinside the tool\tkill to serving s\ttool effects per key\tlast answer of each call\tclients done s after release\t")
	for _, sys := range pr.order {
		c, ok := pr.crash[sys]
		if !ok {
			continue
		}
		row(tw, sys, c.killed+" (SIGKILL)", fmt.Sprintf("%d of %d", c.blocked, c.calls), fmt.Sprintf("%.1f", c.restartS),
			effectsCell(c.effects), statusCell(c.answers), fmt.Sprintf("%.1f", c.settledS))
	}
	tw.Flush()
	fmt.Fprintln(w)
}

// effectsCell is "1 effect: 100 keys" or "2 effects: 100 keys".
func effectsCell(h map[string]int) string {
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(h)) {
		parts = append(parts, fmt.Sprintf("%s effect(s): %d keys", n, h[n]))
	}
	return strings.Join(parts, "; ")
}

// The peers' part of the JSON line.
type jsonPeers struct {
	Clients int                    `json:"clients"`
	Rounds  int                    `json:"rounds"`
	LoadAvg string                 `json:"load_avg"`
	Systems map[string]*jsonSystem `json:"systems"`
}

type jsonSystem struct {
	New    jsonPeerPhase `json:"new"`
	Replay jsonPeerPhase `json:"replay"`
	Dup    jsonPeerPhase `json:"dup"`
	Crash  *jsonCrash    `json:"crash,omitempty"`
}

type jsonPeerPhase struct {
	PerS         float64            `json:"per_s"`
	P50Ms        float64            `json:"p50_ms"`
	P99Ms        float64            `json:"p99_ms"`
	CPUUsPerCall float64            `json:"cpu_us_per_call"` // the system's processes, summed
	CPUByProcess map[string]float64 `json:"cpu_us_per_call_by_process"`
	Answers      map[string]int     `json:"answers"`
	ExtraEffects int                `json:"extra_effects"`
}

type jsonCrash struct {
	Calls    int            `json:"calls"`
	Killed   string         `json:"killed"`
	Inside   int            `json:"inside_tool"`
	RestartS float64        `json:"restart_s"`
	Effects  map[string]int `json:"effects_per_key"`
	Answers  map[string]int `json:"answers"`
}

func (pr *peerResults) json(cfg config) *jsonPeers {
	j := &jsonPeers{Clients: cfg.httpClients, Rounds: cfg.repeats, LoadAvg: pr.load, Systems: map[string]*jsonSystem{}}
	for _, sys := range pr.order {
		js := &jsonSystem{}
		for i, dst := range []*jsonPeerPhase{&js.New, &js.Replay, &js.Dup} {
			*dst = peerPhaseFigures(pr.rounds[sys], i).json()
		}
		if c, ok := pr.crash[sys]; ok {
			js.Crash = &jsonCrash{Calls: c.calls, Killed: c.killed, Inside: c.blocked, RestartS: round3(c.restartS), Effects: c.effects, Answers: c.answers}
		}
		j.Systems[sys] = js
	}
	return j
}

func (f peerFigures) json() jsonPeerPhase {
	p := jsonPeerPhase{PerS: round0(f.rate.med()), P50Ms: round3(f.p50.med()), P99Ms: round3(f.p99.med()),
		CPUUsPerCall: round0(f.total.med()), CPUByProcess: map[string]float64{}, Answers: f.statuses, ExtraEffects: f.extra}
	for name, s := range f.cpu {
		p.CPUByProcess[name] = round0(s.med())
	}
	return p
}
