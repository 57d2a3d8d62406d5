package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// crashResult is the crash test on one system.
type crashResult struct {
	calls    int
	killed   string         // "executor" or "service"
	blocked  int            // calls inside the tool when the process was killed
	restartS float64        // from the kill until the restarted process serves
	effects  map[string]int // keys by number of tool effects: {"1": 100}
	answers  map[string]int // each call's last answer, by status ("error" when none)
	settledS float64        // from the release until every client stopped
}

// The crash test's clients. A client whose call failed or was not
// answered with a result retries the same key after the restart, every
// crashRetryEvery, until it is answered succeeded or "pending" (our
// executor's in-doubt answer: parked until the reconciler or an operator
// settles it, which no retry changes), or until crashRetryFor has passed
// since the release. The pending_ttl of bench.http (httpToolSpec) is
// shorter, so that our side's answer turns from "running" to "pending"
// within it.
const (
	crashRetryEvery = time.Second
	crashRetryFor   = 60 * time.Second
	crashBlockWait  = 2 * time.Minute // for every call to be inside the tool
)

// crashTest arms the tool (every call blocks inside it), sends crashCalls
// calls with new keys, waits until all are inside the tool, SIGKILLs the
// process that runs them, restarts it, releases the tool, lets the
// clients retry, and counts the tool's effects per key.
func (b *bench) crashTest(ctx context.Context, s peerSystem, tool *effectTool) (crashResult, error) {
	n := b.cfg.peer.crashCalls
	cr := crashResult{calls: n, killed: s.killTarget()}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = s.name() + ".crash-" + strconv.Itoa(i)
	}
	tool.arm()
	defer tool.release()
	cl := &crashClients{restarted: make(chan struct{}), answers: make([]string, n)}
	hc := newLoadClient(n)
	defer hc.CloseIdleConnections()
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Go(func() { cl.run(ctx, s, hc, i, k) })
	}
	if err := waitBlocked(ctx, tool, n); err != nil {
		close(cl.restarted)
		tool.release()
		wg.Wait()
		return cr, err
	}
	cr.blocked = tool.blocked()
	killed := time.Now()
	s.kill()
	if err := s.restart(ctx); err != nil {
		close(cl.restarted)
		return cr, fmt.Errorf("restart: %w", err)
	}
	cr.restartS = time.Since(killed).Seconds()
	released := time.Now()
	cl.setDeadline(released.Add(crashRetryFor))
	close(cl.restarted)
	tool.release()
	wg.Wait()
	cr.settledS = time.Since(released).Seconds()
	cr.effects = effectHistogram(tool.effectsOf(keys))
	cr.answers = countStrings(cl.answers)
	return cr, nil
}

// waitBlocked waits until n calls are inside the tool.
func waitBlocked(ctx context.Context, tool *effectTool, n int) error {
	deadline := time.Now().Add(crashBlockWait)
	for tool.blocked() < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d calls reached the tool within %s", tool.blocked(), n, crashBlockWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// crashClients are the clients of one crash test.
type crashClients struct {
	restarted chan struct{} // closed once the killed process serves again
	mu        sync.Mutex
	deadline  time.Time
	answers   []string // by client: the last answer's status, or "error: ..."
}

func (c *crashClients) setDeadline(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = t
}

func (c *crashClients) pastDeadline() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().After(c.deadline)
}

// run is one client: the call, then retries after the restart.
func (c *crashClients) run(ctx context.Context, s httpSystem, hc *http.Client, i int, key string) {
	for attempt := 0; ; attempt++ {
		a, err := s.call(ctx, hc, key, i)
		last := a.status
		if err != nil {
			last = "error"
		}
		c.answers[i] = last
		if crashSettled(last) {
			return
		}
		select {
		case <-c.restarted:
		case <-ctx.Done():
			return
		}
		if attempt > 0 && c.pastDeadline() {
			return
		}
		time.Sleep(crashRetryEvery)
	}
}

// crashSettled reports whether no retry can change an answer: a result,
// or our executor's in-doubt "pending".
func crashSettled(status string) bool {
	return status == "succeeded" || status == "failed" || status == "pending"
}

// countStrings counts equal strings.
func countStrings(xs []string) map[string]int {
	m := map[string]int{}
	for _, x := range xs {
		m[x]++
	}
	return m
}
