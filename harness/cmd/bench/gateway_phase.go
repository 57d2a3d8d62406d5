package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
)

// gatewayPhases is scenario 7: the same closed loop of httpClients
// outstanding calls of the no-op tool, first produced straight to Kafka
// (the agent path every other scenario uses), then as HTTP requests
// through a gateway process in front of the same executor. The difference
// in latency is what the gateway adds (its Kafka round trip through its
// reply topic, JSON, auth, schema validation); its CPU time per call is
// measured in its own process.
func (b *bench) gatewayPhases(ctx context.Context, r int, rd *round, ex *side) error {
	name := fmt.Sprintf("g%d", r)
	o := memberOpts{role: "gateway", brokers: b.br.seeds, prefix: ex.tgt.env.prefix, group: ex.tgt.env.group + "-gw",
		partitions: int(b.cfg.partitions), dataDir: filepath.Join(b.dir, name), slowLatency: b.cfg.slowLatency, slowInFlight: b.cfg.slowInFlight}
	gw, err := startChild("gateway "+name, o, filepath.Join(b.dir, name+".log"))
	if err != nil {
		return err
	}
	defer func() { _ = gw.stop() }()
	var ready struct {
		Addr string `json:"addr"`
	}
	if err := json.Unmarshal([]byte(gw.ready), &ready); err != nil || ready.Addr == "" {
		return fmt.Errorf("gateway %s: no address in %q", name, gw.ready)
	}
	progress("  executor: Kafka path, %d outstanding", b.cfg.httpClients)
	if rd.kafkaPath, _, err = b.measure(ctx, ex, fmt.Sprintf("k%d", r), func(ph *phase) error {
		return ex.tgt.closedLoop(ctx, ph, b.cfg.httpClients, uniqueKeys(fmt.Sprintf("k%d", r), toolNoop))
	}); err != nil {
		return err
	}
	progress("  gateway: HTTP path, %d clients", b.cfg.httpClients)
	if r == 0 && b.cfg.cpuProfile != "" {
		if err := gw.do("cpu "+b.cfg.cpuProfile+".gateway.pprof", nil); err != nil {
			return err
		}
	}
	rd.httpPath, rd.gatewayC, err = b.httpLoad(ctx, gw, "http://"+ready.Addr, fmt.Sprintf("w%d", r))
	if err != nil {
		return err
	}
	return gw.stop() // stops the profile too
}

// httpLoad runs httpClients clients, each sending its next call as soon as
// the last one is answered, for warm + duration, and returns the phase and
// the gateway process's counters over it.
func (b *bench) httpLoad(ctx context.Context, gw *child, base, tag string) (phaseResult, counters, error) {
	c0, err := gw.stats()
	if err != nil {
		return phaseResult{}, counters{}, err
	}
	host := selfCPU()
	ph := newPhase(tag, b.cfg.warm, b.cfg.duration)
	hc := newLoadClient(b.cfg.httpClients)
	defer hc.CloseIdleConnections()
	sys := &gatewaySystem{base: base, tool: toolNoop, processes: func() []proc { return nil }}
	httpClosedLoop(ctx, ph, sys, hc, b.cfg.httpClients, uniqueHTTPKeys(tag))
	c1, err := gw.stats()
	if err != nil {
		return phaseResult{}, counters{}, err
	}
	res := ph.result()
	res.HostCPU = perOr0(selfCPU()-host, float64(res.Answers))
	if res.Err != nil {
		return res, counters{}, fmt.Errorf("gateway phase %s: %w", tag, res.Err)
	}
	return res, c1.sub(c0), nil
}
