package integration

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/atmostonce/toolexec/wire"
)

// TestGatewayGetFloodRatio measures what one tenant's flood of GETs does
// to another tenant's GET latency, as a ratio of medians (the other
// tenant's GETs during the flood over alone), on a log whose partitions
// hold GATEWAY_FLOOD_CALLS settled calls; with GATEWAY_FLOOD_RETRY_AFTER
// the flooding loops wait as a 429's Retry-After says. By hand (GATEWAY_FLOOD=1), on a
// real broker; the figures are in the closing note of the change that
// made GET a lookup.
func TestGatewayGetFloodRatio(t *testing.T) {
	if os.Getenv("GATEWAY_FLOOD") == "" {
		t.Skip("by hand: GATEWAY_FLOOD=1 (and KAFKA_BROKERS for a real broker)")
	}
	calls := 5000
	if n, err := strconv.Atoi(os.Getenv("GATEWAY_FLOOD_CALLS")); err == nil {
		calls = n
	}
	e := newEnv(t, 3)
	l := newLedger(t)
	yaml := gatewayTools(l)
	e.startInproc(registry(t, yaml), nil)
	gw := e.startGateway(yaml)
	c := e.client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	slots := make(chan struct{}, 64)
	var fill sync.WaitGroup
	for i := range calls {
		slots <- struct{}{}
		fill.Add(1)
		go func() {
			defer func() { <-slots; fill.Done() }()
			if _, err := c.Call(ctx, wire.Intent{Tenant: "acme", Key: fmt.Sprintf("fill-%d", i), Tool: "t.ok", Args: map[string]any{}}); err != nil {
				t.Error(err)
			}
		}()
	}
	fill.Wait()
	post(t, gw, "acme", "t.ok", "flood-1", `{}`).want(t, 200, "")
	post(t, gw, "globex", "t.ok", "calm-1", `{}`).want(t, 200, "")
	median := func(n int) time.Duration {
		var ds []time.Duration
		for range n {
			start := time.Now()
			r := get(t, gw, "globex", "/v1/tools/t.ok/calls/calm-1")
			if r.status != 200 {
				t.Fatalf("the other tenant's GET: %d %s", r.status, r.raw)
			}
			ds = append(ds, time.Since(start))
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	alone := median(9)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := get(t, gw, "acme", "/v1/tools/t.ok/calls/flood-1")
				mu.Lock()
				codes[r.status]++
				mu.Unlock()
				if s, _ := strconv.Atoi(r.header.Get("Retry-After")); s > 0 && os.Getenv("GATEWAY_FLOOD_RETRY_AFTER") != "" {
					select { // a client that honours Retry-After
					case <-stop:
					case <-time.After(time.Duration(s) * time.Second):
					}
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	during := median(9)
	close(stop)
	wg.Wait()
	t.Logf("%d calls in the log; the other tenant's GET: median %s alone, %s during a flood of 32 GET loops (ratio %.1f); the flood's answers %v",
		calls, alone, during, float64(during)/float64(alone), codes)
}
