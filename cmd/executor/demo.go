package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	"github.com/atmostonce/toolexec/tools"
)

// demoTools are in-process tools that show the product without any setup.
// What they return is derived from the call's downstream key (one per
// call, the same on its retries), never from a process-wide counter: after
// a restart a new key must not get the id an old key replays, or a product
// about duplicates would seem to make them.
//
//   - demo.echo answers with its arguments and "call", how many times its
//     body ran for this call (1: a replay of the same key does not run it;
//     other arguments with the same key are a conflict).
//   - demo.refund takes 300 ms: send a duplicate at once and it is
//     coalesced with the call in flight. Its refund_id is rf_ and a part of
//     the downstream key.
//   - demo.lost_reply performs its effect and then loses the reply, the
//     crash window: the key is in doubt and duplicates are answered
//     "pending" until it is settled. It is irreversible: the reconciler
//     escalates it, and an operator settles it (reconciler resolve).
//   - demo.lost_refund (native_key, pending_ttl 10s) refunds and loses the
//     first answer of every key too, but honours the downstream key like
//     Stripe does: the reconciler's retry with the same key gets the
//     original refund back, and the key settles by itself.
//   - demo.transfer needs a person's approval (approval: required, 1 h):
//     the first intent of a key waits, answered pending (awaiting_approval),
//     until an operator approves it (reconciler approve, or the console)
//     and it runs once with those arguments, or denies it. Its transfer_id
//     is tr_ and a part of the downstream key.
func demoTools() (*tools.Registry, error) {
	reg := tools.NewRegistry()
	echo := &echoRuns{n: map[string]int64{}}
	lost := &lostRefunds{done: map[string]map[string]any{}}
	specs := []struct {
		spec tools.Spec
		fn   tools.Func
	}{
		{demoSpec("demo.echo", tools.NativeKey, 2*time.Minute, "Echo the arguments, with how many times this call ran (call: 1): the same key again is a replay that does not run it; other arguments with the same key are a conflict."), echo.invoke},
		{refundSpec(), func(ctx context.Context, r tools.Request) tools.Outcome {
			select {
			case <-time.After(300 * time.Millisecond):
			case <-ctx.Done():
				return tools.Outcome{Status: tools.Unknown, Code: "cancelled", Attempts: 1}
			}
			return tools.Outcome{Status: tools.Succeeded, Attempts: 1, Result: map[string]any{"refund_id": demoID("rf_", r.DownstreamKey), "amount": r.Args["amount"]}}
		}},
		{demoSpec("demo.lost_reply", tools.Irreversible, 30*time.Second, "Page someone; the page goes out but the reply is lost (the crash window): the key is in doubt until an operator settles it."), func(_ context.Context, _ tools.Request) tools.Outcome {
			return tools.Outcome{Status: tools.Unknown, Code: "reply_lost", Attempts: 1, Message: "the effect happened but the reply never came (demo of the crash window)"}
		}},
		{demoSpec("demo.lost_refund", tools.NativeKey, 10*time.Second, "Refund; the first answer of every key is lost, and the reconciler's retry with the same downstream key gets the original refund back."), lost.invoke},
		{transferSpec(), func(_ context.Context, r tools.Request) tools.Outcome {
			return tools.Outcome{Status: tools.Succeeded, Attempts: 1, Result: map[string]any{"transfer_id": demoID("tr_", r.DownstreamKey), "amount": r.Args["amount"], "to": r.Args["to"]}}
		}},
	}
	for _, s := range specs {
		if err := reg.Register(s.spec, s.fn); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

func demoSpec(name string, class tools.Class, pendingTTL time.Duration, description string) tools.Spec {
	return tools.Spec{Name: name, Class: class, Timeout: 5 * time.Second, PendingTTL: pendingTTL, Retention: 24 * time.Hour, MaxInFlight: 64, Description: description}
}

// refundSpec has an input schema, so that the gateway's validation shows:
// an amount above zero is required.
func refundSpec() tools.Spec {
	s := demoSpec("demo.refund", tools.NativeKey, 2*time.Minute, "Refund an amount; takes 300 ms, so a duplicate sent at once joins the call in flight.")
	s.InputSchema = []byte(`{"type":"object","required":["amount"],"properties":{"amount":{"type":"number","exclusiveMinimum":0,"description":"the amount to refund"},"currency":{"type":"string","pattern":"^[A-Z]{3}$"}}}`)
	return s
}

// transferSpec needs a person's approval of every key and its arguments.
func transferSpec() tools.Spec {
	s := demoSpec("demo.transfer", tools.NativeKey, 2*time.Minute, "Transfer an amount to an account; every call waits for a person's approval of this key with these arguments, then runs once.")
	s.Approval, s.ApprovalTTL = tools.ApprovalRequired, time.Hour
	s.InputSchema = []byte(`{"type":"object","required":["amount","to"],"properties":{"amount":{"type":"number","exclusiveMinimum":0},"to":{"type":"string","minLength":1}}}`)
	return s
}

// demoID is a demo tool's id for the call with downstreamKey: prefix and
// 10 hex digits of its hash, the same for the same call in any process.
func demoID(prefix, downstreamKey string) string {
	h := sha256.Sum256([]byte(downstreamKey))
	return prefix + hex.EncodeToString(h[:5])
}

// echoRuns counts demo.echo's runs per downstream key (bounded: a demo;
// when full, the counts start again, which can only make "call" smaller).
type echoRuns struct {
	mu sync.Mutex
	n  map[string]int64
}

const maxEchoKeys = 10000

func (e *echoRuns) invoke(_ context.Context, r tools.Request) tools.Outcome {
	e.mu.Lock()
	if len(e.n) >= maxEchoKeys {
		clear(e.n)
	}
	e.n[r.DownstreamKey]++
	n := e.n[r.DownstreamKey]
	e.mu.Unlock()
	return tools.Outcome{Status: tools.Succeeded, Attempts: 1, Result: map[string]any{"echo": r.Args, "call": n, "downstream_key": r.DownstreamKey}}
}

// lostRefunds is demo.lost_refund's ledger: one refund per downstream key,
// remembered like a Stripe idempotency key (bounded: a demo).
type lostRefunds struct {
	mu   sync.Mutex
	done map[string]map[string]any
}

const maxLostRefunds = 10000

func (l *lostRefunds) invoke(_ context.Context, r tools.Request) tools.Outcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	if res, ok := l.done[r.DownstreamKey]; ok {
		return tools.Outcome{Status: tools.Succeeded, Attempts: 1, Result: res}
	}
	if len(l.done) >= maxLostRefunds {
		return tools.Outcome{Status: tools.NotExecuted, Code: "demo_full", Attempts: 1, Message: "the demo ledger is full; restart the executor"}
	}
	res := map[string]any{"refund_id": demoID("rf_lost_", r.DownstreamKey), "amount": r.Args["amount"], "downstream_key": r.DownstreamKey}
	l.done[r.DownstreamKey] = res
	return tools.Outcome{Status: tools.Unknown, Code: "reply_lost", Attempts: 1,
		Message: "the refund was made but its answer was lost (demo of the crash window); a retry with the same key gets it back"}
}
