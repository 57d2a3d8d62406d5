package gateway

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The reply topics of instances gone for longer than ReplyTopicIdle are
// deleted (their newest record is older, or they hold none); a live
// instance's topic (a recent heartbeat or answer), the gateway's own, and
// topics that are not reply topics stay. A gateway whose topic a peer
// deleted makes it again at its next heartbeat.
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
	deleted := g.reapOnce(ctx, now)
	slices.Sort(deleted)
	if !slices.Equal(deleted, []string{"tool.gateway.empty", "tool.gateway.gone"}) {
		t.Fatalf("deleted %v", deleted)
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
	if td.Has("tool.gateway.gone") || td.Has("tool.gateway.empty") {
		t.Errorf("topics left: %v", td.Names())
	}
	// A peer deleted this gateway's topic: the next heartbeat makes it again.
	if _, err := adm.DeleteTopic(ctx, "tool.gateway.me"); err != nil {
		t.Fatal(err)
	}
	g.heartbeat()
	if td, err := adm.ListTopics(ctx, "tool.gateway.me"); err != nil || !td.Has("tool.gateway.me") || td["tool.gateway.me"].Err != nil {
		t.Fatalf("the gateway's own topic after a heartbeat: %v %v", td, err)
	}
}
