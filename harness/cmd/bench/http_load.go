package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/atmostonce/toolexec/wire"
)

// httpSystem is something that takes a call over HTTP with an
// Idempotency-Key: our gateway in front of the executor (scenario 7 and
// the peer comparison), Restate's ingress, the PostgreSQL service. The
// load generator below drives every one of them the same way.
type httpSystem interface {
	name() string
	// call sends one call of key with the arguments {"key": key, "n": n}
	// and returns its answer; an error is a transport failure or an
	// answer the system should never give.
	call(ctx context.Context, hc *http.Client, key string, n int) (callAnswer, error)
}

// callAnswer is one HTTP answer, in the wire's status words where they
// apply: "succeeded"; "pending" and "running" (a 202); "in_progress" (a
// 409 of a hand-written dedup table).
type callAnswer struct {
	status string
	replay bool // the system said it was a replay (Restate does not say)
}

// statusInProgress is the 409 a dedup table answers while a key's row is
// pending. Not a wire status: codes.Terminal counts it as an answer.
const statusInProgress = "in_progress"

// proc is one process of a system, named for the report.
type proc struct {
	name string
	pid  int
}

// workload says what call seq of a phase is. group > 1 sends group calls
// with one key at once from group clients (duplicates in flight), and
// the next group of calls when all of them are answered.
type workload struct {
	group int
	key   func(seq int) (key string, n int)
}

// callBody is the JSON arguments of every call: the key, so that the tool
// can count its effects per key whatever header the system forwards, and
// a number.
func callBody(key string, n int) []byte {
	b, _ := json.Marshal(map[string]any{"key": key, "n": n})
	return b
}

// newLoadClient is the load generator's HTTP client: kept-alive
// connections, one per client, and a timeout above any wait a system may
// take (the gateway's Prefer: wait is 10 s by default).
func newLoadClient(clients int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: 0}, Timeout: 3 * time.Minute}
}

// httpClosedLoop runs clients clients for ph.total, each sending its next
// call as soon as its last one is answered (by groups when w.group > 1),
// and records every answer in ph. It returns when the time is up and
// every call sent is answered; a call error ends its client and is kept
// in ph.
func httpClosedLoop(ctx context.Context, ph *phase, sys httpSystem, hc *http.Client, clients int, w workload) {
	g := max(w.group, 1)
	var seqMu sync.Mutex
	next := 0
	take := func() (int, string, int) {
		seqMu.Lock()
		defer seqMu.Unlock()
		first := next
		for i := range g {
			ph.sent(first+i, time.Since(ph.base))
		}
		next += g
		key, n := w.key(first)
		return first, key, n
	}
	var wg sync.WaitGroup
	for range max(clients/g, 1) {
		wg.Go(func() {
			for time.Since(ph.base) < ph.total && ctx.Err() == nil {
				first, key, n := take()
				if !callGroup(ctx, ph, sys, hc, g, first, key, n) {
					return
				}
			}
		})
	}
	wg.Wait()
}

// callGroup sends g calls of key at once, as seqs first..first+g-1, and
// reports whether all of them got an answer.
func callGroup(ctx context.Context, ph *phase, sys httpSystem, hc *http.Client, g, first int, key string, n int) bool {
	var wg sync.WaitGroup
	ok := make([]bool, g)
	for i := range g {
		wg.Go(func() {
			a, err := sys.call(ctx, hc, key, n)
			if err != nil {
				ph.failed(fmt.Errorf("%s: key %s: %w", sys.name(), key, err))
				return
			}
			ph.answer(first+i, time.Now(), &wire.Result{Status: a.status, WasReplay: a.replay})
			ok[i] = true
		})
	}
	wg.Wait()
	for _, o := range ok {
		if !o {
			return false
		}
	}
	return true
}

// httpReply is an answer as the load generator reads it.
type httpReply struct {
	code   int
	header http.Header
	body   []byte // bounded by maxAnswerBody
}

// postJSON POSTs body to url with headers.
func postJSON(ctx context.Context, hc *http.Client, url string, body []byte, headers map[string]string) (httpReply, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return httpReply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return httpReply{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBody))
	return httpReply{code: resp.StatusCode, header: resp.Header, body: data}, err
}

// maxAnswerBody bounds an answer read by the load generator: the bench's
// answers are a few hundred bytes.
const maxAnswerBody = 1 << 20

// gatewaySystem is our gateway in front of an executor.
type gatewaySystem struct {
	base      string // http://host:port
	tool      string
	processes func() []proc
}

func (g *gatewaySystem) name() string { return "toolexec" }

// call POSTs /v1/tools/{tool}/calls: 200 is the answer (its status and
// was_replay), 202 is "running" or "pending" (in doubt).
func (g *gatewaySystem) call(ctx context.Context, hc *http.Client, key string, n int) (callAnswer, error) {
	rep, err := postJSON(ctx, hc, g.base+"/v1/tools/"+g.tool+"/calls", callBody(key, n),
		map[string]string{"Authorization": "Bearer " + benchToken, "Idempotency-Key": key})
	if err != nil {
		return callAnswer{}, err
	}
	return gatewayAnswer(rep.code, rep.body)
}

// gatewayAnswer reads a gateway answer (docs/gateway.md).
func gatewayAnswer(code int, body []byte) (callAnswer, error) {
	var res struct {
		Status    string `json:"status"`
		WasReplay bool   `json:"was_replay"`
	}
	if (code != http.StatusOK && code != http.StatusAccepted) || json.Unmarshal(body, &res) != nil || res.Status == "" {
		return callAnswer{}, fmt.Errorf("gateway answered %d: %.200s", code, body)
	}
	return callAnswer{status: res.Status, replay: res.WasReplay}, nil
}

// uniqueHTTPKeys is a workload of new keys "<tag>-<seq>".
func uniqueHTTPKeys(tag string) workload {
	return workload{group: 1, key: func(seq int) (string, int) { return tag + "-" + strconv.Itoa(seq), seq }}
}
