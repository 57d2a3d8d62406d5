package chaos

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Ledger is the downstream: an HTTP tool server that records every request
// and every effect per Idempotency-Key. One path per tool class:
//
//	/native   native_key: the first request of a key performs the effect and
//	          stores its answer; later requests get the stored answer.
//	/probe    probe: every request performs an effect; /probe/status?key=
//	          answers 200 {"status":"succeeded","result":..}, or for a key
//	          without an effect, with &fence=1 fences it (answers 200
//	          {"status":"fenced"}; a later request of the key is refused,
//	          409, with no effect) and 404 without: the probe contract of
//	          docs/wire-format.md.
//	/comp     compensatable: every request performs an effect.
//	/undo     the compensating tool (native_key): undoes /comp's effect.
//	/irrev    irreversible: every request performs an effect.
//	/read     read_only: no effect, the call is only counted.
//	/approval the tool that needs approval (native_key): as /native.
//
// Drop mode: for about one key in dropEvery (chosen by a hash of the
// downstream key, so a replay chooses the same keys) the first request
// performs the effect and then the connection is hijacked and closed
// without an answer: the crash window seen from the caller.
//
// Slow keys: a call (not a compensation) whose logical key (X-Tool-Key)
// starts with SlowKeyPrefix performs its effect only after slowEffect, longer than the
// tools' timeout: the caller has given up and the key is in doubt while
// the effect is still on its way, as a request stuck in a slow downstream
// is. The hostile waves use them to send an undo that must not overtake
// the effect.
//
// Every effect is counted per downstream key, with the time of its first
// effect; the checks group downstream keys by their logical key (the
// X-Tool-Tenant and X-Tool-Key headers) and by the call each one belongs
// to (the started events of the log).
//
// Safe for concurrent use.
type Ledger struct {
	dropEvery uint32
	latency   atomic.Int64 // the bound of SetLatency, in nanoseconds
	ln        net.Listener
	srv       *http.Server

	mu struct {
		sync.Mutex
		keys    map[string]*keyLedger // by downstream key
		fenced  map[string]bool       // downstream keys a probe fenced
		calls   int
		effects int
		drops   int
		refused int // requests of fenced keys
	}
}

// SlowKeyPrefix starts the logical keys whose effect the ledger delays by
// slowEffect.
const SlowKeyPrefix = "slow-"

// slowEffect is longer than the tools' 1 s timeout and well within their
// 6 s pending_ttl (toolsYAML): the call is in doubt, and its effect lands
// before the reconciler may take the key over.
const slowEffect = 2500 * time.Millisecond

// slow reports whether a request's effect is delayed: a call of a slow
// key. Its compensation is not (an undo that always timed out would only
// be escalated, never tested).
func slow(path, key string) bool {
	return strings.HasPrefix(key, SlowKeyPrefix) && path != pathOf[ToolUndo]
}

// keyLedger is what the downstream knows of one downstream key.
type keyLedger struct {
	Path        string
	Tenant      string
	Key         string
	Calls       int
	Effects     int
	Dropped     int
	FirstEffect time.Time // zero without an effect
	// FirstRequest is when the first request reached the ledger (before
	// a slow key's wait or the latency).
	FirstRequest time.Time
	Result       map[string]any
}

// NewLedger listens on 127.0.0.1 (a free port) and serves until Close.
func NewLedger(dropEvery uint32) (*Ledger, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("chaos: ledger listen: %w", err)
	}
	l := &Ledger{dropEvery: dropEvery, ln: ln}
	l.mu.keys = map[string]*keyLedger{}
	l.mu.fenced = map[string]bool{}
	l.srv = &http.Server{Handler: http.HandlerFunc(l.serve)}
	go func() { _ = l.srv.Serve(ln) }()
	return l, nil
}

// SetLatency makes every request that is not a slow key's take a while
// before its effect: up to max, the same for every request of one
// downstream key (a hash of it), so that calls overlap and queue behind a
// tool's max_in_flight as in a real downstream. 0 (the default) answers
// at once.
func (l *Ledger) SetLatency(max time.Duration) { l.latency.Store(int64(max)) }

func (l *Ledger) latencyOf(dk string) time.Duration {
	max := l.latency.Load()
	if max <= 0 {
		return 0
	}
	return time.Duration(int64(hash32(dk+"/latency")) % max)
}

// Addr is the host:port the ledger listens on.
func (l *Ledger) Addr() string { return l.ln.Addr().String() }

// Close stops serving.
func (l *Ledger) Close() { _ = l.srv.Close() }

func (l *Ledger) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/status") {
		l.status(w, r.URL.Query().Get("key"), r.URL.Query().Get("fence") == "1")
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	dk := r.Header.Get("Idempotency-Key")
	if dk == "" {
		http.Error(w, "no Idempotency-Key", http.StatusBadRequest)
		return
	}
	key := r.Header.Get("X-Tool-Key")
	arrived := time.Now()
	if slow(r.URL.Path, key) {
		time.Sleep(slowEffect) // the caller gives up meanwhile; the effect still comes
	} else if d := l.latencyOf(dk); d > 0 {
		time.Sleep(d)
	}
	res, drop := l.record(r.URL.Path, dk, r.Header.Get("X-Tool-Tenant"), key, body, arrived)
	if res == nil && !drop {
		w.WriteHeader(http.StatusConflict)
		_, _ = io.WriteString(w, `{"error":{"code":"fenced","message":"a probe fenced this key"}}`)
		return
	}
	if drop {
		hijackClose(w)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(res)
}

// record counts the request and performs the effect its class allows. It
// returns the answer and whether to drop the connection instead; no answer
// and no drop: the key is fenced, the request refused without an effect.
func (l *Ledger) record(path, dk, tenant, key string, body []byte, arrived time.Time) (map[string]any, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.fenced[dk] {
		l.mu.refused++
		return nil, false
	}
	k := l.mu.keys[dk]
	if k == nil {
		k = &keyLedger{Path: path, Tenant: tenant, Key: key, FirstRequest: arrived}
		l.mu.keys[dk] = k
	}
	k.Calls++
	l.mu.calls++
	if path == "/native" || path == "/undo" || path == "/approval" {
		if k.Result != nil {
			return k.Result, false // the stored answer: no second effect
		}
	}
	if path == "/read" {
		return map[string]any{"read": true, "n": k.Calls}, false
	}
	k.Effects++
	l.mu.effects++
	if k.FirstEffect.IsZero() {
		k.FirstEffect = time.Now()
	}
	var args any
	_ = json.Unmarshal(body, &args)
	k.Result = map[string]any{"effect": k.Effects, "args": args}
	if k.Calls == 1 && l.dropEvery > 0 && hash32(dk)%l.dropEvery == 0 && !slow(path, key) {
		k.Dropped++
		l.mu.drops++
		return nil, true
	}
	return k.Result, false
}

// status answers a probe. The check and the fence are one step under the
// lock every request takes, so a request either acted before the probe
// (succeeded) or is refused after it (fenced).
func (l *Ledger) status(w http.ResponseWriter, dk string, fence bool) {
	l.mu.Lock()
	k := l.mu.keys[dk]
	var res map[string]any
	if k != nil && k.Effects > 0 {
		res = k.Result
	} else if fence {
		l.mu.fenced[dk] = true
	}
	l.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case res != nil:
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "succeeded", "result": res})
	case fence:
		_, _ = io.WriteString(w, `{"status":"fenced"}`)
	default:
		http.NotFound(w, nil)
	}
}

// hijackClose closes the connection without writing an answer.
func hijackClose(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return
	}
	c, _, err := hj.Hijack()
	if err == nil {
		_ = c.Close()
	}
}

func hash32(s string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return h.Sum32()
}

// LedgerStats is a copy of what the ledger recorded.
type LedgerStats struct {
	Calls, Effects, Drops int
	// Fenced downstream keys (by a probe), and requests Refused for it.
	Fenced, Refused int
	// Keys by downstream key.
	Keys map[string]keyLedger
}

// Stats returns a snapshot.
func (l *Ledger) Stats() LedgerStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := LedgerStats{Calls: l.mu.calls, Effects: l.mu.effects, Drops: l.mu.drops, Fenced: len(l.mu.fenced), Refused: l.mu.refused,
		Keys: make(map[string]keyLedger, len(l.mu.keys))}
	for dk, k := range l.mu.keys {
		s.Keys[dk] = *k
	}
	return s
}
