package client_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

// busyExecutor stands for an executor that refuses the first `refuse`
// intents it reads for want of a place, and then lets them succeed.
type busyExecutor struct {
	mu     sync.Mutex
	seen   []wire.Intent
	refuse int
	hint   int64 // retry_after_ms
}

func (b *busyExecutor) run(ctx context.Context, t *testing.T, seeds []string, prod *kgo.Client) {
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("tool.intents"))
	if err != nil {
		t.Error(err)
		return
	}
	defer cons.Close()
	for ctx.Err() == nil {
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			in, rej := wire.DecodeIntent(r.Value, r.Key, wire.FromIntents)
			if rej != nil {
				t.Errorf("intent: %v", rej)
				return
			}
			b.mu.Lock()
			b.seen = append(b.seen, *in)
			busy := len(b.seen) <= b.refuse
			b.mu.Unlock()
			res := &wire.Result{V: 1, IntentID: in.ID, Type: in.Type, Tenant: in.Tenant, Key: in.Key, Tool: in.Tool, Status: codes.StatusSucceeded}
			if busy {
				res.Status, res.RetryAfterMs = codes.StatusNotExecuted, b.hint
				res.Error = &wire.ErrorInfo{Code: codes.ErrOverShare, Message: "tenant acme holds its share"}
			}
			v, err := wire.EncodeResult(res)
			if err != nil {
				t.Error(err)
				return
			}
			_ = prod.ProduceSync(ctx, &kgo.Record{Topic: "tool.reply.x", Value: v}).FirstErr()
		})
	}
}

func (b *busyExecutor) intents() []wire.Intent {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]wire.Intent(nil), b.seen...)
}

// Call sends a key the executor had no place for again after the answer's
// retry hint, with a new intent id each time, and returns the first answer
// that is not a refusal.
func TestCallSendsAgainAfterARefusal(t *testing.T) {
	ctx, cl, prod, seeds := replyWorldSeeds(t)
	ex := &busyExecutor{refuse: 2, hint: 20}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	go ex.run(rctx, t, seeds, prod)
	start := time.Now()
	res, err := cl.Call(ctx, wire.Intent{Tenant: "acme", Key: "order-1", Tool: "t"})
	if err != nil || res.Status != codes.StatusSucceeded {
		t.Fatalf("Call: %+v, %v; want succeeded after two refusals", res, err)
	}
	seen := ex.intents()
	if len(seen) != 3 {
		t.Fatalf("the executor read %d intents, want 3", len(seen))
	}
	ids := map[string]bool{}
	for _, in := range seen {
		ids[in.ID] = true
		if in.Key != "order-1" || in.Tenant != "acme" {
			t.Fatalf("sent again as %+v, want the same tenant and key", in)
		}
	}
	if len(ids) != 3 || res.IntentID != seen[2].ID {
		t.Fatalf("intent ids %v, answer to %s: want a new id per send", ids, res.IntentID)
	}
	if waited := time.Since(start); waited < 40*time.Millisecond {
		t.Fatalf("sent three times in %s: the two 20 ms hints were not waited", waited)
	}
}

// A refusal that lasts: Call gives up after MaxBusyRetries more sends with
// ErrBusy and the last answer, and at once when ctx ends before the hint.
func TestCallGivesUpOnRefusals(t *testing.T) {
	ctx, cl, prod, seeds := replyWorldSeeds(t)
	ex := &busyExecutor{refuse: 1 << 30, hint: 1}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	go ex.run(rctx, t, seeds, prod)
	res, err := cl.Call(ctx, wire.Intent{Tenant: "acme", Key: "order-2", Tool: "t"})
	if !errors.Is(err, client.ErrBusy) || res == nil || !res.Busy() {
		t.Fatalf("Call: %+v, %v; want the refusal with ErrBusy", res, err)
	}
	if n := len(ex.intents()); n != client.MaxBusyRetries+1 {
		t.Fatalf("sent %d times, want %d", n, client.MaxBusyRetries+1)
	}
	ex.mu.Lock()
	ex.hint = 60_000
	ex.mu.Unlock()
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err = cl.Call(short, wire.Intent{Tenant: "acme", Key: "order-3", Tool: "t"})
	if !errors.Is(err, client.ErrBusy) || res.RetryAfter() != time.Minute {
		t.Fatalf("Call with 5 s left and a 60 s hint: %+v, %v; want the refusal at once", res, err)
	}
}
