package sim

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/reconciler"
)

// recon is the run's reconciler, in the simulation's process, restarted
// now and then (a fault) and whenever its Run ends on its own.
type recon struct {
	w   *world
	dir string

	mu     sync.Mutex
	r      *reconciler.Reconciler
	cancel context.CancelFunc
	done   chan error
	exits  int
}

func newRecon(w *world) *recon { return &recon{w: w, dir: filepath.Join(w.dir, "reconciler")} }

// start runs a reconciler unless one runs.
func (rc *recon) start(ctx context.Context) error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.r != nil {
		select {
		case <-rc.done:
			rc.exits++
			rc.r.Close()
			rc.r = nil
		default:
			return nil
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r, err := reconciler.New(sctx, reconciler.Config{
		Brokers: rc.w.brokers, Names: rc.w.names, DataDir: rc.dir, Tools: rc.w.reg, AllowWeakDurability: true,
		Policy:       reconciler.Policy{MaxAttempts: 4, BackoffBase: 500 * time.Millisecond, BackoffCap: 2 * time.Second, CommandTimeout: 10 * time.Second},
		ScanInterval: 500 * time.Millisecond, SessionTimeout: 3 * time.Second,
		// Over the members' recovery bound (their rebalance and transaction
		// timeouts and the broker's abort, docs/DESIGN.md) plus their facts'
		// 5 s delivery backoff, as harness/cmd/chaos sets it: what the members know
		// lands before an escalation, and the settle waits no longer.
		FactGrace:  rc.w.p.DrainTimeout + 5*time.Second + rc.w.p.TxnTimeout + 6*time.Second,
		Logger:     rc.w.log.With("member", "reconciler"),
		ClientOpts: []kgo.Opt{kgo.ClientID("reconciler")},
	})
	if err != nil {
		return err
	}
	rctx, stop := context.WithCancel(context.Background())
	rc.r, rc.cancel, rc.done = r, stop, make(chan error, 1)
	go func() { rc.done <- r.Run(rctx) }()
	return nil
}

// stop ends the reconciler, if one runs.
func (rc *recon) stop() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.r == nil {
		return
	}
	rc.cancel()
	<-rc.done
	rc.r.Close()
	rc.r = nil
}

// restart stops the reconciler and starts another on the same view.
func (rc *recon) restart(ctx context.Context) {
	rc.stop()
	if err := rc.start(ctx); err != nil {
		rc.w.logf("reconciler restart: %v", err)
	}
}

// rows are the running reconciler's keys in doubt; ok false when none
// runs (or it exited).
func (rc *recon) rows() ([]reconciler.Row, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.r == nil {
		return nil, false
	}
	select {
	case err := <-rc.done:
		rc.w.logf("the reconciler exited: %v", err)
		rc.done <- err // start reaps it
		return nil, false
	default:
	}
	return rc.r.Rows(), true
}

// describe says which partitions the reconciler scans, and whether it is
// ready, for a run that did not settle.
func (rc *recon) describe() string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.r == nil {
		return "not running"
	}
	scanned, n := rc.r.Coverage()
	rows := rc.r.Rows()
	var b strings.Builder
	for i, r := range rows {
		if i == 20 {
			break
		}
		fmt.Fprintf(&b, "; %s %s %s attempts %d next %d reason %q", r.RoutingKey(), r.Status, r.State, r.Attempts, r.NextAt, r.Reason)
	}
	m := rc.r.Metrics()
	lag := map[int32]int{}
	for p := int32(0); p < n; p++ {
		lag[p] = int(gaugeValue(m.Lag.WithLabelValues(strconv.Itoa(int(p)))))
	}
	return fmt.Sprintf("ready %v, scans partitions %v of %d, lag %v, owned %d, view gaps %d, %d rows%s", rc.r.Ready(), scanned, n, lag,
		int(gaugeValue(m.Owned)), int(counterValue(m.ViewGaps)), len(rows), b.String())
}
