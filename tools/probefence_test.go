package tools

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fencingTool is an example tool that implements the probe contract
// (docs/wire-format.md, "The probe contract"): POST / performs an effect
// once per Idempotency-Key unless the key is fenced (then 409, no
// effect); GET /status?key=K answers succeeded when K acted, and when it
// did not: with fence=1, fences K (atomically with the check, under the
// same lock the calls take) and answers {"status":"fenced"}; without,
// 404. The chaos harness's ledger implements the same.
type fencingTool struct {
	mu      sync.Mutex
	effects map[string]int
	fenced  map[string]bool
}

func newFencingTool() *fencingTool {
	return &fencingTool{effects: map[string]int{}, fenced: map[string]bool{}}
}

func (f *fencingTool) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/status") {
		key := r.URL.Query().Get("key")
		switch {
		case f.effects[key] > 0:
			_ = json.NewEncoder(w).Encode(map[string]any{"status": "succeeded", "result": map[string]any{"effects": f.effects[key]}})
		case r.URL.Query().Get("fence") == "1":
			f.fenced[key] = true
			_ = json.NewEncoder(w).Encode(map[string]any{"status": "fenced"})
		default:
			http.NotFound(w, r)
		}
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if f.fenced[key] {
		w.WriteHeader(http.StatusConflict)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": "fenced", "message": "a probe fenced this key"}})
		return
	}
	f.effects[key]++
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true})
}

func (f *fencingTool) effectsOf(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.effects[key]
}

// A probe of a fencing tool that finds no record fences the key: the call
// is settled not_executed, and the request that arrives late is refused
// without an effect. Without probe_fence the probe's 404 is trusted as
// before (the residual risk), and a fencing spec's 404 (a tool that does
// not fence after all) is not.
func TestProbeFence(t *testing.T) {
	tool := newFencingTool()
	srv := httptest.NewServer(tool)
	defer srv.Close()
	spec := testSpec(Probe, srv.URL)
	spec.ProbeFence = true
	h, _ := newTestHTTP(spec, nil)
	req := testRequest()
	req.DownstreamKey = "tk2_late"

	out := h.Probe(context.Background(), req.DownstreamKey)
	checkOutcome(t, out, NotExecuted, CodeProbeFenced, 1)
	late := h.Invoke(context.Background(), req) // the request delayed past the probe
	if late.Status == Succeeded || tool.effectsOf("tk2_late") != 0 {
		t.Fatalf("a fenced key acted: %+v, %d effects", late, tool.effectsOf("tk2_late"))
	}

	req.DownstreamKey = "tk2_early"
	if out := h.Invoke(context.Background(), req); out.Status != Succeeded {
		t.Fatalf("call: %+v", out)
	}
	checkOutcome(t, h.Probe(context.Background(), "tk2_early"), Succeeded, "", 1)

	plain := testSpec(Probe, srv.URL)
	hp, _ := newTestHTTP(plain, nil)
	checkOutcome(t, hp.Probe(context.Background(), "tk2_never"), NotExecuted, CodeProbeNotFound, 1)

	notFencing := httptest.NewServer(http.NotFoundHandler())
	defer notFencing.Close()
	liar := testSpec(Probe, notFencing.URL)
	liar.ProbeFence = true
	hl, _ := newTestHTTP(liar, nil)
	checkOutcome(t, hl.Probe(context.Background(), "tk2_x"), Unknown, CodeProbeUnfenced, 1)
}

func TestProbeFenceConfig(t *testing.T) {
	cfg, err := Parse([]byte("tools:\n  - name: deploy.release\n    class: probe\n    url: http://127.0.0.1:8082/release\n    probe_url: http://127.0.0.1:8082/release/status\n    probe_fence: true\n"))
	if err != nil || !cfg.Tools[0].ProbeFence {
		t.Fatalf("%v %+v", err, cfg)
	}
	if _, err := Parse([]byte("tools:\n  - name: x\n    class: native_key\n    url: http://127.0.0.1:1/x\n    probe_fence: true\n")); err == nil || !strings.Contains(err.Error(), "probe_fence") {
		t.Fatalf("probe_fence on a native_key tool: %v", err)
	}
	if _, err := Parse([]byte("tools:\n  - name: x\n    class: probe\n    url: http://127.0.0.1:1/x\n    probe_url: http://127.0.0.1:1/s\n    probe_fence: yes please\n")); err == nil {
		t.Fatal("probe_fence: yes please accepted")
	}
}
