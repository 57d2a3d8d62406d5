package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

// produceTimeout bounds producing one intent, apart from the wait for its
// answer: a wait of 0 must still produce, and a broker that does not take
// the intent in this time gets the request a 503 (retry with the same key).
const produceTimeout = 10 * time.Second

// errUnavailable wraps a produce that failed: nothing was sent, or it is
// not known whether it was; either way a retry with the same key is safe.
var errUnavailable = errors.New("gateway: the broker did not take the intent")

// intentReq is one call or compensate to send. The tenant comes from the
// credential, never from the request.
type intentReq struct {
	typ         string // wire.TypeCall or wire.TypeCompensate
	tenant      string
	tool        *tool
	key         string
	args        map[string]any
	wait        time.Duration
	traceparent string // the caller's, passed on as it came when tracing is off
	tracestate  string // an MCP call's _meta tracestate
}

// refusedError is an intent the executor would reject, refused before it
// was produced: nothing was sent.
type refusedError struct{ rej *wire.Reject }

func (e *refusedError) Error() string { return e.rej.Error() }

// refusal returns the rejection of an intent refused before producing.
func refusal(err error) (*wire.Reject, bool) {
	var r *refusedError
	if errors.As(err, &r) {
		return r.rej, true
	}
	return nil, false
}

// intent builds the intent of req and checks it as the executor will
// (wire.Admit, then the tool's max_args_bytes as the saga applies it), so
// that no caller is told 202 for an intent that will be rejected.
func (g *Gateway) intent(req intentReq) (wire.Intent, error) {
	in := wire.Intent{V: wire.Version, Type: req.typ, ID: client.NewID(), Tenant: req.tenant, Key: req.key,
		Tool: req.tool.name(), Args: req.args, ReplyTo: g.replyTopic}
	if in.Args == nil && req.typ == wire.TypeCall {
		in.Args = map[string]any{}
	}
	canon, rej := wire.Admit(&in, wire.FromIntents, req.traceparent, req.tracestate)
	if rej == nil && req.typ == wire.TypeCall && len(canon) > req.tool.spec.MaxArgsBytes {
		rej = &wire.Reject{Reason: codes.ReasonOversized, Detail: fmt.Sprintf("the arguments are %d bytes in canonical form; tool %s allows %d (max_args_bytes)",
			len(canon), req.tool.name(), req.tool.spec.MaxArgsBytes)}
	}
	if rej != nil {
		return in, &refusedError{rej: rej}
	}
	return in, nil
}

// reply is what came back within the wait.
type reply struct {
	intent wire.Intent
	res    *wire.Result // the last answer; nil when none came
	done   bool         // res is terminal
}

// send checks the intent, admits it by the tenant's limits (admit.go: a
// *limitError when over one), produces it and waits up to req.wait for
// its terminal answer. A pending answer (in doubt) does not end the wait:
// the key may settle within it. It returns ctx's error when the caller
// went away.
func (g *Gateway) send(ctx context.Context, req intentReq) (reply, error) {
	in, err := g.intent(req)
	if err != nil {
		return reply{}, err
	}
	if req.typ == wire.TypeCall {
		if err := g.busy.check(req.tenant, req.tool.name()); err != nil {
			g.m.admitted(req.tenant, kindCall, err, 0)
			return reply{}, err
		}
	}
	release, err := g.admitCall(req.tenant)
	if err != nil {
		return reply{}, err
	}
	pctx, cancel := context.WithTimeout(ctx, produceTimeout)
	span, opts := g.produceSpan(ctx, req)
	p, err := g.client.Start(pctx, in, opts...)
	endProduceSpan(span, err)
	cancel()
	if err != nil {
		release()
		if ctx.Err() != nil {
			return reply{}, ctx.Err()
		}
		return reply{}, fmt.Errorf("%w: %w", errUnavailable, err)
	}
	g.m.waiting.Inc()
	defer g.m.waiting.Dec()
	wctx, wcancel := context.WithTimeout(ctx, req.wait)
	defer wcancel()
	res, err := p.Wait(wctx)
	g.holdUntilAnswered(p, req.tool, res, release)
	if err != nil && ctx.Err() != nil {
		return reply{intent: p.Intent()}, ctx.Err()
	}
	return reply{intent: p.Intent(), res: res, done: err == nil}, nil
}

// admitCall admits one call of tenant by its limits in force, and counts
// the verdict.
func (g *Gateway) admitCall(tenant string) (func(), error) {
	free, err := g.admit.admit(tenant, g.cfg.Tenants.Current().Limits(tenant))
	g.m.admitted(tenant, kindCall, err, 0)
	if err != nil {
		return nil, err
	}
	g.m.callsInFlight.Inc()
	var once sync.Once
	return func() { once.Do(func() { free(); g.m.callsInFlight.Dec() }) }, nil
}

// answerHoldMargin is how long past its tool's pending_ttl a call holds
// its place in concurrent_calls without an answer. Why a bound at all: an
// answer can be lost (an executor that died before answering, a reply
// topic deleted meanwhile), and a place held for ever would shut the
// tenant out. Why pending_ttl: no call runs longer (tools.Spec), and the
// executor answers a call in doubt when it passes; the margin covers the
// intent's wait in the executor's queues before it starts.
const answerHoldMargin = time.Minute

// holdUntilAnswered frees the call's place in its tenant's
// concurrent_calls when its answer came within the wait (res, terminal or
// in doubt), else hands the wait for it to the client, so that a caller
// who stopped waiting (Prefer: wait=0, or a wait that ended) still holds
// the place until the executor answers, or the call's pending_ttl and the
// margin pass.
//
// An answer that refuses the call for want of a place holds the tenant's
// calls of the tool at the gateway for its retry hint (busy.go), also
// when it comes after the caller stopped waiting.
func (g *Gateway) holdUntilAnswered(p *client.Pending, t *tool, res *wire.Result, release func()) {
	if res != nil {
		p.Close()
		release()
		g.busy.note(res)
		return
	}
	p.Hand(t.spec.PendingTTL+answerHoldMargin, func(res *wire.Result) { release(); g.busy.note(res) })
}
