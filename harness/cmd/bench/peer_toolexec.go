package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"time"
)

// toolexecPeer is our side of the peer comparison: an executor member
// with the HTTP tool (bench.http), and a gateway member in front of it;
// calls go through the gateway as in scenario 7. The broker is the run's
// (kfake in this process, or --brokers).
type toolexecPeer struct {
	b        *bench
	member   string // member name: topics, logs
	ex       *side
	exOpts   memberOpts
	gw       *child
	gs       *gatewaySystem
	restarts int
}

// toolexecName is the member name (topics, logs) of our side.
const toolexecName = "px"

func (b *bench) startToolexecPeer(ctx context.Context, tool *effectTool, pa *ports) (*toolexecPeer, error) {
	return b.startToolexecPeerAs(ctx, tool, pa, toolexecName, false)
}

// startToolexecPeerAs starts the pair under the member name name, both
// members recording hop events when trace is set (the one-caller
// scenario).
func (b *bench) startToolexecPeerAs(ctx context.Context, tool *effectTool, pa *ports, name string, trace bool) (*toolexecPeer, error) {
	t := &toolexecPeer{b: b, member: name}
	var err error
	if t.ex, t.exOpts, err = b.startSideWith(ctx, "executor", name, tool.url(), trace); err != nil {
		return nil, err
	}
	addr, err := pa.addr()
	if err != nil {
		t.stop()
		return nil, err
	}
	o := t.exOpts
	o.role, o.group, o.dataDir, o.httpAddr = "gateway", o.group+"-gw", filepath.Join(b.dir, name+"gw"), addr
	if t.gw, err = startChild("gateway "+name, o, filepath.Join(b.dir, name+"gw.log")); err != nil {
		t.stop()
		return nil, err
	}
	var ready struct {
		Addr string `json:"addr"`
	}
	if err := json.Unmarshal([]byte(t.gw.ready), &ready); err != nil || ready.Addr == "" {
		t.stop()
		return nil, fmt.Errorf("gateway %s: no address in %q", name, t.gw.ready)
	}
	t.gs = &gatewaySystem{base: "http://" + ready.Addr, tool: toolHTTP, processes: t.processes}
	return t, nil
}

func (t *toolexecPeer) name() string { return "toolexec" }

func (t *toolexecPeer) call(ctx context.Context, hc *http.Client, key string, n int) (callAnswer, error) {
	return t.gs.call(ctx, hc, key, n)
}

func (t *toolexecPeer) procs() []proc { return t.processes() }

// brokerProc names the real broker's process (--broker-pid).
const brokerProc = "broker"

// processes are the executor and the gateway, and the broker when its
// pid was given (a real broker; kfake lives in the bench process).
func (t *toolexecPeer) processes() []proc {
	ps := []proc{{"executor", t.ex.child.pid()}, {"gateway", t.gw.pid()}}
	if pid := t.b.cfg.peer.brokerPID; pid > 0 {
		ps = append(ps, proc{brokerProc, pid})
	}
	return ps
}

func (t *toolexecPeer) killTarget() string { return "executor" }

// kill SIGKILLs the executor; the gateway and the broker stay.
func (t *toolexecPeer) kill() {
	t.ex.child.killHard()
	t.ex.child = nil
}

// restart starts an executor on the same topics, group and data
// directory, and waits until it answers on every partition.
func (t *toolexecPeer) restart(ctx context.Context) error {
	t.restarts++
	env := t.ex.tgt.env
	t.ex.tgt.close()
	t.ex.tgt = nil
	s, err := t.b.launchSide(ctx, t.exOpts, env, fmt.Sprintf("%sr%d", t.member, t.restarts))
	if err != nil {
		return err
	}
	t.ex = s
	return nil
}

func (t *toolexecPeer) stop() {
	if t.gw != nil {
		if err := t.gw.stop(); err != nil {
			progress("peers: %v", err)
		}
	}
	if t.ex != nil {
		if err := t.ex.stop(); err != nil {
			progress("peers: %v", err)
		}
	}
}

// warmCalls is how many calls a system answers before it is measured:
// connections, pools and the first JIT-less paths are set up.
const warmCalls = 20

// warmHTTP makes sure a system answers: warmCalls calls with new keys,
// retried for a while (a freshly registered Restate deployment may take a
// moment to be routable).
func warmHTTP(ctx context.Context, sys httpSystem, tag string) error {
	hc := newLoadClient(1)
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(peerStartTimeout)
	for i := 0; i < warmCalls; {
		a, err := sys.call(ctx, hc, fmt.Sprintf("%s-%d", tag, i), i)
		if err == nil && a.status == "succeeded" {
			i++
			continue
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: warm-up call %d: %v (status %q)", sys.name(), i, err, a.status)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}
