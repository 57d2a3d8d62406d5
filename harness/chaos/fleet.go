package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"time"
)

// Fleet is the executor processes of the run. Slot i is always the same
// data dir, HTTP address and client id, so a restart is the same member
// coming back; slots beyond Executors are the scale-up ones.
type Fleet struct {
	bin, toolsFile, brokers, prefix, group, dir string
	partitions                                  int
	logf                                        func(string, ...any)
	extraArgs                                   []string // --kafka-config, if any
	// txnIDs, when set, gives slot i the stable --transactional-id
	// txnIDs[i] (a --cluster run aims coordinator kills with it); disks,
	// when set, mounts a disk of its own on each slot's data dir.
	txnIDs []string
	disks  *disks

	mu    sync.Mutex
	slots []*Proc
	want  int           // slots 0..want-1 should run
	busy  map[*Proc]int // slots a fault is working on: the supervisor leaves them alone
	exits []string      // unexpected exits the supervisor saw
	// crashes are the unexpected exits whose log ends in a Go panic or
	// runtime fatal error: each is a violation (executor_crash).
	crashes []string
}

// hold marks p as being worked on by a fault until the returned release.
func (f *Fleet) hold(p *Proc) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.busy == nil {
		f.busy = map[*Proc]int{}
	}
	f.busy[p]++
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.busy[p]--
	}
}

// supervise restarts, until ctx ends, executors that exited on their own
// (not by a fault), as systemd or Kubernetes would, and records each exit.
func (f *Fleet) supervise(ctx context.Context) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	next := map[*Proc]time.Time{} // crash-loop backoff, as a supervisor would
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, p := range f.dead() {
			if time.Now().Before(next[p]) {
				continue
			}
			next[p] = time.Now().Add(2 * time.Second)
			code := p.ExitCode()
			why, crashed := exitReason(p.Log)
			f.logf("executor %s exited on its own (exit %d; see %s); restarting it; its log ends: %s", p.Name, code, p.Log, why)
			exit := fmt.Sprintf("%s exit %d at %s: %s", p.Name, code, time.Now().Format("15:04:05"), why)
			f.mu.Lock()
			f.exits = append(f.exits, exit)
			if crashed {
				f.crashes = append(f.crashes, exit)
			}
			f.mu.Unlock()
			release := f.hold(p)
			f.start(p)
			release()
		}
	}
}

// dead returns the wanted, not busy slots whose process is not running.
func (f *Fleet) dead() []*Proc {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*Proc
	for i := 0; i < f.want && i < len(f.slots); i++ {
		p := f.slots[i]
		if f.busy[p] == 0 && p.Started() && !p.Running() {
			out = append(out, p)
		}
	}
	return out
}

// Crashes returns the unexpected exits that were a panic or a runtime
// fatal error.
func (f *Fleet) Crashes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.crashes...)
}

// Exits returns the unexpected exits seen so far.
func (f *Fleet) Exits() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.exits...)
}

func (f *Fleet) slot(i int) *Proc {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.slots) <= i {
		n := len(f.slots)
		name := fmt.Sprintf("ex%d", n)
		p := &Proc{Name: name, DataDir: filepath.Join(f.dir, name), HTTP: freeAddr(), Log: filepath.Join(f.dir, name+".log"), bin: f.bin}
		p.args = []string{"--brokers", f.brokers, "--data-dir", p.DataDir, "--tools", f.toolsFile, "--http-addr", p.HTTP,
			"--topic-prefix", f.prefix, "--group", f.group, "--partitions", fmt.Sprint(f.partitions),
			"--session-timeout", sessionTimeout.String(), "--rebalance-timeout", "12s", "--drain-timeout", "5s",
			"--transaction-timeout", "10s", "--client-id", name, "--reconciler=false", "--gateway=false"}
		p.args = append(p.args, f.extraArgs...)
		if n < len(f.txnIDs) {
			p.args = append(p.args, "--transactional-id", f.txnIDs[n])
		}
		if f.disks != nil {
			if err := f.disks.mount(p.DataDir); err != nil {
				f.logf("%v", err)
			}
		}
		f.slots = append(f.slots, p)
	}
	return f.slots[i]
}

// all returns every slot.
func (f *Fleet) all() []*Proc {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*Proc(nil), f.slots...)
}

// running returns the slots whose process is alive.
func (f *Fleet) running() []*Proc {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*Proc
	for _, p := range f.slots {
		if p.Running() {
			out = append(out, p)
		}
	}
	return out
}

func (f *Fleet) pick(rng *rand.Rand) *Proc {
	rs := f.running()
	if len(rs) == 0 {
		return nil
	}
	return rs[rng.IntN(len(rs))]
}

// start starts slot i (with env) and waits a little for it to be ready;
// not being ready in time is logged, not fatal (the broker may be down).
func (f *Fleet) start(p *Proc, env ...string) {
	if err := p.Start(env...); err != nil {
		f.logf("start %s: %v", p.Name, err)
		return
	}
	if err := p.WaitReady(30 * time.Second); err != nil {
		f.logf("%v", err)
	}
}

// ensure brings slots 0..n-1 back to life and stops the ones above n.
func (f *Fleet) ensure(n int) {
	f.mu.Lock()
	f.want = n
	f.mu.Unlock()
	for i := 0; i < n; i++ {
		p := f.slot(i)
		release := f.hold(p)
		p.Signal(sigCONT)
		if !p.Running() {
			f.start(p)
		}
		release()
	}
	f.mu.Lock()
	extra := append([]*Proc(nil), f.slots[min(n, len(f.slots)):]...)
	f.mu.Unlock()
	for _, p := range extra {
		release := f.hold(p)
		if p.Running() {
			p.Term(20 * time.Second)
		}
		release()
	}
}

// stopAll stops every executor gracefully.
func (f *Fleet) stopAll() {
	f.mu.Lock()
	f.want = 0
	all := append([]*Proc(nil), f.slots...)
	f.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range all {
		wg.Add(1)
		go func() { defer wg.Done(); p.Term(20 * time.Second) }()
	}
	wg.Wait()
}

// wipe deletes a slot's Pebble view (what its data dir holds: the dir
// may be a disk of its own).
func (f *Fleet) wipe(p *Proc) error { return clearDir(p.DataDir) }

// slotOf is p's slot number.
func (f *Fleet) slotOf(p *Proc) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, s := range f.slots {
		if s == p {
			return i
		}
	}
	return 0
}
