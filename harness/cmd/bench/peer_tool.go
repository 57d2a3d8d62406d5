package main

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// effectTool is the HTTP tool that every system of the peer comparison
// calls: our executor through its HTTP adapter (class irreversible, so it
// is never re-called with the same key), Restate's service inside its
// restate.Run step, the PostgreSQL service between its INSERT and its
// UPDATE. It runs in the bench process, so that it outlives the crash of
// any of them, and it counts its effects per key: a call that reaches it
// is an effect, whether or not its caller hears the answer, as with a
// payment whose response is lost. It never deduplicates (a tool that
// honours a key would hide the second effect this scenario counts).
//
// The body is JSON {"key": K, "n": N}; the answer is {"ok": true}.
type effectTool struct {
	ln  net.Listener
	srv *http.Server

	mu struct {
		sync.Mutex
		effects map[string]int
		gate    chan struct{} // nil: answer at once; else block until closed
		blocked int           // calls waiting at the gate now
	}
}

// toolPath is the tool's endpoint.
const toolPath = "/tool"

// maxToolBody bounds a request body: the bench's arguments are tiny.
const maxToolBody = 4 << 10

func startEffectTool(addr string) (*effectTool, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	t := &effectTool{ln: ln}
	t.mu.effects = map[string]int{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+toolPath, t.serve)
	t.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = t.srv.Serve(ln) }()
	return t, nil
}

func (t *effectTool) url() string { return "http://" + t.ln.Addr().String() + toolPath }

func (t *effectTool) close() { _ = t.srv.Close() }

func (t *effectTool) serve(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Key string `json:"key"`
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxToolBody))
	if err == nil {
		err = json.Unmarshal(body, &in)
	}
	if err == nil && in.Key == "" {
		err = errors.New(`no "key"`)
	}
	if err != nil {
		http.Error(w, "bench tool: "+err.Error(), http.StatusBadRequest)
		return
	}
	if gate := t.effect(in.Key); gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done(): // the caller died; the effect stays
		}
		t.mu.Lock()
		t.mu.blocked--
		t.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"ok":true}`)
}

// effect counts one effect of key and returns the gate to wait at, if
// armed.
func (t *effectTool) effect(key string) chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.mu.effects[key]++
	if t.mu.gate != nil {
		t.mu.blocked++
	}
	return t.mu.gate
}

// arm makes every later call block until release.
func (t *effectTool) arm() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.mu.gate = make(chan struct{})
}

// release lets every blocked call answer, and later calls answer at once.
func (t *effectTool) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.gate != nil {
		close(t.mu.gate)
		t.mu.gate = nil
	}
}

func (t *effectTool) blocked() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mu.blocked
}

// effectsOf returns the effects counted for each of keys.
func (t *effectTool) effectsOf(keys []string) []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]int, len(keys))
	for i, k := range keys {
		out[i] = t.mu.effects[k]
	}
	return out
}

// effectHistogram counts keys by their number of effects: {"0": keys
// never executed, "1": once, "2": twice, ...}.
func effectHistogram(effects []int) map[string]int {
	h := map[string]int{}
	for _, n := range effects {
		h[strconv.Itoa(n)]++
	}
	return h
}

// extraEffects is the number of effects beyond the first, over all keys:
// 0 is at most once.
func extraEffects(effects []int) int {
	extra := 0
	for _, n := range effects {
		extra += max(n-1, 0)
	}
	return extra
}
