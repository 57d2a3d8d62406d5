package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/gateway"
	"github.com/atmostonce/toolexec/wire"
)

// The flood scenario (--scenario flood): what one tenant's flood of calls
// does to another tenant's calls of another tool. Tenant A sends calls of
// a shared slow tool (--flood-slow-latency, max_in_flight
// --flood-slow-max-in-flight) at --flood-rate a second from
// --flood-senders senders, without waiting for their answers (Prefer:
// wait=0, or a produce and nothing more); tenant B calls the no-op tool
// every --flood-every and waits for each answer (at most the gateway's
// default wait, 10 s). B runs alone for --flood-quiet, then with A for
// --flood-duration: B's latency quiet and flooded in the same run is the
// figure. Run once through a gateway (tenants with the product's default
// limits) and once produced straight to Kafka (what the executor alone
// makes of the flood), each with a fresh executor.
type floodConfig struct {
	modes           []string // "gateway", "kafka"
	quiet, duration time.Duration
	rate            float64
	senders         int
	slow            time.Duration
	slowInFlight    int
	every           time.Duration
	bWait           time.Duration // how long B waits for an answer
	tenantsFile     string        // written by the scenario
}

// The flood's tenants and their gateway tokens.
const (
	floodTenantA = "flood-a"
	floodTenantB = "flood-b"
)

func floodToken(tenant string) string { return tenant + "-token" }

// floodRun is one mode's figures.
type floodRun struct {
	Mode string `json:"mode"`
	// B's latencies: alone, and while A floods.
	Quiet, Flooded []time.Duration `json:"-"`
	// B's calls without an answer within bWait (a 202 through the
	// gateway), by phase.
	QuietLate, FloodedLate int
	// A's calls by outcome: "202", "429 <limit>", "produced", other
	// statuses, "error".
	A map[string]int
	// The gateway process over the flooded phase: CPU seconds and
	// requests served (A's and B's).
	GatewayCPU      float64
	GatewayRequests int
	// The executor process over the flooded phase.
	ExecutorCPU float64
}

// floodScenario runs the flood in every mode.
func (b *bench) floodScenario(ctx context.Context) ([]floodRun, error) {
	fc := b.cfg.flood
	fc.tenantsFile = filepath.Join(b.dir, "flood-tenants.yaml")
	if err := writeFloodTenants(fc.tenantsFile); err != nil {
		return nil, err
	}
	var runs []floodRun
	for i, mode := range fc.modes {
		progress("flood %d/%d: %s, A %g calls/s of a %s tool (max_in_flight %d) from %d senders for %s, B every %s (quiet %s first)",
			i+1, len(fc.modes), mode, fc.rate, fc.slow, fc.slowInFlight, fc.senders, fc.duration, fc.every, fc.quiet)
		r, err := b.floodOnce(ctx, fc, mode, fmt.Sprintf("f%d", i))
		if err != nil {
			return runs, fmt.Errorf("flood %s: %w", mode, err)
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// writeFloodTenants writes the two tenants, with the product's default
// limits (the file sets none).
func writeFloodTenants(path string) error {
	s := "tenants:\n"
	for _, t := range []string{floodTenantA, floodTenantB} {
		s += fmt.Sprintf("  - name: %s\n    tokens: [%q]\n", t, gateway.HashToken(floodToken(t)))
	}
	return os.WriteFile(path, []byte(s), 0o600)
}

// floodOnce runs one mode with a fresh executor (and gateway).
func (b *bench) floodOnce(ctx context.Context, fc floodConfig, mode, name string) (floodRun, error) {
	e, err := b.br.newEnv(ctx, name, b.cfg.partitions)
	if err != nil {
		return floodRun{}, err
	}
	o := memberOpts{role: "executor", brokers: b.br.seeds, prefix: e.prefix, group: e.group, partitions: int(b.cfg.partitions),
		dataDir: filepath.Join(b.dir, name), slowLatency: fc.slow, slowInFlight: fc.slowInFlight}
	ex, err := b.launchSide(ctx, o, e, name)
	if err != nil {
		return floodRun{}, err
	}
	defer ex.stop()
	d, gw, err := b.floodDriver(ctx, fc, mode, e, name)
	if err != nil {
		return floodRun{}, err
	}
	defer d.close()
	run := floodRun{Mode: mode, A: map[string]int{}}
	if err := floodPhases(ctx, fc, d, ex.child, gw, &run); err != nil {
		return run, err
	}
	if gw != nil {
		if err := gw.stop(); err != nil {
			return run, err
		}
	}
	return run, ex.stop()
}

// floodDriver makes the callers of a mode: HTTP through a gateway member
// (returned, to measure), or a Kafka client.
func (b *bench) floodDriver(ctx context.Context, fc floodConfig, mode string, e *env, name string) (floodCaller, *child, error) {
	if mode == "kafka" {
		cl, err := client.New(ctx, client.Config{Brokers: b.br.seeds, Prefix: e.prefix, ClientOpts: kafkaOpts})
		if err != nil {
			return nil, nil, err
		}
		return &kafkaFlood{cl: cl, wait: fc.bWait, outs: map[string]int{}}, nil, nil
	}
	o := memberOpts{role: "gateway", brokers: b.br.seeds, prefix: e.prefix, group: e.group + "-gw", partitions: int(b.cfg.partitions),
		dataDir: filepath.Join(b.dir, name+"g"), slowLatency: fc.slow, slowInFlight: fc.slowInFlight, tenantsFile: fc.tenantsFile}
	gw, err := startChild("gateway "+name, o, filepath.Join(b.dir, name+"g.log"))
	if err != nil {
		return nil, nil, err
	}
	var ready struct {
		Addr string `json:"addr"`
	}
	if err := json.Unmarshal([]byte(gw.ready), &ready); err != nil || ready.Addr == "" {
		_ = gw.stop()
		return nil, nil, fmt.Errorf("gateway %s: no address in %q", name, gw.ready)
	}
	return &httpFlood{base: "http://" + ready.Addr, hc: newLoadClient(fc.senders + 64), wait: fc.bWait}, gw, nil
}

// floodCaller is how a mode sends the two tenants' calls.
type floodCaller interface {
	// flood sends one of A's calls of the slow tool, not waiting for its
	// answer, and says how it ended.
	flood(ctx context.Context, key string) string
	// answers waits (within the callers' wait) for the answers to A's
	// calls that flood did not wait for, and counts them by outcome; nil
	// when the mode cannot see them.
	answers() map[string]int
	// calm sends one of B's calls of the no-op tool and waits for its
	// answer: false when none came within the wait.
	calm(ctx context.Context, key string) (answered bool, err error)
	close()
}

// floodPhases runs B alone, then B with A, and fills run.
func floodPhases(ctx context.Context, fc floodConfig, d floodCaller, ex, gw *child, run *floodRun) error {
	var bw sync.WaitGroup
	var mu sync.Mutex
	var bErr error
	flooding := atomic.Bool{}
	stopB := make(chan struct{})
	bw.Go(func() {
		calmLoop(ctx, fc, d, stopB, &flooding, func(flooded bool, lat time.Duration, answered bool, err error) {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				bErr = err
			case flooded:
				run.Flooded = append(run.Flooded, lat)
				run.FloodedLate += b2i(!answered)
			default:
				run.Quiet = append(run.Quiet, lat)
				run.QuietLate += b2i(!answered)
			}
		})
	})
	sleepCtx(ctx, fc.quiet)
	g0, x0, err := floodStats(gw, ex)
	if err != nil {
		return err
	}
	flooding.Store(true)
	floodLoop(ctx, fc, d, &mu, run.A)
	close(stopB)
	bw.Wait()
	for out, n := range d.answers() {
		run.A[out] += n
	}
	g1, x1, err := floodStats(gw, ex)
	if err != nil {
		return err
	}
	run.GatewayCPU, run.ExecutorCPU = g1.CPUSec-g0.CPUSec, x1.CPUSec-x0.CPUSec
	run.GatewayRequests = int(g1.Intents - g0.Intents)
	return bErr
}

func floodStats(gw, ex *child) (counters, counters, error) {
	var g counters
	if gw != nil {
		var err error
		if g, err = gw.stats(); err != nil {
			return g, counters{}, err
		}
	}
	x, err := ex.stats()
	return g, x, err
}

// calmLoop sends one of B's calls every fc.every, each on its own
// goroutine (a slow answer does not delay the next call), until stop,
// and reports each with whether A was flooding when it was sent; it
// returns when every call sent has its answer.
func calmLoop(ctx context.Context, fc floodConfig, d floodCaller, stop chan struct{}, flooding *atomic.Bool,
	report func(flooded bool, lat time.Duration, answered bool, err error)) {
	tick := time.NewTicker(fc.every)
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for seq := 0; ; seq++ {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		flooded := flooding.Load()
		wg.Go(func() {
			start := time.Now()
			answered, err := d.calm(ctx, "calm-"+strconv.Itoa(seq))
			report(flooded, time.Since(start), answered, err)
		})
	}
}

// floodLoop sends A's calls on schedule, fc.rate a second, from
// fc.senders senders (a sender that falls behind sends at once), for
// fc.duration, and counts their outcomes.
func floodLoop(ctx context.Context, fc floodConfig, d floodCaller, mu *sync.Mutex, outcomes map[string]int) {
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range fc.senders {
		wg.Go(func() {
			for ctx.Err() == nil {
				seq := next.Add(1) - 1
				at := time.Duration(float64(seq) / fc.rate * float64(time.Second))
				if at >= fc.duration {
					return
				}
				sleepCtx(ctx, time.Until(start.Add(at)))
				out := d.flood(ctx, "flood-"+strconv.FormatInt(seq, 10))
				mu.Lock()
				outcomes[out]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// httpFlood sends both tenants' calls through a gateway.
type httpFlood struct {
	base string
	hc   *http.Client
	wait time.Duration
}

func (h *httpFlood) flood(ctx context.Context, key string) string {
	rep, err := postJSON(ctx, h.hc, h.base+"/v1/tools/"+toolSlow+"/calls", callBody(key, 0), map[string]string{
		"Authorization": "Bearer " + floodToken(floodTenantA), "Idempotency-Key": key, "Prefer": "wait=0"})
	if err != nil {
		return "error"
	}
	if rep.code == http.StatusTooManyRequests {
		var p struct {
			Limit string `json:"limit"`
		}
		_ = json.Unmarshal(rep.body, &p)
		return "429 " + p.Limit
	}
	return strconv.Itoa(rep.code)
}

func (h *httpFlood) calm(ctx context.Context, key string) (bool, error) {
	rep, err := postJSON(ctx, h.hc, h.base+"/v1/tools/"+toolNoop+"/calls", callBody(key, 0), map[string]string{
		"Authorization": "Bearer " + floodToken(floodTenantB), "Idempotency-Key": key,
		"Prefer": "wait=" + strconv.Itoa(int(h.wait/time.Second))})
	if err != nil {
		return false, err
	}
	a, err := gatewayAnswer(rep.code, rep.body)
	if err != nil {
		return false, err
	}
	return rep.code == http.StatusOK && a.status != "", nil
}

// answers: through the gateway A's calls are answered 202 (Prefer:
// wait=0) before the executor decides them.
func (h *httpFlood) answers() map[string]int { return nil }

func (h *httpFlood) close() { h.hc.CloseIdleConnections() }

// kafkaFlood sends both tenants' intents straight to the intents topic,
// as a trusted producer does.
type kafkaFlood struct {
	cl   *client.Client
	wait time.Duration
	// A's answers, awaited apart from the sends: the executor's refusals
	// (not_executed over_share) come at once, its calls after the queue.
	waits sync.WaitGroup
	mu    sync.Mutex
	outs  map[string]int
}

func (k *kafkaFlood) flood(ctx context.Context, key string) string {
	p, err := k.cl.Start(ctx, wire.Intent{Tenant: floodTenantA, Key: key, Tool: toolSlow, Args: map[string]any{"n": 0}})
	if err != nil {
		return "error"
	}
	k.waits.Go(func() { // the sender goes on: Prefer: wait=0's equivalent
		defer p.Close()
		wctx, cancel := context.WithTimeout(ctx, k.wait)
		defer cancel()
		out := "no answer"
		if res, err := p.Wait(wctx); err == nil {
			out = "answered " + res.Status
			if res.Error != nil {
				out += " " + res.Error.Code
			}
		}
		k.mu.Lock()
		k.outs[out]++
		k.mu.Unlock()
	})
	return "produced"
}

func (k *kafkaFlood) answers() map[string]int {
	k.waits.Wait()
	k.mu.Lock()
	defer k.mu.Unlock()
	return maps.Clone(k.outs)
}

func (k *kafkaFlood) calm(ctx context.Context, key string) (bool, error) {
	cctx, cancel := context.WithTimeout(ctx, k.wait)
	defer cancel()
	res, err := k.cl.Call(cctx, wire.Intent{Tenant: floodTenantB, Key: key, Tool: toolNoop, Args: map[string]any{"n": 0}})
	if err != nil && cctx.Err() != nil && ctx.Err() == nil {
		return false, nil // no answer within the wait
	}
	if err != nil {
		return false, err
	}
	return res != nil, nil
}

func (k *kafkaFlood) close() { k.cl.Close() }

// floodFigures are one run's derived figures.
type floodFigures struct {
	QuietP50, QuietP99, FloodP50, FloodP99 float64 // ms
	P50Ratio, P99Ratio                     float64
	QuietN, FloodN                         int
}

func (r floodRun) figures() floodFigures {
	q, f := slices.Sorted(slices.Values(r.Quiet)), slices.Sorted(slices.Values(r.Flooded))
	ff := floodFigures{QuietP50: ms(quantile(q, 0.5)), QuietP99: ms(quantile(q, 0.99)), FloodP50: ms(quantile(f, 0.5)), FloodP99: ms(quantile(f, 0.99)),
		QuietN: len(q), FloodN: len(f)}
	ff.P50Ratio, ff.P99Ratio = perOr0(ff.FloodP50, ff.QuietP50), perOr0(ff.FloodP99, ff.QuietP99)
	return ff
}
