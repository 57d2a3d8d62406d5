package gateway

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

// The reply topics of instances gone for longer than ReplyTopicIdle are
// deleted (their newest record is older; or they hold none and were seen
// so for that long); a live instance's topic (a recent heartbeat or
// answer), the gateway's own, and topics that are not reply topics stay.
func TestReapReplyTopicsOfGoneInstances(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "tool.intents", "tool.results"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tenants, err := SingleTenant("default", "tok")
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(ctx, Config{Brokers: c.ListenAddrs(), Tenants: NewTenantStore(tenants), InstanceID: "me"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	now := time.Now()
	for topic, at := range map[string]time.Time{"tool.gateway.gone": now.Add(-2 * time.Hour), "tool.gateway.empty": {},
		"tool.gateway.alive": now.Add(-time.Minute), "tool.other": now.Add(-48 * time.Hour), "tool.gateway.Bad_Id": now.Add(-48 * time.Hour)} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
		if !at.IsZero() {
			r := heartbeatRecord(topic)
			r.Timestamp = at
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if deleted := g.reapOnce(ctx, now); !slices.Equal(deleted, []string{"tool.gateway.gone"}) {
		t.Fatalf("deleted %v; want the topic idle for 2h only (the empty one was not seen empty for the idle time yet)", deleted)
	}
	if deleted := g.reapOnce(ctx, now.Add(DefaultReplyTopicIdle/2)); len(deleted) != 0 {
		t.Fatalf("deleted %v before the empty topic was seen empty for the idle time", deleted)
	}
	td, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, keep := range []string{"tool.gateway.me", "tool.gateway.alive", "tool.other", "tool.gateway.Bad_Id"} {
		if !td.Has(keep) {
			t.Errorf("%s was deleted", keep)
		}
	}
	if td.Has("tool.gateway.gone") {
		t.Errorf("topics left: %v", td.Names())
	}
	deleted := g.reapOnce(ctx, now.Add(DefaultReplyTopicIdle+time.Second))
	if !slices.Contains(deleted, "tool.gateway.empty") {
		t.Fatalf("deleted %v once the empty topic was seen empty for the idle time", deleted)
	}
}

// A new gateway's reply topic is never reaped before the idle time has
// passed since it was made: not by a peer that reaps 80 s after the
// start (the topic holds the heartbeat written when it was made), nor,
// when it holds nothing yet, by a peer that sees it for the first time.
func TestReapSparesNewReplyTopics(t *testing.T) {
	c, ctx := reapCluster(t)
	reaper := newTestGateway(t, ctx, c, "reaper")
	newTestGateway(t, ctx, c, "young")
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "tool.gateway.unborn"); err != nil { // made, no heartbeat yet
		t.Fatal(err)
	}
	now := time.Now()
	for _, at := range []time.Time{now.Add(80 * time.Second), now.Add(DefaultReplyTopicIdle - time.Minute)} {
		if deleted := reaper.reapOnce(ctx, at); len(deleted) != 0 {
			t.Fatalf("reaped %v %s after their start, within the idle time", deleted, at.Sub(now))
		}
	}
}

// A gateway whose reply topic a peer deleted makes it again and reads
// the new one: an answer produced to it reaches the request that waits;
// the gateway is not ready while it is without a topic it reads.
func TestDeletedReplyTopicIsMadeAndReadAgain(t *testing.T) {
	c, ctx := reapCluster(t)
	g := newTestGateway(t, ctx, c, "me")
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.DeleteTopic(ctx, g.ReplyTopic()); err != nil {
		t.Fatal(err)
	}
	for { // the deletion is done when the gateway's metadata (cached up to 5 s) no longer shows the topic
		if td, err := g.adm.ListTopics(ctx, g.ReplyTopic()); err == nil && !td.Has(g.ReplyTopic()) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	g.checkReplyTopic() // finds the topic gone (as a heartbeat does, and then calls it)
	if err := g.Ping(ctx); err != nil {
		t.Fatalf("not ready after the topic was made again: %v", err)
	}
	p, err := g.client.Start(ctx, wire.Intent{Tenant: "default", Key: "k", Tool: "t", Args: map[string]any{}, ReplyTo: g.ReplyTopic()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	answer, err := wire.EncodeResult(&wire.Result{V: wire.Version, IntentID: p.Intent().ID, Tenant: "default", Key: "k", Tool: "t", Status: codes.StatusSucceeded})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...)) // an executor that learns of the topic now
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if err := pc.ProduceSync(ctx, &kgo.Record{Topic: g.ReplyTopic(), Value: answer}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if res, err := p.Next(wctx); err != nil || res.Status != codes.StatusSucceeded {
		t.Fatalf("the answer in the new reply topic did not reach its request: %v %v", res, err)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }

func reapCluster(t *testing.T) (*kfake.Cluster, context.Context) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "tool.intents", "tool.results"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c, ctx
}

func newTestGateway(t *testing.T, ctx context.Context, c *kfake.Cluster, id string) *Gateway {
	t.Helper()
	tenants, err := SingleTenant("default", "tok-"+id)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(ctx, Config{Brokers: c.ListenAddrs(), Tenants: NewTenantStore(tenants), InstanceID: id,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}
