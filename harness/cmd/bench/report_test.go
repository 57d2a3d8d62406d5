package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestJSONLineHasCPUPerIntentAndTakeover(t *testing.T) {
	rd := &round{
		execSat: phaseResult{Rate: 1000}, baseSat: phaseResult{Rate: 5000},
		execSatC:    counters{CPUSec: 0.8, Intents: 10_000},
		baseSatC:    counters{CPUSec: 0.1, Intents: 10_000},
		replayC:     counters{CPUSec: 0.6, Intents: 10_000},
		baseReplayC: counters{CPUSec: 0.09, Intents: 10_000},
	}
	r := &report{rounds: []*round{rd}, restore: &restoreResult{keys: 100, records: 200, restore: time.Second},
		keys: &keysResult{takeover: 2500 * time.Millisecond}}
	var j jsonReport
	if err := json.Unmarshal([]byte(r.json()), &j); err != nil {
		t.Fatal(err)
	}
	c := j.CPUUsPerIntent
	if c.Executor != (cpuPair{Unique: 80, Replay: 60}) || c.Baseline != (cpuPair{Unique: 10, Replay: 9}) {
		t.Fatalf("cpu_us_per_intent %+v", c)
	}
	if j.Restore.TakeoverS != 2.5 {
		t.Fatalf("takeover_s %v, want 2.5", j.Restore.TakeoverS)
	}
	if strings.Contains(r.json(), `"peers"`) {
		t.Fatal("peers in the JSON line of a run without --peer")
	}
}

func peerPhaseFor(rate float64, p50 time.Duration, cpu map[string]float64, statuses map[string]int, extra int) peerPhaseResult {
	return peerPhaseResult{res: phaseResult{Rate: rate, P50: p50, P99: 2 * p50, Statuses: statuses}, cpuUs: cpu, keys: 10, extra: extra}
}

func TestPeerFiguresTakeMediansAndLeaveTheBenchOutOfTheSystemsCPU(t *testing.T) {
	mk := func(rate float64, ex float64) peerRound {
		p := peerPhaseFor(rate, 10*time.Millisecond, map[string]float64{"executor": ex, "gateway": 100, "bench": 1000}, map[string]int{"succeeded": 5}, 0)
		return peerRound{fresh: p, replay: p, dup: p}
	}
	f := peerPhaseFigures([]peerRound{mk(100, 200), mk(300, 400), mk(200, 300)}, 0)
	if f.rate.med() != 200 || f.total.med() != 400 || f.cpu["bench"].med() != 1000 {
		t.Fatalf("rate %v total %v bench %v; want 200, 400 (300+100), 1000", f.rate.med(), f.total.med(), f.cpu["bench"].med())
	}
	if f.statuses["succeeded"] != 15 || f.keys != 30 {
		t.Fatalf("statuses %v keys %d: counts add up over rounds", f.statuses, f.keys)
	}
}

func TestPeersJSONAndTablesCarryEverySystemAndTheCrashTest(t *testing.T) {
	p := peerPhaseFor(150, 20*time.Millisecond, map[string]float64{"restate-server": 500, "service": 250, "bench": 90}, map[string]int{"succeeded": 9, "in_progress": 1}, 2)
	pr := &peerResults{order: []string{"restate"}, rounds: map[string][]peerRound{"restate": {{fresh: p, replay: p, dup: p}}},
		crash: map[string]crashResult{"restate": {calls: 100, killed: "service", blocked: 100, effects: map[string]int{"2": 100}, answers: map[string]int{"succeeded": 100}}},
		load:  "1.00 1.00 1.00"}
	cfg := config{httpClients: 32, repeats: 1}
	js := pr.json(cfg).Systems["restate"]
	if js == nil || js.New.PerS != 150 || js.New.CPUUsPerCall != 750 || js.Dup.ExtraEffects != 2 || js.Crash.Effects["2"] != 100 {
		t.Fatalf("peers JSON %+v", js)
	}
	var out bytes.Buffer
	pr.print(&out, cfg)
	for _, want := range []string{"restate-server 500, service 250 (= 750); bench 90", "2 effect(s): 100 keys", "in_progress 1, succeeded 9", "2 over 10 keys"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}
