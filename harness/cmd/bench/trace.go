package main

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/atmostonce/toolexec/executor"
	"github.com/atmostonce/toolexec/wire"
)

// hopTracer records, in a member process, the moments a call passes on its
// way: the gateway's HTTP handler, the records its Kafka clients produce
// and fetch, the executor's protocol points (executor.Hooks) and every
// request its clients complete. It is the bench's own instrument: kgo
// hooks and executor.Hooks given as options, nothing in the product
// changes. Times are wall clock (UnixNano), so that the events of the
// gateway and of the executor, two processes of one machine, line up.
// The parent reads and clears them with the member command "trace".
//
// Safe for concurrent use. Bounded: past maxTraceEvents the oldest half
// is dropped.
type hopTracer struct {
	topics map[string]string // topic -> the name its records' events get ("intent", "event", "answer")

	mu     sync.Mutex
	events []hopEvent
}

// hopEvent is one moment: what, of which routing key ("" for a request,
// which belongs to no one call), and for a request how long it took.
type hopEvent struct {
	Point string `json:"p"`
	Key   string `json:"k,omitempty"`
	At    int64  `json:"t"`
	DurNs int64  `json:"d,omitempty"`
}

const maxTraceEvents = 200_000

func newHopTracer(topics map[string]string) *hopTracer { return &hopTracer{topics: topics} }

func (t *hopTracer) add(point, key string, at time.Time, dur time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.events) >= maxTraceEvents {
		t.events = append(t.events[:0], t.events[maxTraceEvents/2:]...)
	}
	t.events = append(t.events, hopEvent{Point: point, Key: key, At: at.UnixNano(), DurNs: int64(dur)})
}

// take returns the events recorded so far and forgets them.
func (t *hopTracer) take() []hopEvent {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.events
	t.events = nil
	return out
}

// OnProduceRecordUnbuffered is a record acknowledged by the broker (or
// failed): "<kind>.acked".
func (t *hopTracer) OnProduceRecordUnbuffered(r *kgo.Record, err error) {
	if kind, ok := t.topics[r.Topic]; ok && err == nil {
		t.add(kind+".acked", string(r.Key), time.Now(), 0)
	}
}

// OnFetchRecordBuffered is a record that arrived in a fetch response:
// "<kind>.fetched".
func (t *hopTracer) OnFetchRecordBuffered(r *kgo.Record) {
	if kind, ok := t.topics[r.Topic]; ok {
		t.add(kind+".fetched", string(r.Key), time.Now(), 0)
	}
}

// OnBrokerE2E is a request answered: "req.<name>", with its round trip.
func (t *hopTracer) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if e2e.Err() != nil {
		return
	}
	t.add("req."+kmsg.NameForKey(key), "", time.Now(), e2e.DurationE2E())
}

// at is executor.Hooks.At: "x.<point>" for the routing key.
func (t *hopTracer) at(p executor.Point, rk string) { t.add("x."+string(p), rk, time.Now(), 0) }

// handler wraps the gateway's handler: "gw.recv" when a request comes,
// "gw.sent" when its answer is written, for the routing key its
// Idempotency-Key makes in the bench's tenant.
func (t *hopTracer) handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rk := wire.RoutingKey(benchTenant, strings.Trim(r.Header.Get("Idempotency-Key"), `"`))
		t.add("gw.recv", rk, time.Now(), 0)
		h.ServeHTTP(w, r)
		t.add("gw.sent", rk, time.Now(), 0)
	})
}

// hooks are the kgo options that feed the tracer.
func (t *hopTracer) hooks() []kgo.Opt { return []kgo.Opt{kgo.WithHooks(t)} }
