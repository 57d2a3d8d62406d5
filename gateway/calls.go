package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

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
	tool        string
	key         string
	args        map[string]any
	wait        time.Duration
	traceparent string // the caller's, passed on as it came when tracing is off
	tracestate  string // an MCP call's _meta tracestate
}

// reply is what came back within the wait.
type reply struct {
	intent wire.Intent
	res    *wire.Result // the last answer; nil when none came
	done   bool         // res is terminal
}

// send produces the intent and waits up to req.wait for its terminal
// answer. A pending answer (in doubt) does not end the wait: the key may
// settle within it. It returns ctx's error when the caller went away.
func (g *Gateway) send(ctx context.Context, req intentReq) (reply, error) {
	in := wire.Intent{Type: req.typ, Tenant: req.tenant, Key: req.key, Tool: req.tool, Args: req.args}
	if in.Args == nil && req.typ == wire.TypeCall {
		in.Args = map[string]any{}
	}
	pctx, cancel := context.WithTimeout(ctx, produceTimeout)
	span, opts := g.produceSpan(ctx, req)
	p, err := g.client.Start(pctx, in, opts...)
	endProduceSpan(span, err)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return reply{}, ctx.Err()
		}
		return reply{}, fmt.Errorf("%w: %w", errUnavailable, err)
	}
	defer p.Close()
	g.m.waiting.Inc()
	defer g.m.waiting.Dec()
	wctx, wcancel := context.WithTimeout(ctx, req.wait)
	defer wcancel()
	res, err := p.Wait(wctx)
	if err != nil && ctx.Err() != nil {
		return reply{intent: p.Intent()}, ctx.Err()
	}
	return reply{intent: p.Intent(), res: res, done: err == nil}, nil
}
