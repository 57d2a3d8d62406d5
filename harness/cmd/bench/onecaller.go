package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

// The one-caller scenario (8): one caller, one call at a time, as an agent
// feels it. Every path a call can take is measured in the same run, call
// by call in turn (one call of each path per iteration), so that the
// machine's drift falls on all of them alike:
//
//   - the tool alone (the bench's HTTP tool, called directly);
//   - Kafka's floor (floor.go): a produce and its read_committed consume,
//     one transaction and the read_committed consume of its record;
//   - the gateway: a new key, then a replay of that key;
//   - the Kafka-direct client (client.Call): a new key, then its replay.
//
// A new key needs a hop (the intent), two committed transactions (the
// started event, the outcome with the answer) and the tool; a replay a hop
// and one transaction. Those sums are the floor each is held against.
const (
	pathTool          = "tool"
	pathProduce       = "kafka_produce"
	pathTxn           = "kafka_txn"
	pathGatewayNew    = "gateway_new"
	pathGatewayReplay = "gateway_replay"
	pathClientNew     = "client_new"
	pathClientReplay  = "client_replay"
)

var oneCallerPaths = []string{pathTool, pathProduce, pathTxn, pathGatewayNew, pathGatewayReplay, pathClientNew, pathClientReplay}

// oneCallerWarm calls are made on every path before the measured ones:
// connections, metadata, producer ids, the executor's first restores.
const oneCallerWarm = 20

// oneCallerResult is scenario 8's figures.
type oneCallerResult struct {
	calls int
	lat   map[string][]time.Duration // by path, sorted
	hops  *hopBreakdown              // the gateway's new keys, hop by hop
	rhops *hopBreakdown              // their replays
	load  string                     // the load average when it started
}

// oneCallerSetup is what the scenario drives.
type oneCallerSetup struct {
	tool *effectTool
	fl   *floor
	peer *toolexecPeer // an executor with the HTTP tool and a gateway in front
	cl   *client.Client
	hc   *http.Client
	dump string // --trace-dump
}

// oneCallerName is the member name (topics, logs) of the scenario's
// executor and gateway.
const oneCallerName = "oc"

func (b *bench) oneCallerScenario(ctx context.Context) (*oneCallerResult, error) {
	s, err := b.startOneCaller(ctx)
	if err != nil {
		return nil, err
	}
	defer s.close()
	res := &oneCallerResult{calls: b.cfg.oneCaller, lat: map[string][]time.Duration{}, load: loadAverage()}
	progress("one caller: %d calls on each of %d paths, interleaved (tool, Kafka floor, gateway, client.Call)", b.cfg.oneCaller, len(oneCallerPaths))
	for i := -oneCallerWarm; i < b.cfg.oneCaller; i++ {
		for _, p := range oneCallerPaths {
			d, err := s.call(ctx, p, i)
			if err != nil {
				return nil, fmt.Errorf("one caller: %s call %d: %w", p, i, err)
			}
			if i >= 0 {
				res.lat[p] = append(res.lat[p], d)
			}
		}
	}
	for _, l := range res.lat {
		slices.Sort(l)
	}
	if res.hops, res.rhops, err = s.breakdown(); err != nil {
		return nil, err
	}
	return res, nil
}

func (b *bench) startOneCaller(ctx context.Context) (_ *oneCallerSetup, err error) {
	s := &oneCallerSetup{hc: newLoadClient(1), dump: b.cfg.traceDump}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	pa := &ports{next: b.cfg.peer.portBase}
	addr, err := pa.addr()
	if err != nil {
		return nil, err
	}
	if s.tool, err = startEffectTool(addr); err != nil {
		return nil, err
	}
	if s.fl, err = b.newFloor(ctx); err != nil {
		return nil, err
	}
	if s.peer, err = b.startToolexecPeerAs(ctx, s.tool, pa, oneCallerName, true); err != nil {
		return nil, err
	}
	env := s.peer.ex.tgt.env
	s.cl, err = client.New(ctx, client.Config{Brokers: b.br.seeds, Prefix: env.prefix, ClientOpts: append(kafkaOpts, consumeOpts()...)})
	return s, err
}

func (s *oneCallerSetup) close() {
	if s.cl != nil {
		s.cl.Close()
	}
	if s.peer != nil {
		s.peer.stop()
	}
	if s.fl != nil {
		s.fl.close()
	}
	if s.tool != nil {
		s.tool.close()
	}
	s.hc.CloseIdleConnections()
}

// call makes call i of path p and returns its latency. The replays repeat
// the key the path's new call of the same iteration just completed.
func (s *oneCallerSetup) call(ctx context.Context, p string, i int) (time.Duration, error) {
	n := i + oneCallerWarm // keys of warm-up calls must not collide with measured ones
	key := func(tag string) string { return oneCallerName + "-" + tag + "-" + strconv.Itoa(n) }
	start := time.Now()
	var err error
	switch p {
	case pathTool:
		_, err = postJSON(ctx, s.hc, s.tool.url(), callBody(key("t"), n), nil)
	case pathProduce:
		return s.fl.produce(ctx, n)
	case pathTxn:
		return s.fl.transaction(ctx, n)
	case pathGatewayNew, pathGatewayReplay:
		err = s.gatewayCall(ctx, key("g"), n, p == pathGatewayReplay)
	case pathClientNew, pathClientReplay:
		err = s.clientCall(ctx, key("c"), n, p == pathClientReplay)
	}
	return time.Since(start), err
}

// errUnexpectedAnswer: a new key answered as a replay, or the reverse, or
// not succeeded.
var errUnexpectedAnswer = errors.New("unexpected answer")

func (s *oneCallerSetup) gatewayCall(ctx context.Context, key string, n int, replay bool) error {
	a, err := s.peer.gs.call(ctx, s.hc, key, n)
	if err != nil {
		return err
	}
	return checkAnswer(a.status, a.replay, replay)
}

func (s *oneCallerSetup) clientCall(ctx context.Context, key string, n int, replay bool) error {
	cctx, cancel := context.WithTimeout(ctx, floorWait)
	defer cancel()
	res, err := s.cl.Call(cctx, wire.Intent{Tenant: benchTenant, Key: key, Tool: toolHTTP, Args: map[string]any{"key": key, "n": n}})
	if err != nil {
		return err
	}
	return checkAnswer(res.Status, res.WasReplay, replay)
}

func checkAnswer(status string, wasReplay, replay bool) error {
	if status != codes.StatusSucceeded || wasReplay != replay {
		return fmt.Errorf("%w: %s, was_replay %v (a replay expected: %v)", errUnexpectedAnswer, status, wasReplay, replay)
	}
	return nil
}

// quantiles of one path: p50, p90, p99 in ms.
func (r *oneCallerResult) quantiles(p string) (p50, p90, p99 float64) {
	l := r.lat[p]
	return ms(quantile(l, 0.5)), ms(quantile(l, 0.9)), ms(quantile(l, 0.99))
}
