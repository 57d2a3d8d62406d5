package reconciler

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/atmostonce/toolexec/topicadmin"
)

// Metrics are the reconciler's Prometheus collectors, registered on the
// Registerer of Config (never the global registry). Gauges describe the
// partitions this member owns; sum them over members.
type Metrics struct {
	KeysInDoubt    *prometheus.GaugeVec         // by tool: past their deadline without an outcome
	OldestAge      prometheus.Gauge             // seconds since the oldest such key's call started
	PastTTL        prometheus.Gauge             // seconds the most overdue key is past its deadline
	Investigations *prometheus.CounterVec       // by tool, class, outcome
	Escalations    *prometheus.CounterVec       // by tool, class
	Escalated      *prometheus.GaugeVec         // by tool: keys escalated and not settled yet
	CommandsSent   *prometheus.CounterVec       // by type
	CommandErrors  *prometheus.CounterVec       // by type: produce failed (retried after the command timeout)
	Lag            *prometheus.GaugeVec         // by partition: records of the event log not yet folded
	Owned          prometheus.Gauge             // events partitions owned
	ViewGaps       prometheus.Counter           // partitions whose view was rebuilt: the log had lost events it needed
	Durability     *topicadmin.DurabilityGauges // what the check at start found
	approvals      approvalMetrics              // keys awaiting a person's approval (approvals.go)
}

func newMetrics(reg prometheus.Registerer) *Metrics {
	const ns, sub = "toolexec", "reconciler"
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: ns, Subsystem: sub, Name: name, Help: help}
	}
	m := &Metrics{
		KeysInDoubt:    prometheus.NewGaugeVec(prometheus.GaugeOpts(opts("keys_in_doubt", "Keys past their tool's pending_ttl without an outcome, by tool.")), []string{"tool"}),
		OldestAge:      prometheus.NewGauge(prometheus.GaugeOpts(opts("oldest_in_doubt_age_seconds", "Age of the oldest key in doubt, since its call started; 0 when none."))),
		PastTTL:        prometheus.NewGauge(prometheus.GaugeOpts(opts("in_doubt_past_ttl_seconds", "How far the most overdue key in doubt is past its pending_ttl; 0 when none."))),
		Investigations: prometheus.NewCounterVec(prometheus.CounterOpts(opts("investigations_total", "Investigation rounds, by tool, class and outcome.")), []string{"tool", "class", "outcome"}),
		Escalations:    prometheus.NewCounterVec(prometheus.CounterOpts(opts("escalations_total", "Keys escalated to an operator, by tool and class.")), []string{"tool", "class"}),
		Escalated:      prometheus.NewGaugeVec(prometheus.GaugeOpts(opts("escalated_keys", "Keys escalated and not settled yet, by tool.")), []string{"tool"}),
		CommandsSent:   prometheus.NewCounterVec(prometheus.CounterOpts(opts("commands_sent_total", "Commands produced on the control topic, by type.")), []string{"type"}),
		CommandErrors:  prometheus.NewCounterVec(prometheus.CounterOpts(opts("command_errors_total", "Commands that could not be produced, by type.")), []string{"type"}),
		Lag:            prometheus.NewGaugeVec(prometheus.GaugeOpts(opts("event_log_lag_records", "Committed event-log records not yet folded into the view, by partition.")), []string{"partition"}),
		Owned:          prometheus.NewGauge(prometheus.GaugeOpts(opts("partitions_owned", "Event-log partitions this member investigates."))),
		ViewGaps: prometheus.NewCounter(prometheus.CounterOpts(opts("view_gaps_total",
			"Partitions whose view was cleared and rebuilt from the log start: the log no longer held events after its checkpoint."))),
	}
	if reg != nil {
		reg.MustRegister(m.KeysInDoubt, m.OldestAge, m.PastTTL, m.Investigations, m.Escalations, m.Escalated,
			m.CommandsSent, m.CommandErrors, m.Lag, m.Owned, m.ViewGaps)
	}
	m.approvals = newApprovalMetrics(reg, opts)
	m.Durability = topicadmin.NewDurabilityGauges(reg, sub)
	return m
}

// gauges is one scan's picture of the keys in doubt.
type gauges struct {
	inDoubt   map[string]int
	escalated map[string]int
	started   map[string]int // within their deadline: a call (or compensation) may still run
	oldest    int64          // ms
	pastTTL   int64          // ms
}

func newGauges() *gauges {
	return &gauges{inDoubt: map[string]int{}, escalated: map[string]int{}, started: map[string]int{}}
}

func (g *gauges) add(now int64, s Subject, escalated bool) {
	g.inDoubt[s.Tool]++
	g.oldest = max(g.oldest, now-s.CalledAt)
	g.pastTTL = max(g.pastTTL, now-s.Deadline)
	if escalated {
		g.escalated[s.Tool]++
	}
}

// publish replaces the gauges with g: tools with no key left drop to 0
// rather than keeping their last value.
func (m *Metrics) publish(g *gauges) {
	m.KeysInDoubt.Reset()
	m.Escalated.Reset()
	for tool, n := range g.inDoubt {
		m.KeysInDoubt.WithLabelValues(tool).Set(float64(n))
	}
	for tool, n := range g.escalated {
		m.Escalated.WithLabelValues(tool).Set(float64(n))
	}
	m.OldestAge.Set(float64(g.oldest) / 1000)
	m.PastTTL.Set(float64(g.pastTTL) / 1000)
}

func (m *Metrics) setLag(p int32, n int64) {
	m.Lag.WithLabelValues(strconv.Itoa(int(p))).Set(float64(max(n, 0)))
}
