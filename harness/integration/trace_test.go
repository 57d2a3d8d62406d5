package integration

import (
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// otlpSpan is one span as the receiver decoded it.
type otlpSpan struct {
	service, name             string
	traceID, spanID, parentID string
	attrs                     map[string]string
	links                     []string // trace ids
	kind                      string
}

// otlpReceiver is a real OTLP/HTTP traces endpoint: it decodes every
// export request (protobuf, go.opentelemetry.io/proto/otlp) and keeps the
// spans.
type otlpReceiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []otlpSpan
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *otlpReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var ex coltracepb.ExportTraceServiceRequest
	if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, &ex) != nil {
		http.Error(w, "want an OTLP/HTTP protobuf export to /v1/traces", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range ex.ResourceSpans {
		service := attrMap(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				sp := otlpSpan{service: service, name: s.Name, traceID: hex.EncodeToString(s.TraceId), spanID: hex.EncodeToString(s.SpanId),
					parentID: hex.EncodeToString(s.ParentSpanId), attrs: attrMap(s.Attributes), kind: s.Kind.String()}
				for _, l := range s.Links {
					sp.links = append(sp.links, hex.EncodeToString(l.TraceId))
				}
				r.spans = append(r.spans, sp)
			}
		}
	}
	r.mu.Unlock()
	b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(b)
}

// attrMap shows attribute values as text: strings as they are, integers
// and booleans in Go's format.
func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = strconv.FormatInt(v.IntValue, 10)
		case *commonpb.AnyValue_BoolValue:
			m[kv.Key] = strconv.FormatBool(v.BoolValue)
		}
	}
	return m
}

// find returns the spans of trace traceID named name (a prefix) whose
// attributes include want; it waits for at least one.
func (r *otlpReceiver) find(t *testing.T, traceID, name string, want map[string]string) []otlpSpan {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var out []otlpSpan
		r.mu.Lock()
		for _, s := range r.spans {
			if (traceID == "" || s.traceID == traceID) && strings.HasPrefix(s.name, name) && hasAttrs(s, want) {
				out = append(out, s)
			}
		}
		r.mu.Unlock()
		if len(out) > 0 {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("no span %q %v in trace %s; the receiver has:\n%s", name, want, traceID, r.dump())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// one is find that wants exactly one span.
func (r *otlpReceiver) one(t *testing.T, traceID, name string, want map[string]string) otlpSpan {
	t.Helper()
	spans := r.find(t, traceID, name, want)
	if len(spans) != 1 {
		t.Fatalf("%d spans %q %v in trace %s, want 1:\n%s", len(spans), name, want, traceID, r.dump())
	}
	return spans[0]
}

func hasAttrs(s otlpSpan, want map[string]string) bool {
	for k, v := range want {
		if s.attrs[k] != v {
			return false
		}
	}
	return true
}

func (r *otlpReceiver) dump() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, s := range r.spans {
		fmt.Fprintf(&b, "  %s %s %s/%s parent %s %v links %v\n", s.service, s.name, s.traceID, s.spanID, s.parentID, s.attrs, s.links)
	}
	return b.String()
}

// childOf fails unless s's parent is parent's span.
func childOf(t *testing.T, s, parent otlpSpan) {
	t.Helper()
	if s.traceID != parent.traceID || s.parentID != parent.spanID {
		t.Fatalf("%s (%s) is not a child of %s (%s/%s): parent %s/%s", s.name, s.service, parent.name, parent.traceID, parent.spanID, s.traceID, s.parentID)
	}
}

// A call through the gateway with a known traceparent, traced by every
// process (OTEL_EXPORTER_OTLP_ENDPOINT set): one connected trace from the
// caller's span to the tool's request, with the decision's attributes and
// the GenAI execute_tool span; a replay, a conflict and a key in doubt
// each show their decision; the reconciler's investigation is linked to
// the call's trace. Keys never appear in clear.
func TestTraceEndToEnd(t *testing.T) {
	e := newEnv(t, 2)
	recv := newOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.srv.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	l := newLedger(t)
	yaml := l.toolsYAML(toolEntry("t.lost", "probe", l.url("/hang"), "300ms", "    pending_ttl: 2s\n    probe_url: "+l.url("/status")+"\n"))
	ex := e.startProc(yaml, "")
	gwp := e.startGatewayProc("gw-"+randHex(3), yaml, tenantsFile(t), "--caller-trace=continue")
	gw := "http://" + gwp.http
	e.startReconcilerProc(yaml, t.TempDir())

	const callerTrace, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	key := "trace-" + randHex(3)
	post(t, gw, "acme", "t.ok", key, `{"amount": 5}`, "traceparent", "00-"+callerTrace+"-"+callerSpan+"-01", "tracestate", "vendor=x").want(t, http.StatusOK, "")

	req := recv.one(t, callerTrace, "POST /v1/tools/{tool}/calls", nil)
	if req.parentID != callerSpan || req.service != "toolexec-gateway" || req.kind != "SPAN_KIND_SERVER" || req.attrs["http.response.status_code"] != "200" {
		t.Fatalf("the gateway's request span %+v", req)
	}
	send := recv.one(t, callerTrace, "send "+e.names.Intents, nil)
	childOf(t, send, req)
	decide := recv.one(t, callerTrace, "toolexec.decide", nil)
	childOf(t, decide, send)
	want := map[string]string{"toolexec.tool": "t.ok", "toolexec.tenant": "acme", "toolexec.tool_class": "native_key",
		"toolexec.decision": "new_call", "toolexec.was_replay": "false"}
	if !hasAttrs(decide, want) || decide.service != "toolexec-executor" || len(decide.attrs["toolexec.key_hash"]) != 16 {
		t.Fatalf("the decision span %+v, want %v and a key hash", decide, want)
	}
	childOf(t, recv.one(t, callerTrace, "toolexec.commit_started", nil), decide)
	call := recv.one(t, callerTrace, "execute_tool t.ok", map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t.ok",
		"gen_ai.tool.call.id": decide.attrs["toolexec.intent_id"]})
	childOf(t, call, decide)
	childOf(t, recv.one(t, callerTrace, "toolexec.commit_outcome", map[string]string{"toolexec.status": "succeeded"}), decide)
	childOf(t, recv.one(t, callerTrace, "toolexec.answer", map[string]string{"toolexec.status": "succeeded"}), decide)
	if got := l.headerOf("acme", key, "traceparent"); got != "00-"+callerTrace+"-"+call.spanID+"-01" {
		t.Fatalf("the tool saw traceparent %q, want the execute_tool span's (%s)", got, call.spanID)
	}
	if got := l.headerOf("acme", key, "tracestate"); got != "vendor=x" {
		t.Fatalf("the tool saw tracestate %q, want the caller's", got)
	}

	// The latency histograms' exemplars lead to the trace.
	for _, m := range []struct{ addr, metric string }{{ex.http, "toolexec_executor_call_duration_seconds_bucket"}, {gwp.metrics, "toolexec_gateway_request_duration_seconds_bucket"}} {
		if !hasExemplar(t, m.addr, m.metric, callerTrace) {
			t.Fatalf("%s at %s has no exemplar with trace_id %s", m.metric, m.addr, callerTrace)
		}
	}

	// A replay, a conflict, and a key in doubt, each in a trace of its own.
	decision := func(tool, key, body string, status int, trace string) otlpSpan {
		t.Helper()
		post(t, gw, "acme", tool, key, body, "traceparent", "00-"+trace+"-"+callerSpan+"-01", "Prefer", "wait=2").want(t, status, "")
		return recv.one(t, trace, "toolexec.decide", nil)
	}
	if d := decision("t.ok", key, `{"amount": 5}`, http.StatusOK, strings.Repeat("a", 32)); d.attrs["toolexec.decision"] != "replay" || d.attrs["toolexec.was_replay"] != "true" {
		t.Fatalf("a replay's decision %v", d.attrs)
	}
	if d := decision("t.ok", key, `{"amount": 6}`, http.StatusUnprocessableEntity, strings.Repeat("b", 32)); d.attrs["toolexec.decision"] != "conflict" {
		t.Fatalf("a conflict's decision %v", d.attrs)
	}
	lost := "lost-" + randHex(3)
	first := strings.Repeat("c", 32)
	if d := decision("t.lost", lost, `{}`, http.StatusAccepted, first); d.attrs["toolexec.decision"] != "new_call" {
		t.Fatalf("the lost call's decision %v", d.attrs)
	}
	if c := recv.one(t, first, "execute_tool t.lost", nil); c.attrs["toolexec.status"] != "unknown" {
		t.Fatalf("the lost call's span %+v", c)
	}
	if d := decision("t.lost", lost, `{}`, http.StatusAccepted, strings.Repeat("d", 32)); d.attrs["toolexec.decision"] != "in_doubt" {
		t.Fatalf("a duplicate of a key in doubt: decision %v", d.attrs)
	}
	inv := recv.find(t, "", "toolexec.investigate", map[string]string{"toolexec.tool": "t.lost"})[0]
	if inv.service != "toolexec-reconciler" || inv.traceID == first || len(inv.links) != 1 || inv.links[0] != first {
		t.Fatalf("the investigation span %+v, want a trace of its own linked to %s", inv, first)
	}

	recv.mu.Lock()
	defer recv.mu.Unlock()
	for _, s := range recv.spans {
		for k, v := range s.attrs {
			if strings.Contains(v, key) || strings.Contains(v, lost) {
				t.Fatalf("span %s shows a key in clear: %s=%s", s.name, k, v)
			}
		}
	}
}

// hasExemplar scrapes addr's /metrics in the OpenMetrics format and
// reports whether a sample of metric carries trace id as its exemplar.
func hasExemplar(t *testing.T, addr, metric, traceID string) bool {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, metric) && strings.Contains(line, `# {trace_id="`+traceID+`"}`) {
			return true
		}
	}
	return false
}

// By default a caller is not trusted with the trace (--caller-trace
// link): its request starts a trace of the gateway's own, linked to the
// caller's span, and neither the executor, the tool nor the gateway's
// exemplars carry the caller's trace id; the gateway's /metrics is not on
// the agents' port. Without tracing, the caller's traceparent goes no
// further than the gateway.
func TestGatewayLinksAnUntrustedCallersTrace(t *testing.T) {
	e := newEnv(t, 1)
	recv := newOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.srv.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	l := newLedger(t)
	yaml := l.toolsYAML("")
	e.startProc(yaml, "")
	gwp := e.startGatewayProc("gw-"+randHex(3), yaml, tenantsFile(t))
	gw := "http://" + gwp.http

	const callerTrace, callerSpan = "5bf92f3577b34da6a3ce929d0e0e4736", "10f067aa0ba902b7"
	key := "link-" + randHex(3)
	post(t, gw, "acme", "t.ok", key, `{}`, "traceparent", "00-"+callerTrace+"-"+callerSpan+"-01").want(t, http.StatusOK, "")
	var req otlpSpan
	for _, s := range recv.find(t, "", "POST /v1/tools/{tool}/calls", nil) {
		if slices.Contains(s.links, callerTrace) {
			req = s
		}
	}
	if req.traceID == "" || req.traceID == callerTrace || req.parentID != "" {
		t.Fatalf("the request span %+v: want the root of a new trace linked to the caller's\n%s", req, recv.dump())
	}
	childOf(t, recv.one(t, req.traceID, "send "+e.names.Intents, nil), req)
	if tp := l.headerOf("acme", key, "traceparent"); !strings.HasPrefix(tp, "00-"+req.traceID+"-") {
		t.Fatalf("the tool saw traceparent %q, want one of the gateway's trace %s", tp, req.traceID)
	}
	if hasExemplar(t, gwp.metrics, "toolexec_gateway_request_duration_seconds_bucket", callerTrace) {
		t.Fatal("the gateway's exemplars carry the caller's trace id")
	}
	if r := get(t, gw, "", "/metrics"); r.status != http.StatusNotFound {
		t.Fatalf("/metrics on the agents' port: %d", r.status)
	}

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "") // the in-process gateway: no tracing
	inproc := e.startGateway(yaml)
	key2 := "link-off-" + randHex(3)
	post(t, inproc, "acme", "t.ok", key2, `{}`, "traceparent", "00-"+callerTrace+"-"+callerSpan+"-01").want(t, http.StatusOK, "")
	if tp := l.headerOf("acme", key2, "traceparent"); strings.Contains(tp, callerTrace) {
		t.Fatalf("without tracing the tool saw the caller's traceparent %q", tp)
	}
}
