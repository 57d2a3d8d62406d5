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

// The executors' counters the harness sums over the run: aborted
// transactions (bounded, checkhostile.go), commits the confirmation could
// not confirm, commits the broker aborted after EndTxn reported them
// (each a tick whose calls the confirmation kept from being made), and
// failed ends whose offsets committed while their records aborted (each
// a tick whose inputs were decided again), and the members' facts kept
// and delivered (facts.go).
const (
	abortedMetric              = `toolexec_executor_transactions_total{result="aborted"}`
	unconfirmedMetric          = `toolexec_executor_transactions_total{result="unconfirmed"}`
	abortedAfterCommitMetric   = `toolexec_executor_commits_aborted_after_success_total`
	abortedBehindOffsetsMetric = `toolexec_executor_aborted_behind_committed_offsets_total`
	factsKeptMetric            = `toolexec_executor_facts_kept_total`
	factsDeliveredMetric       = `toolexec_executor_facts_delivered_total`
)

var watchedCounters = []string{abortedMetric, unconfirmedMetric, abortedAfterCommitMetric, abortedBehindOffsetsMetric,
	factsKeptMetric, factsDeliveredMetric}

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

// counterWatch scrapes every executor's /metrics and sums each watched
// counter over every life of every process: a restarted process counts
// from zero again, so each life's last value is kept. Counts of a life's
// last second before a kill -9 are missed, which errs on the lenient side
// only by that second.
type counterWatch struct {
	mu    sync.Mutex
	lives map[*Proc]lifeCount
	ended map[string]float64 // the last values of lives that ended
}

type lifeCount struct {
	life int
	last map[string]float64
}

func (a *counterWatch) run(ctx context.Context, f *Fleet) {
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
			if vs, ok := scrapeCounters(hc, p.HTTP); ok {
				a.observe(p, p.Lives(), vs)
			}
		}
	}
}

func (a *counterWatch) observe(p *Proc, life int, vs map[string]float64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lives == nil {
		a.lives, a.ended = map[*Proc]lifeCount{}, map[string]float64{}
	}
	c := a.lives[p]
	if c.life != life {
		for m, v := range c.last {
			a.ended[m] += v
		}
		c = lifeCount{life: life, last: map[string]float64{}}
	}
	for m, v := range vs {
		c.last[m] = max(c.last[m], v)
	}
	a.lives[p] = c
}

// Total is metric's count seen so far.
func (a *counterWatch) Total(metric string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.ended[metric]
	for _, c := range a.lives {
		n += c.last[metric]
	}
	return int(n)
}

// scrapeCounters reads the watched counters an executor exports (one not
// exported yet is absent: a counter vector shows a label only once used).
func scrapeCounters(hc *http.Client, addr string) (map[string]float64, bool) {
	resp, err := hc.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		for _, m := range watchedCounters {
			if v, ok := strings.CutPrefix(sc.Text(), m+" "); ok {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					out[m] = f
				}
			}
		}
	}
	return out, resp.StatusCode == http.StatusOK
}
