package chaos

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// abortedMetric is the executors' counter of aborted transactions.
const abortedMetric = `toolexec_executor_transactions_total{result="aborted"}`

// Bound on aborted transactions: a member that aborts the same work over
// and over (a record that cannot be produced) shows hundreds a
// minute; a broker bounce, a fenced zombie or a network fault costs a few
// each. The bound is abortsBase plus abortsPerFault for every fault.
const (
	abortsBase     = 20
	abortsPerFault = 5
	scrapeEvery    = time.Second
	scrapeTimeout  = 500 * time.Millisecond
)

// abortWatch scrapes every executor's /metrics and sums the aborted
// transactions over every life of every process: a restarted process
// counts from zero again, so each life's last value is kept. Aborts of a
// life's last second before a kill -9 are missed, which errs on the
// lenient side only by that second.
type abortWatch struct {
	mu    sync.Mutex
	lives map[*Proc]lifeCount
	ended float64 // the last values of lives that ended
}

type lifeCount struct {
	life int
	last float64
}

func (a *abortWatch) run(ctx context.Context, f *Fleet) {
	t := time.NewTicker(scrapeEvery)
	defer t.Stop()
	hc := &http.Client{Timeout: scrapeTimeout}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, p := range f.all() {
			if !p.Running() {
				continue
			}
			if v, ok := scrapeAborted(hc, p.HTTP); ok {
				a.observe(p, p.Lives(), v)
			}
		}
	}
}

func (a *abortWatch) observe(p *Proc, life int, v float64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lives == nil {
		a.lives = map[*Proc]lifeCount{}
	}
	c := a.lives[p]
	if c.life != life {
		a.ended += c.last
		c = lifeCount{life: life}
	}
	c.last = max(c.last, v)
	a.lives[p] = c
}

// Total is the aborted transactions seen so far.
func (a *abortWatch) Total() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.ended
	for _, c := range a.lives {
		n += c.last
	}
	return int(n)
}

func scrapeAborted(hc *http.Client, addr string) (float64, bool) {
	resp, err := hc.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), abortedMetric+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, resp.StatusCode == http.StatusOK // no abort yet: the counter is not exported
}
