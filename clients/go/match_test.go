package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

// replyWorld is a kfake cluster with a client that reads its answers on
// tool.reply.x, and a producer that writes answers there.
func replyWorld(t *testing.T) (context.Context, *client.Client, *kgo.Client) {
	t.Helper()
	ctx, cl, prod, _ := replyWorldSeeds(t)
	return ctx, cl, prod
}

// replyWorldSeeds is replyWorld, with the cluster's addresses.
func replyWorldSeeds(t *testing.T) (context.Context, *client.Client, *kgo.Client, []string) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "tool.intents", "tool.reply.x"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	cl, err := client.New(ctx, client.Config{Brokers: c.ListenAddrs(), ReplyTo: "tool.reply.x"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	prod, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	return ctx, cl, prod, c.ListenAddrs()
}

// An answer reaches a waiting call only when its intent id, tenant and key
// all match the intent's: ids are unique per client, not per deployment,
// and another producer on the reply topic (another tenant's gateway
// sharing an instance id, a careless service) could name the same id.
func TestAnswerMatchesTenantAndKey(t *testing.T) {
	ctx, cl, prod := replyWorld(t)
	p, err := cl.Start(ctx, wire.Intent{Tenant: "acme", Key: "order-1", Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	id := p.Intent().ID
	answer := func(tenant, key, status string) {
		b, err := wire.EncodeResult(&wire.Result{IntentID: id, Type: wire.TypeCall, Tenant: tenant, Key: key, Tool: "t", Status: status})
		if err != nil {
			t.Fatal(err)
		}
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "tool.reply.x", Value: b}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	answer("globex", "order-1", codes.StatusFailed)  // another tenant's answer naming the id
	answer("acme", "order-2", codes.StatusFailed)    // another key's
	answer("acme", "order-1", codes.StatusSucceeded) // the intent's own
	res, err := p.Wait(ctx)
	if err != nil || res.Status != codes.StatusSucceeded || res.Tenant != "acme" || res.Key != "order-1" {
		t.Fatalf("got %+v, %v; want the intent's own answer", res, err)
	}
}

// A pending answer that says the key awaits a person's approval ends the
// wait at once with ErrApprovalPending (waiting longer would not help);
// an in-doubt pending answer does not.
func TestAwaitingApprovalEndsTheWait(t *testing.T) {
	ctx, cl, prod := replyWorld(t)
	wait := func(code string) (*wire.Result, error) {
		p, err := cl.Start(ctx, wire.Intent{Tenant: "acme", Key: "k-" + code, Tool: "t"})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		b, _ := wire.EncodeResult(&wire.Result{IntentID: p.Intent().ID, Tenant: "acme", Key: "k-" + code, Tool: "t", Status: codes.StatusPending,
			Error: &wire.ErrorInfo{Code: code}})
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "tool.reply.x", Value: b}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		wctx, wcancel := context.WithTimeout(ctx, time.Second)
		defer wcancel()
		return p.Wait(wctx)
	}
	if res, err := wait(codes.ErrAwaitingApproval); !errors.Is(err, client.ErrApprovalPending) || !res.AwaitingApproval() {
		t.Fatalf("awaiting approval: %+v, %v", res, err)
	}
	if res, err := wait(codes.ErrInDoubt); !errors.Is(err, client.ErrInDoubt) || res == nil || res.Status != codes.StatusPending {
		t.Fatalf("in doubt: %+v, %v (want the wait to run out with ErrInDoubt)", res, err)
	}
}
