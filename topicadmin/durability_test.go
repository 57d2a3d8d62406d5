package topicadmin

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// gauge reads a gauge's value.
func gauge(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

// production is a three-broker cluster with every setting as the promise
// needs it.
func production() Durability {
	return Durability{
		Brokers: 3,
		Topics: []TopicDurability{
			{Topic: "tool.events", ReplicationFactor: 3, MinInsyncReplicas: 2},
			{Topic: "tool.intents", ReplicationFactor: 3, MinInsyncReplicas: 2},
		},
		Internal:              []TopicDurability{{Topic: TransactionLog, ReplicationFactor: 3}},
		TxnLogReplication:     3,
		TxnLogMinISR:          2,
		OffsetsLogReplication: 3,
		brokerSettingsRead:    true,
	}
}

func TestWeaknessesNameTheSetting(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Durability)
		want string // "" : none
	}{
		{"production", func(*Durability) {}, ""},
		{"stronger", func(d *Durability) { d.Topics[0].ReplicationFactor, d.Topics[0].MinInsyncReplicas = 5, 3 }, ""},
		{"topic rf", func(d *Durability) { d.Topics[0].ReplicationFactor = 1 }, "tool.events: replication factor 1, need at least 3"},
		{"topic min isr", func(d *Durability) { d.Topics[1].MinInsyncReplicas = 1 }, "tool.intents: min.insync.replicas=1, need at least 2"},
		{"topic unclean", func(d *Durability) { d.Topics[0].UncleanElection = true }, "tool.events: unclean.leader.election.enable=true, need false"},
		{"broker unclean", func(d *Durability) { d.UncleanElection = true }, "broker: unclean.leader.election.enable=true, need false"},
		{"txn log rf", func(d *Durability) { d.TxnLogReplication = 1 }, "broker: transaction.state.log.replication.factor=1, need at least 3"},
		{"txn log isr", func(d *Durability) { d.TxnLogMinISR = 1 }, "broker: transaction.state.log.min.isr=1, need at least 2"},
		{"offsets rf", func(d *Durability) { d.OffsetsLogReplication = 2 }, "broker: offsets.topic.replication.factor=2, need at least 3"},
		{"internal created weak", func(d *Durability) { d.Internal[0].ReplicationFactor = 1 }, "__transaction_state: replication factor 1, need at least 3 (it was created with it: reassign its partitions)"},
		{"unreadable", func(d *Durability) { d.Unreadable = []string{"broker 1's settings (x)"} }, "could not read broker 1's settings (x)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := production()
			tc.mod(&d)
			w := d.Weaknesses(Production)
			err := CheckDurability(d, Production, false)
			if tc.want == "" {
				if len(w) != 0 || err != nil {
					t.Fatalf("weaknesses %q, err %v", w, err)
				}
				return
			}
			if len(w) != 1 || w[0] != tc.want {
				t.Fatalf("weaknesses %q, want [%q]", w, tc.want)
			}
			if !errors.Is(err, ErrWeakDurability) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--allow-weak-durability") {
				t.Fatalf("err %v", err)
			}
			if err := CheckDurability(d, Production, true); err != nil {
				t.Fatalf("with the override: %v", err)
			}
		})
	}
}

// A single broker has nothing to replicate to: it starts, with one
// warning line, whatever its topics' settings.
func TestSingleBrokerStartsWithOneWarning(t *testing.T) {
	d := Durability{Brokers: 1, Topics: []TopicDurability{{Topic: "tool.events", ReplicationFactor: 1, MinInsyncReplicas: 1}}}
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	g := NewDurabilityGauges(prometheus.NewRegistry(), "test")
	if err := StartDurability(d, Production, false, g, log); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "single-broker Kafka") {
		t.Fatalf("log:\n%s", buf.String())
	}
	if got := gauge(t, g.Weak); got != 0 {
		t.Fatalf("weak settings gauge %v on a single broker", got)
	}
	if got := gauge(t, g.ReplicationFactor.WithLabelValues("tool.events")); got != 1 {
		t.Fatalf("replication factor gauge %v", got)
	}
}

// The override starts a weak cluster, says so, and exports it.
func TestOverrideIsLoggedAndExported(t *testing.T) {
	d := production()
	d.Topics[0].ReplicationFactor = 1
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	g := NewDurabilityGauges(prometheus.NewRegistry(), "test")
	if err := StartDurability(d, Production, false, g, log); !errors.Is(err, ErrWeakDurability) {
		t.Fatalf("without the override: %v", err)
	}
	if err := StartDurability(d, Production, true, g, log); err != nil {
		t.Fatal(err)
	}
	if gauge(t, g.Override) != 1 || gauge(t, g.Weak) != 1 {
		t.Fatalf("override %v, weak %v", gauge(t, g.Override), gauge(t, g.Weak))
	}
	if !strings.Contains(buf.String(), "durability override") || !strings.Contains(buf.String(), "tool.events: replication factor 1") {
		t.Fatalf("log:\n%s", buf.String())
	}
}

func TestReplicationAndISRCounts(t *testing.T) {
	td := kadm.TopicDetail{Topic: "x", Partitions: kadm.PartitionDetails{
		0: {Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}},
		1: {Replicas: []int32{1, 2, 3}, ISR: []int32{2}},
		2: {Replicas: []int32{1, 2}, ISR: []int32{1, 2}},
		3: {Replicas: []int32{2, 3, 1}, ISR: []int32{3, 1}},
	}}
	got := replicationOf(td)
	if got.ReplicationFactor != 2 || got.UnderReplicated != 2 {
		t.Fatalf("%+v", got)
	}
	if n := underMinISR(td, 2); n != 1 {
		t.Fatalf("under min ISR 2: %d partitions", n)
	}
}

// TestTopicConfigsWaitForATopicTheBrokerDoesNotKnowYet: on a cluster, the
// broker asked for a topic's configs right after its creation may answer
// UNKNOWN_TOPIC_OR_PARTITION. ReadDurability asks again rather than read
// the settings as unreadable, which would refuse the start.
func TestTopicConfigsWaitForATopicTheBrokerDoesNotKnowYet(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "tool.events"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var unknown atomic.Int32
	c.ControlKey(int16(kmsg.DescribeConfigs), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if unknown.Add(1) > 3 {
			return nil, nil, false
		}
		resp := req.(*kmsg.DescribeConfigsRequest).ResponseKind().(*kmsg.DescribeConfigsResponse)
		for _, r := range req.(*kmsg.DescribeConfigsRequest).Resources {
			rr := kmsg.NewDescribeConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = r.ResourceType, r.ResourceName, kerr.UnknownTopicOrPartition.Code
			resp.Resources = append(resp.Resources, rr)
		}
		return resp, nil, true
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	d, err := ReadDurability(t.Context(), kadm.NewClient(cl), "tool.events")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Unreadable) != 0 || unknown.Load() <= 3 {
		t.Fatalf("unreadable %v after %d describes, want none after the fourth", d.Unreadable, unknown.Load())
	}
	if d.Topics[0].MinInsyncReplicas < 1 {
		t.Fatalf("min ISR %d, want the broker's", d.Topics[0].MinInsyncReplicas)
	}
}
