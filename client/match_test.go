package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/client"
	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

// An answer reaches a waiting call only when its intent id, tenant and key
// all match the intent's: ids are unique per client, not per deployment,
// and another producer on the reply topic (another tenant's gateway
// sharing an instance id, a careless service) could name the same id.
func TestAnswerMatchesTenantAndKey(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "tool.intents", "tool.reply.x"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := client.New(ctx, client.Config{Brokers: c.ListenAddrs(), ReplyTo: "tool.reply.x"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	p, err := cl.Start(ctx, wire.Intent{Tenant: "acme", Key: "order-1", Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	id := p.Intent().ID
	prod, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
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
