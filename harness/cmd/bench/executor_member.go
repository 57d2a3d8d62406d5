package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/atmostonce/toolexec/executor"
	"github.com/atmostonce/toolexec/internal/tracing"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/topicadmin"
	"github.com/atmostonce/toolexec/topics"
)

// The bench's in-process tools.
const (
	toolNoop = "bench.noop" // answers at once
	toolSlow = "bench.slow" // answers after --slow-latency
	toolHTTP = "bench.http" // the peer comparison's HTTP tool (peer_tool.go)
)

// httpToolSpec is bench.http: class irreversible, because the tool does
// not honour our key (it counts every call as an effect), so the executor
// must never call it twice for a key; max_in_flight at the executor's own
// limit so that the crash test's 100 calls are all inside the tool at
// once. The crash test kills the executor seconds after its calls entered
// the tool, well within the timeout; the pending_ttl is short so that,
// within the crash test's retries (crashRetryFor), the keys left started
// by the killed executor are answered in doubt ("pending") rather than
// "running".
func httpToolSpec(url string) tools.Spec {
	return tools.Spec{Name: toolHTTP, Class: tools.Irreversible, URL: url, MaxInFlight: executorMaxInFlight,
		Timeout: httpToolTimeout, PendingTTL: httpToolTimeout + 10*time.Second}
}

// httpToolTimeout bounds one call of bench.http: far above a call's time
// in the load phases (under a second).
const httpToolTimeout = 20 * time.Second

// execMember is the executor in a member process, with its collectors on a
// private registry that counters reads.
type execMember struct {
	ex  *executor.Executor
	reg *prometheus.Registry
	tr  *hopTracer // --trace; nil otherwise
}

func newExecutorMember(ctx context.Context, o memberOpts) (*execMember, error) {
	reg, err := benchTools(o.slowLatency, o.slowInFlight, o.toolURL)
	if err != nil {
		return nil, err
	}
	pr := prometheus.NewRegistry()
	tp, _, err := tracing.FromEnv(ctx, "bench-executor")
	if err != nil {
		return nil, err
	}
	cfg := executor.Config{
		Brokers: o.brokers, Connect: kafkaOpts, Names: topics.NamesWithPrefix(o.prefix), Group: o.group, DataDir: o.dataDir, Tools: reg,
		Registerer: pr, Settings: topicadmin.Settings{Partitions: int32(o.partitions)}, TracerProvider: tp,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	var tr *hopTracer
	if o.trace {
		n := cfg.Names
		tr = newHopTracer(map[string]string{n.Intents: "intent", n.Events: "event", n.Results: "answer"})
		cfg.ClientOpts, cfg.Hooks.At = tr.hooks(), tr.at
	}
	ex, err := executor.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &execMember{ex: ex, reg: pr, tr: tr}, nil
}

func (m *execMember) tracer() *hopTracer { return m.tr }

// benchTools registers the no-op and the slow tool, and bench.http when
// toolURL is set. The first two take the product defaults except the slow
// tool's max_in_flight, which the slow-tool scenario's limit is computed
// from.
func benchTools(slow time.Duration, slowInFlight int, toolURL string) (*tools.Registry, error) {
	reg := tools.NewRegistry()
	ok := map[string]any{"ok": true}
	noop := tools.Func(func(context.Context, tools.Request) tools.Outcome {
		return tools.Outcome{Status: tools.Succeeded, Result: ok, Attempts: 1}
	})
	sleep := tools.Func(func(ctx context.Context, _ tools.Request) tools.Outcome {
		t := time.NewTimer(slow)
		defer t.Stop()
		select {
		case <-t.C:
			return tools.Outcome{Status: tools.Succeeded, Result: ok, Attempts: 1}
		case <-ctx.Done():
			return tools.Outcome{Status: tools.Unknown, Code: tools.CodeCancelled, Attempts: 1}
		}
	})
	if err := reg.Register(tools.Spec{Name: toolNoop, Class: tools.NativeKey}, noop); err != nil {
		return nil, err
	}
	if err := reg.Register(tools.Spec{Name: toolSlow, Class: tools.NativeKey, MaxInFlight: slowInFlight}, sleep); err != nil {
		return nil, err
	}
	if toolURL == "" {
		return reg, nil
	}
	spec := httpToolSpec(toolURL)
	h, err := tools.OpenHTTP(spec, nil)
	if err != nil {
		return nil, err
	}
	return reg, reg.Register(spec, h)
}

func (m *execMember) run(ctx context.Context) error { return m.ex.Run(ctx) }

func (m *execMember) close() { m.ex.Close() }

// counters reads the executor's own collectors (see executor/metrics.go).
func (m *execMember) counters() counters { return gathered(m.reg, addFamily) }

func addFamily(c *counters, f *dto.MetricFamily) {
	const ns = "toolexec_executor_"
	for _, m := range f.GetMetric() {
		switch f.GetName() {
		case ns + "intents_total":
			addIntents(c, label(m, "decision"), m.GetCounter().GetValue())
		case ns + "transactions_total":
			if label(m, "result") == "committed" {
				c.Txns += m.GetCounter().GetValue()
			} else {
				c.Aborts += m.GetCounter().GetValue()
			}
		case ns + "transaction_inputs":
			c.TxnInputs += m.GetHistogram().GetSampleSum()
		case ns + "state_syncs_total":
			c.Fsyncs += m.GetCounter().GetValue()
		case ns + "calls_total":
			c.Calls += m.GetCounter().GetValue()
		case ns + "txn_duration_seconds":
			c.TxnSec += m.GetHistogram().GetSampleSum()
		case ns + "tick_duration_seconds":
			c.TickSec += m.GetHistogram().GetSampleSum()
		case ns + "restore_events_total":
			c.RestoreEvents += m.GetCounter().GetValue()
		case ns + "restore_duration_seconds":
			c.RestoreSec += m.GetHistogram().GetSampleSum()
		}
	}
}

// addIntents counts decided intents. The decision "record" is a finished
// call (or an expiry) being recorded, not an intent.
func addIntents(c *counters, decision string, v float64) {
	switch decision {
	case "record", "stale":
		return
	case "replay":
		c.Replays += v
	}
	c.Intents += v
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
