package topicadmin

import (
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// DurabilityGauges export what ReadDurability found, under
// toolexec_<subsystem>_ (the executor and the reconciler each register
// their own). Safe for concurrent use.
type DurabilityGauges struct {
	Brokers           prometheus.Gauge
	ReplicationFactor *prometheus.GaugeVec // by topic
	MinInsyncReplicas *prometheus.GaugeVec // by topic
	UnderMinISR       *prometheus.GaugeVec // by topic
	UnderReplicated   *prometheus.GaugeVec // by topic
	Weak              prometheus.Gauge     // settings weaker than the requirement
	Override          prometheus.Gauge     // 1 when started with --allow-weak-durability
}

// NewDurabilityGauges registers the gauges on reg (none when nil).
func NewDurabilityGauges(reg prometheus.Registerer, subsystem string) *DurabilityGauges {
	opts := func(name, help string) prometheus.GaugeOpts {
		return prometheus.GaugeOpts{Namespace: "toolexec", Subsystem: subsystem, Name: name, Help: help}
	}
	g := &DurabilityGauges{
		Brokers:           prometheus.NewGauge(opts("kafka_brokers", "Brokers the cluster's metadata lists (1: a single-broker development cluster, no replication).")),
		ReplicationFactor: prometheus.NewGaugeVec(opts("topic_replication_factor", "Smallest replica count over the topic's partitions (the promise needs 3 on a cluster)."), []string{"topic"}),
		MinInsyncReplicas: prometheus.NewGaugeVec(opts("topic_min_insync_replicas", "The topic's effective min.insync.replicas (the promise needs 2 on a cluster)."), []string{"topic"}),
		UnderMinISR:       prometheus.NewGaugeVec(opts("topic_partitions_under_min_isr", "Partitions whose in-sync replicas are fewer than the topic's min.insync.replicas: transactions writing there fail until a replica catches up."), []string{"topic"}),
		UnderReplicated:   prometheus.NewGaugeVec(opts("topic_partitions_under_replicated", "Partitions with a replica out of sync."), []string{"topic"}),
		Weak:              prometheus.NewGauge(opts("durability_weak_settings", "Broker and topic settings found weaker than replication factor 3, min.insync.replicas 2, no unclean leader election (0 on a single broker).")),
		Override:          prometheus.NewGauge(opts("durability_override", "1 when the process was started with --allow-weak-durability: it runs on settings that could lose a committed transaction.")),
	}
	if reg != nil {
		reg.MustRegister(g.Brokers, g.ReplicationFactor, g.MinInsyncReplicas, g.UnderMinISR, g.UnderReplicated, g.Weak, g.Override)
	}
	return g
}

// Set exports d, judged against r.
func (g *DurabilityGauges) Set(d Durability, r Requirement) {
	g.Brokers.Set(float64(d.Brokers))
	for _, t := range d.Topics {
		g.ReplicationFactor.WithLabelValues(t.Topic).Set(float64(t.ReplicationFactor))
		g.MinInsyncReplicas.WithLabelValues(t.Topic).Set(float64(t.MinInsyncReplicas))
		g.UnderMinISR.WithLabelValues(t.Topic).Set(float64(t.UnderMinISR))
		g.UnderReplicated.WithLabelValues(t.Topic).Set(float64(t.UnderReplicated))
	}
	if d.Single() {
		g.Weak.Set(0)
	} else {
		g.Weak.Set(float64(len(d.Weaknesses(r))))
	}
}

// StartDurability is a member's duty at start: read the durability of
// ours, export it, refuse it when weaker than r unless allowWeak, and say
// in one log line what it found (a single broker: one warning).
func StartDurability(d Durability, r Requirement, allowWeak bool, g *DurabilityGauges, log *slog.Logger) error {
	g.Set(d, r)
	if allowWeak {
		g.Override.Set(1)
	}
	if err := CheckDurability(d, r, allowWeak); err != nil {
		return err
	}
	switch w := d.Weaknesses(r); {
	case d.Single():
		log.Warn("single-broker Kafka: nothing is replicated, so a committed call survives a process crash but not the loss of the broker's disk (development only; see README.md, Production)")
	case len(w) > 0:
		log.Warn("durability override (--allow-weak-durability): running on settings that could lose a committed transaction, and with it the fence of a call", "weak", strings.Join(w, "; "))
	default:
		log.Info("durability checked", "brokers", d.Brokers, "replication_factor", r.ReplicationFactor, "min_insync_replicas", r.MinInsyncReplicas)
	}
	return nil
}
