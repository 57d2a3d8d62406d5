package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

// lookupWait bounds the wait for the executor's answer to a lookup, as a
// produce is bounded (produceTimeout): the answer comes within a tick
// of the executor that owns the key.
const lookupWait = 10 * time.Second

// errNoAnswer: a lookup's intent was produced, and no answer came within
// lookupWait (no executor owns the key's partition now, or it is slow).
var errNoAnswer = errors.New("gateway: no answer to the lookup")

// lookup asks the executor what the key's record says (a lookup intent:
// one read of its view, nothing recorded) and returns the answer with
// how a request ends on it; a nil answer when the key has no record for
// t (never called, expired, another tenant's or another tool's: the
// tenant is the caller's, so another tenant's key is simply not found).
// The lookup limiter bounds them (limit.go): a *limitError when the
// tenant (or the instance) may not wait. An executor that rejects the type (a version before lookups)
// is answered from a scan of the event log instead (scanLog).
func (g *Gateway) lookup(ctx context.Context, tenant string, t *tool, key string) (*wire.Result, answerState, error) {
	start := time.Now()
	release, err := g.lookups.acquire(ctx, tenant, lookupShare)
	err = lookupRefusal(err)
	g.m.admitted(tenant, kindLookup, err, time.Since(start))
	if err != nil {
		return nil, 0, err
	}
	defer release()
	defer func() { g.m.lookupSeconds.Observe(time.Since(start).Seconds()) }()
	res, err := g.ask(ctx, tenant, t, key)
	switch {
	case err != nil:
		return nil, 0, err
	case res.Status == codes.StatusRejected && res.Error != nil && res.Error.Code == codes.ReasonInvalidField:
		return g.lookupInLog(ctx, tenant, t, key)
	case errors.Is(res.Refusal(), wire.ErrNoRecord):
		return nil, 0, nil
	}
	return lookupAnswer(res)
}

// ask produces the lookup intent and waits for its one answer.
func (g *Gateway) ask(ctx context.Context, tenant string, t *tool, key string) (*wire.Result, error) {
	in := wire.Intent{V: wire.Version, Type: wire.TypeLookup, ID: client.NewID(), Tenant: tenant, Key: key, Tool: t.name(), ReplyTo: g.replyTopic}
	pctx, cancel := context.WithTimeout(ctx, produceTimeout)
	p, err := g.client.Start(pctx, in)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %w", errUnavailable, err)
	}
	defer p.Close()
	wctx, wcancel := context.WithTimeout(ctx, lookupWait)
	defer wcancel()
	res, err := p.Next(wctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %w", errNoAnswer, err)
	}
	return res, nil
}

// lookupAnswer is the body and state of a GET from the executor's answer
// to a lookup: the key's answer as the original call's (its intent id),
// running (202) while the call runs within its pending_ttl, in doubt
// (202) after it, the outcome (200) once settled.
func lookupAnswer(res *wire.Result) (*wire.Result, answerState, error) {
	c := *res
	c.IntentID, c.Type = res.OriginalIntentID, wire.TypeCall
	switch {
	case res.Status == codes.StatusPending && res.Error != nil && res.Error.Code == codes.ErrRunning:
		c.Status, c.Error, c.WasReplay = StatusRunning, nil, false
		return &c, stateRunning, nil
	case !codes.Terminal(res.Status):
		return &c, stateInDoubt, nil
	}
	return &c, stateDone, nil
}

// lookupInLog answers a lookup from the event log.
func (g *Gateway) lookupInLog(ctx context.Context, tenant string, t *tool, key string) (*wire.Result, answerState, error) {
	rec, err := g.scanLog(ctx, tenant, key)
	if err != nil || rec == nil || rec.Tool != t.name() {
		return nil, 0, err
	}
	res, state := recordAnswer(rec, time.Now().UnixMilli())
	return res, state, nil
}

// The limits of the key lookups, as a 429 names them.
const (
	limitTenantLookups  = "tenant_lookups"
	limitGatewayLookups = "gateway_lookups"
)

// lookupRefusal turns a refusal of the lookup limiter into the limit it
// names; other errors (the caller went away) stay.
func lookupRefusal(err error) error {
	switch {
	case errors.Is(err, errBusy):
		return &limitError{Limit: limitTenantLookups, RetryAfter: retryBusy, Detail: fmt.Sprintf(
			"too many key lookups at once: at most %d per tenant run or wait; retry after %d s", maxTenantQueued, retryBusy)}
	case errors.Is(err, errFull):
		return &limitError{Limit: limitGatewayLookups, RetryAfter: retryBusy, Detail: fmt.Sprintf(
			"too many key lookups at once at this gateway instance: at most %d run or wait; retry after %d s", maxQueuedLookups, retryBusy)}
	}
	return err
}
